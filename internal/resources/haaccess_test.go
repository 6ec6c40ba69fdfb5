package resources

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
)

func haCluster(mode v1.HighAvailabilityMode, serviceAccount string) *v1.FlinkCluster {
	fc := &v1.FlinkCluster{}
	fc.Name, fc.Namespace, fc.UID = "sessions", "analytics", "00000000-0000-0000-0000-000000000003"
	fc.Spec = v1.FlinkClusterSpec{
		Version:            "1.19.1",
		ServiceAccountName: serviceAccount,
		JobManager:         v1.JobManagerSpec{Replicas: 1},
		TaskManager:        v1.TaskManagerSpec{Replicas: 2, Slots: 2},
	}
	switch mode {
	case "":
	case v1.HighAvailabilityZookeeper:
		fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: mode, Zookeeper: &v1.ZookeeperSpec{ConnectString: "zk:2181"}}
	default:
		fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: mode}
	}
	return fc
}

// TestHAAccess says, per HA mode and account, whether the operator creates
// the HA ServiceAccount, Role and RoleBinding and which account the pods
// run as.
func TestHAAccess(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mode           v1.HighAvailabilityMode
		serviceAccount string
		wantAccess     bool
		wantPodAccount string
		// wantToken is whether the pods get the account's token: only
		// Kubernetes HA talks to the API server.
		wantToken bool
	}{
		{"no HA", "", "", false, "", false},
		{"HA none", v1.HighAvailabilityNone, "", false, "", false},
		{"zookeeper", v1.HighAvailabilityZookeeper, "", false, "", false},
		{"zookeeper with an account", v1.HighAvailabilityZookeeper, "flink", false, "flink", false},
		{"kubernetes", v1.HighAvailabilityKubernetes, "", true, "sessions-ha", true},
		{"kubernetes with an account", v1.HighAvailabilityKubernetes, "flink", false, "flink", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Build(haCluster(tc.mode, tc.serviceAccount), platformStorage)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.HAAccess != nil; got != tc.wantAccess {
				t.Errorf("HAAccess built = %v, want %v", got, tc.wantAccess)
			}
			for kind, spec := range map[string]*string{
				"JobManager":  d.JobManager.Spec.Template.Spec.ServiceAccountName,
				"TaskManager": d.TaskManager.Spec.Template.Spec.ServiceAccountName,
			} {
				got := ""
				if spec != nil {
					got = *spec
				}
				if got != tc.wantPodAccount {
					t.Errorf("%s pods run as %q, want %q", kind, got, tc.wantPodAccount)
				}
			}
			for kind, mount := range map[string]*bool{
				"JobManager":  d.JobManager.Spec.Template.Spec.AutomountServiceAccountToken,
				"TaskManager": d.TaskManager.Spec.Template.Spec.AutomountServiceAccountToken,
			} {
				// Unset is the API server's default: mounted.
				if got := mount == nil || *mount; got != tc.wantToken {
					t.Errorf("%s pods mount the account token: %v, want %v", kind, got, tc.wantToken)
				}
			}
		})
	}
}

// TestHAAccessGolden compares the ServiceAccount and RoleBinding of a
// cluster with Kubernetes HA with testdata/ha-access.yaml: the ClusterRole
// binding and the controller owner reference. Run with -update after an
// intended change.
func TestHAAccessGolden(t *testing.T) {
	d, err := Build(haCluster(v1.HighAvailabilityKubernetes, ""), platformStorage)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, obj := range []any{d.HAAccess.ServiceAccount, d.HAAccess.RoleBinding} {
		raw, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(raw)
	}
	path := filepath.Join("testdata", "ha-access.yaml")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/resources -update to create it)", err)
	}
	if !bytes.Equal(want, out.Bytes()) {
		t.Errorf("%s differs from the rendered objects; run with -update if the change is intended.\n%s", path, diffLines(string(want), out.String()))
	}
}

// TestHAAccessHashes: an upgrade leaves the HA objects alone (no write),
// while the objects of two clusters differ.
func TestHAAccessHashes(t *testing.T) {
	build := func(mut func(*v1.FlinkCluster)) *HAAccess {
		fc := haCluster(v1.HighAvailabilityKubernetes, "")
		mut(fc)
		d, err := Build(fc, platformStorage)
		if err != nil {
			t.Fatal(err)
		}
		return d.HAAccess
	}
	hashes := func(a *HAAccess) [2]string {
		return [2]string{a.ServiceAccount.Annotations[AnnotationSpecHash], a.RoleBinding.Annotations[AnnotationSpecHash]}
	}
	orig := hashes(build(func(*v1.FlinkCluster) {}))
	if upgraded := hashes(build(func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.20.0" })); upgraded != orig {
		t.Errorf("an upgrade changed the HA objects' hashes: %v, was %v", upgraded, orig)
	}
	other := hashes(build(func(fc *v1.FlinkCluster) { fc.Name = "other" }))
	for i := range orig {
		if other[i] == orig[i] {
			t.Errorf("object %d has the same hash in two clusters", i)
		}
	}
}

package resources

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

var update = flag.Bool("update", false, "rewrite golden files")

// loadExample reads a FlinkCluster from the repository's examples/.
func loadExample(t *testing.T, name string) *v1.FlinkCluster {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(raw, fc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fc.Namespace = "analytics"
	fc.UID = "00000000-0000-0000-0000-000000000001"
	return fc
}

// platformStorage is a platform team's default shared storage.
var platformStorage = Platform{Storage: &v1.StorageSpec{URI: "s3://platform-state/flink/"}}

type goldenCase struct {
	fc       *v1.FlinkCluster
	platform Platform
}

func goldenCases(t *testing.T) map[string]goldenCase {
	ref := loadExample(t, "realtime-warehouse.yaml")

	minimal := &v1.FlinkCluster{}
	minimal.Name, minimal.Namespace, minimal.UID = "sessions", "default", "00000000-0000-0000-0000-000000000002"
	minimal.Spec = v1.FlinkClusterSpec{
		Version:     "1.19.1",
		JobManager:  v1.JobManagerSpec{Replicas: 1},
		TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
	}

	full := ref.DeepCopy()
	full.Name = "payments"
	full.Spec.Version = "1.20.0"
	full.Spec.Image = "registry.example.com/flink:1.20.0-java17"
	full.Spec.ImagePullPolicy = "IfNotPresent"
	full.Spec.ServiceAccountName = "flink"
	full.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes, StorageDir: "s3://flink/ha"}
	full.Spec.Checkpointing.CheckpointsDir = "s3://flink/checkpoints"
	full.Spec.Checkpointing.SavepointsDir = "s3://flink/savepoints"
	full.Spec.TaskManager.Storage = &v1.TaskManagerStorage{Size: resource.MustParse("50Gi"), StorageClassName: ptr.To("fast")}
	full.Spec.Kafka = &v1.KafkaSpec{
		Bootstrap: v1.KafkaBootstrap{Servers: "kafka-0:9093,kafka-1:9093"},
		TLS:       &v1.KafkaTLS{Enabled: true, SecretRef: &v1.SecretReference{Name: "kafka-tls"}},
		SASL:      &v1.KafkaSASL{SecretRef: v1.SecretReference{Name: "kafka-sasl"}},
	}
	full.Spec.FlinkConfiguration = v1.FlinkConfiguration{
		"state.backend.type":    "rocksdb",
		"pipeline.name":         "payments: enrich & route",
		"restart-strategy.type": "fixed-delay",
	}

	// A job on a shared volume: the claim is mounted, the directories are
	// under it, and memory comes from a request alone.
	claim := minimal.DeepCopy()
	claim.Name = "orders"
	claim.Spec.Version = "2.0.1"
	claim.Spec.Storage = &v1.StorageSpec{ClaimName: "flink-state"}
	claim.Spec.Checkpointing = &v1.CheckpointingSpec{Interval: "1m", Retention: 2}
	claim.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	claim.Spec.Job = &v1.JobSpec{JarURI: "https://artifacts/orders.jar", UpgradeMode: v1.UpgradeLastState}
	claim.Spec.TaskManager.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}

	return map[string]goldenCase{
		"templated":          {templated(t), platformStorage},
		"realtime-warehouse": {ref, platformStorage},
		"minimal-1.19":       {minimal, Platform{}},
		"full-1.20":          {full, Platform{}},
		"claim-2.0":          {claim, platformStorage},
	}
}

// TestBuildGolden renders every child of each case and compares it with
// testdata/<case>.yaml. Run with -update after an intended change.
func TestBuildGolden(t *testing.T) {
	for name, tc := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			d, err := Build(tc.fc, tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for _, obj := range []any{d.ConfigMap, d.JobManager, d.JobManagerService, d.TaskManager, d.TaskManagerBudget} {
				raw, err := yaml.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString("---\n")
				out.Write(raw)
			}
			checkGolden(t, filepath.Join("testdata", name+".yaml"), out.Bytes())
			// The Deployment an older cluster's JobManager still is must be
			// built as before, byte for byte (its spec hash unchanged), or
			// the operator's upgrade would roll it: these files were cut
			// from the goldens of the last Deployment release (3d17263) and
			// are not to be updated.
			raw, err := yaml.Marshal(d.LegacyJobManager())
			if err != nil {
				t.Fatal(err)
			}
			legacy := filepath.Join("testdata", name+"-legacy-jobmanager.yaml")
			if want, err := os.ReadFile(legacy); err != nil || !bytes.Equal(want, append([]byte("---\n"), raw...)) {
				t.Errorf("the legacy JobManager Deployment differs from %s (%v):\n%s", legacy, err, diffLines(string(want), "---\n"+string(raw)))
			}
		})
	}
}

// checkGolden compares got with the golden file at path, or rewrites the
// file under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/resources -run Golden -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from what was rendered; run go test ./internal/resources -run Golden -update if the change is intended.\n%s", path, diffLines(string(want), string(got)))
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

func TestRenderConfigKeys(t *testing.T) {
	ref := loadExample(t, "realtime-warehouse.yaml")
	cfg, err := RenderConfig(ref, platformStorage)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"execution.checkpointing.interval":   "30s",
		"state.checkpoints.num-retained":     "3",
		"taskmanager.numberOfTaskSlots":      "4",
		"high-availability.type":             "zookeeper",
		"high-availability.zookeeper.quorum": "zookeeper:2181",
		"jobmanager.memory.process.size":     "8192m",
		"taskmanager.memory.process.size":    "32768m",
		"jobmanager.rpc.address":             "realtime-warehouse-jobmanager",
		"high-availability.storageDir":       "s3://platform-state/flink/analytics/realtime-warehouse/ha",
		"state.checkpoints.dir":              "s3://platform-state/flink/analytics/realtime-warehouse/checkpoints",
		"state.savepoints.dir":               "s3://platform-state/flink/analytics/realtime-warehouse/savepoints",
	} {
		if got := cfg.Settings[key]; got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if cfg.FileName != "flink-conf.yaml" {
		t.Errorf("file = %s, want flink-conf.yaml for 1.17", cfg.FileName)
	}
}

func TestHashes(t *testing.T) {
	base := loadExample(t, "realtime-warehouse.yaml")
	build := func(mut func(*v1.FlinkCluster)) *Desired {
		fc := base.DeepCopy()
		mut(fc)
		d, err := Build(fc, platformStorage)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	orig := build(func(*v1.FlinkCluster) {})
	scaled := build(func(fc *v1.FlinkCluster) { fc.Spec.TaskManager.Replicas = 15 })
	reconf := build(func(fc *v1.FlinkCluster) { fc.Spec.Checkpointing.Interval = "1m" })
	upgraded := build(func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })

	tmplHash := func(d *Desired) string { return d.TaskManager.Spec.Template.Annotations[AnnotationConfigHash] }
	specHash := func(d *Desired) string { return d.TaskManager.Annotations[AnnotationSpecHash] }

	if tmplHash(scaled) != tmplHash(orig) {
		t.Error("scaling changed the pod template's config hash: it would roll the TaskManagers")
	}
	if specHash(scaled) == specHash(orig) {
		t.Error("scaling did not change the StatefulSet's spec hash: the new replica count would never be applied")
	}
	if tmplHash(reconf) == tmplHash(orig) {
		t.Error("a configuration change did not change the config hash: the pods would not roll")
	}
	if *upgraded.TaskManager.Spec.Template.Spec.Containers[0].Image != "flink:1.18.1" {
		t.Errorf("upgrade image = %s, want flink:1.18.1", *upgraded.TaskManager.Spec.Template.Spec.Containers[0].Image)
	}
	if orig.ConfigMap.Annotations[AnnotationSpecHash] != scaled.ConfigMap.Annotations[AnnotationSpecHash] {
		t.Error("scaling changed the ConfigMap")
	}
}

// TestCheckpointRetention: every job's checkpoints survive its end
// (RETAIN_ON_CANCELLATION), so the operator's restores from them exist; the
// key is the operator's, so an older object's own value is overwritten.
func TestCheckpointRetention(t *testing.T) {
	const key = "execution.checkpointing.externalized-checkpoint-retention"
	for _, tc := range []struct {
		name string
		job  *v1.JobSpec
		user string
		want string
	}{
		{"session cluster: Flink's default", nil, "", ""},
		{"a job", &v1.JobSpec{UpgradeMode: v1.UpgradeSavepoint}, "", "RETAIN_ON_CANCELLATION"},
		{"a stateless job", &v1.JobSpec{UpgradeMode: v1.UpgradeStateless}, "", "RETAIN_ON_CANCELLATION"},
		{"an older object's own value", &v1.JobSpec{UpgradeMode: v1.UpgradeSavepoint}, "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"},
		{"last-state", &v1.JobSpec{UpgradeMode: v1.UpgradeLastState}, "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"},
	} {
		fc := loadExample(t, "realtime-warehouse.yaml")
		fc.Spec.Job = tc.job
		fc.Spec.FlinkConfiguration = nil
		if tc.user != "" {
			fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{key: v1.ConfigValue(tc.user)}
		}
		cfg, err := RenderConfig(fc, platformStorage)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Settings[key]; got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.name, key, got, tc.want)
		}
	}
}

// TestRestoreKeysOfOlderObjectsAreDropped: an object stored before
// admission refused them keeps its restore path, claim mode and
// ignore-unclaimed-state in spec.flinkConfiguration; none is rendered, so
// a configured path cannot restore a submission that names none, nor a
// configured CLAIM hand the restored savepoint to Flink.
func TestRestoreKeysOfOlderObjectsAreDropped(t *testing.T) {
	for _, version := range []string{"1.19.1", "2.0.1"} {
		fc := loadExample(t, "realtime-warehouse.yaml")
		fc.Spec.Version = version
		fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": "orders"}
		for _, k := range flink.RestoreKeys {
			if k != flink.LastStateRetentionKey {
				fc.Spec.FlinkConfiguration[k] = "CLAIM"
			}
		}
		cfg, err := RenderConfig(fc, platformStorage)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range flink.RestoreKeys {
			if v, ok := cfg.Settings[k]; ok && k != flink.LastStateRetentionKey {
				t.Errorf("%s: %s rendered as %q", version, k, v)
			}
		}
		if cfg.Settings["pipeline.name"] != "orders" {
			t.Errorf("%s: the user's other settings are lost: %v", version, cfg.Settings)
		}
	}
}

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/platform/platformtest"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/testwait"
)

// parallel is the e2e package's parallel(t) for this external test
// package, which cannot see it: skipped in the alone group (-e2e.group).
func parallel(t *testing.T) {
	t.Helper()
	if f := flag.Lookup("e2e.group"); f != nil && f.Value.String() == "alone" {
		t.Skip("runs in the parallel group (-e2e.group)")
	}
	t.Parallel()
}

// TestChartInstallRunsOperator installs the Helm chart into the local
// platform, then runs the operator binary with exactly the chart's
// permissions (its kubeconfig impersonates the chart's ServiceAccount; leader
// election in the release namespace) and shows it takes the reference
// example and a cluster with Kubernetes HA to Available, moves the latter to
// an account of the user's, and deletes both again, without one request the
// API server forbids (read from the API server's audit log). It
// starts a platform of its own: the shared one runs an operator with admin
// rights, which would reconcile the example whatever the chart grants.
func TestChartInstallRunsOperator(t *testing.T) {
	parallel(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(bin, "helm")); err != nil {
		t.Fatal("bin/helm is missing: run 'make tools'")
	}
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	p := platformtest.StartWith(t, platform.Options{BinDir: bin, AuditLogPath: auditLog, AuditPolicy: auditRequests,
		AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"}})

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	admin, err := client.New(p.RESTConfig(), client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	// The release namespace enforces the restricted Pod Security Standard,
	// so the operator's pod is admitted only if the chart's is compliant.
	const release, ns = "datapilot", "datapilot-system"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}); err != nil {
		t.Fatal(err)
	}
	// kwok runs no images: the chart's pod turns Ready without running the
	// operator, which this test runs as a local process instead.
	helm := exec.CommandContext(ctx, filepath.Join(bin, "helm"), "install", release, filepath.Join(root, "charts", "datapilot"),
		"--kubeconfig", p.KubeconfigPath(), "--namespace", ns, "--wait", "--timeout", "2m",
		"--set", "stateStorage.uri="+platform.StateStorageURI)
	helm.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out bytes.Buffer
	helm.Stdout, helm.Stderr = &out, &out
	if err := helm.Run(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out.String())
	}
	dep := &appsv1.Deployment{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Status.ReadyReplicas != 1 {
		t.Fatalf("The chart's Deployment has %d ready replicas after helm install --wait, want 1", dep.Status.ReadyReplicas)
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName
	// The platform's storage, as the chart hands it to the operator.
	var storage string
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "STATE_STORAGE_URI" {
			storage = e.Value
		}
	}
	if storage != platform.StateStorageURI {
		t.Fatalf("The chart sets STATE_STORAGE_URI=%q, want the value given, %q", storage, platform.StateStorageURI)
	}

	// The operator binary, as the chart's ServiceAccount: its kubeconfig
	// impersonates it, and the API server's audit log records every answer.
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
	kubeconfig := impersonatingKubeconfig(t, p.KubeconfigPath(), user)
	var port int
	var metricsAddr string
	// The conversion webhook as the chart runs it, but reached by URL: the
	// operator patches the CRD's caBundle with the chart's permissions.
	opLog := filepath.Join(t.TempDir(), "operator.log")
	// startOperator starts it, with env added to its environment, and
	// waits until it is ready; its ports are picked at each attempt.
	startOperator := func(env ...string) *testenv.Operator {
		op, err := testenv.StartOperator(testenv.OperatorStart{Bin: filepath.Join(bin, "datapilot"), Log: opLog, Env: env,
			Timeout: time.Minute, Args: func() ([]string, error) {
				var err error
				if port, err = testenv.FreePort(); err != nil {
					return nil, err
				}
				metricsPort, err := testenv.FreePort()
				if err != nil {
					return nil, err
				}
				metricsAddr = fmt.Sprintf("127.0.0.1:%d", metricsPort)
				return []string{"--kubeconfig", kubeconfig,
					"--leader-elect=true", "--leader-election-namespace", ns,
					"--metrics-bind-address=" + metricsAddr, "--state-storage-uri=" + storage,
					"--webhook-cert-mode=self-signed", "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port),
					fmt.Sprintf("--webhook-url=https://127.0.0.1:%d/convert", port)}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	op := startOperator()
	t.Cleanup(func() {
		op.Stop()
		if t.Failed() {
			if raw, err := os.ReadFile(opLog); err == nil {
				t.Logf("Operator log:\n%s", raw)
			}
		}
	})

	// The API server converts v1alpha1 through the webhook, whose CA the
	// operator injected as the chart's ServiceAccount.
	testwait.Until(t, time.Minute, func() error {
		return admin.Create(ctx, &v1alpha1.FlinkCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conversion-probe"},
			Spec: v1alpha1.FlinkClusterSpec{Version: "1.17.1", TaskManager: v1alpha1.TaskManagerSpec{Replicas: 1},
				Kafka: &v1alpha1.KafkaSpec{BootstrapServers: "kafka:9092"}},
		}, client.DryRunAll)
	})

	// The reference example, in a namespace of its own.
	raw, err := os.ReadFile(filepath.Join(root, "examples", "realtime-warehouse.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(raw, fc); err != nil {
		t.Fatal(err)
	}
	fc.Namespace = "analytics"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fc.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, fc); err != nil {
		t.Fatalf("Create the reference example: %v", err)
	}
	// With Kubernetes HA the operator creates the pods' ServiceAccount and
	// a RoleBinding to the chart's Flink HA ClusterRole: RBAC lets it
	// through only because the chart grants bind on that ClusterRole.
	ha := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: "ha"},
		Spec: v1.FlinkClusterSpec{Version: "1.19.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 1},
			HighAvailability: &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}},
	}
	if err := admin.Create(ctx, ha); err != nil {
		t.Fatalf("Create the cluster with Kubernetes HA: %v", err)
	}
	// A job cluster's TaskManagers' budget comes once a TaskManager is
	// ready, Flink or not (no Flink runs here): the chart's rights to
	// create and apply one are used.
	job := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: "budget"},
		Spec: v1.FlinkClusterSpec{Version: "1.18.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
			Checkpointing: &v1.CheckpointingSpec{Interval: "10s"}, Job: &v1.JobSpec{JarURI: "https://jars.example.com/wordcount.jar"}},
	}
	if err := admin.Create(ctx, job); err != nil {
		t.Fatalf("Create the job cluster: %v", err)
	}
	key := client.ObjectKeyFromObject(fc)
	testwait.Until(t, 3*time.Minute, func() error {
		if err := admin.Get(ctx, key, fc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAvailable)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != fc.Generation {
			return fmt.Errorf("not Available: phase %q, conditions %+v", fc.Status.Phase, fc.Status.Conditions)
		}
		return nil
	})
	t.Logf("%s is Available: JobManagers %s, TaskManagers %s, phase %s", key, fc.Status.JobManager.Ready, fc.Status.TaskManager.Ready, fc.Status.Phase)
	testwait.Until(t, time.Minute, func() error {
		return admin.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name + "-taskmanager"}, &policyv1.PodDisruptionBudget{})
	})
	checkKubernetesHA(ctx, t, admin, ha)
	checkMetricsAuth(ctx, t, p.RESTConfig(), admin, ns, release, metricsAddr)

	// The operator led through the chart's namespaced Role.
	lease := &coordinationv1.Lease{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "datapilot.data.example.com"}, lease); err != nil {
		t.Errorf("No leader-election lease in %s: %v", ns, err)
	}
	// Its lease requests went through the chart's FlowSchema into the
	// leader-election priority level, not behind its own writes in
	// service-accounts (the API server's APF metrics).
	checkLeaseFlowSchema(ctx, t, p.RESTConfig(), release+"-leader-election")

	// A restarted operator, with a new CA, adds it to the CRD's and the
	// validating webhook's bundles; this one on an API server client
	// without streaming lists (client-go before 1.35, or a server that
	// refuses them), so its caches list, then watch.
	// The running operator may have been restarted a moment ago: its CA
	// must be in both bundles before it stops, or the next one finds no
	// configuration and creates it with its CA alone (and the grant to
	// patch it goes unused: seen in a full run for the mutating one).
	// Both configurations (validating, and mutating: the finalizer).
	bundles := func() (validating, mutating []byte, err error) {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := admin.Get(ctx, client.ObjectKey{Name: operator.ValidatingWebhookName}, vwc); err != nil {
			return nil, nil, err
		}
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := admin.Get(ctx, client.ObjectKey{Name: operator.MutatingWebhookName}, mwc); err != nil {
			return nil, nil, err
		}
		if len(vwc.Webhooks) == 0 || len(mwc.Webhooks) == 0 {
			return nil, nil, fmt.Errorf("a webhook configuration without its webhook")
		}
		return vwc.Webhooks[0].ClientConfig.CABundle, mwc.Webhooks[0].ClientConfig.CABundle, nil
	}
	testwait.Until(t, time.Minute, func() error {
		v, m, err := bundles()
		if err != nil {
			return err
		}
		if !bytes.Contains(v, []byte("BEGIN CERTIFICATE")) || !bytes.Contains(m, []byte("BEGIN CERTIFICATE")) {
			return fmt.Errorf("a webhook trusts no CA yet")
		}
		return nil
	})
	op.Stop()
	op = startOperator("KUBE_FEATURE_WatchListClient=false")
	testwait.Until(t, time.Minute, func() error {
		v, m, err := bundles()
		if err != nil {
			return err
		}
		if nv, nm := bytes.Count(v, []byte("BEGIN CERTIFICATE")), bytes.Count(m, []byte("BEGIN CERTIFICATE")); nv != 2 || nm != 2 {
			return fmt.Errorf("the validating webhook trusts %d CAs, the mutating %d, want both operators'", nv, nm)
		}
		return nil
	})

	// What the finalizer cleans up, as Flink and the StatefulSet
	// controller would leave it (no Flink runs here, and kwok binds no
	// volume): the HA cluster's leader ConfigMap, labelled as Flink's
	// KubernetesHaServices label theirs, and a TaskManager's claim,
	// labelled with the StatefulSet's selector as its volumeClaimTemplates'
	// claims are.
	leader := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ha.Namespace, Name: resources.HAIdentity(ha).KubernetesClusterID + "-cluster-config-map",
		Labels: resources.HAConfigMapLabels(resources.HAIdentity(ha))}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ha.Namespace, Name: "data-" + resources.TaskManagerName(ha) + "-0",
		Labels: resources.SelectorLabels(ha.Name, resources.ComponentTaskManager)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	for _, obj := range []client.Object{leader, claim} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// Deletion runs the finalizer's cleanup with the same permissions.
	for _, c := range []*v1.FlinkCluster{fc, ha} {
		if err := admin.Delete(ctx, c); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, time.Minute, func() error {
			err := admin.Get(ctx, client.ObjectKeyFromObject(c), &v1.FlinkCluster{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s still exists (%v)", client.ObjectKeyFromObject(c), err)
		})
	}

	if err := admin.Get(ctx, client.ObjectKeyFromObject(leader), leader); !apierrors.IsNotFound(err) {
		t.Errorf("Flink's HA ConfigMap outlived its cluster (%v)", err)
	}
	// The claim protection finalizer may hold the claim a moment longer.
	if err := admin.Get(ctx, client.ObjectKeyFromObject(claim), claim); !apierrors.IsNotFound(err) && claim.DeletionTimestamp == nil {
		t.Errorf("The TaskManager's claim outlived its cluster (%v)", err)
	}

	if f := forbiddenRequests(t, auditLog, user); len(f) > 0 {
		t.Errorf("The API server forbade the operator %d requests:\n%s", len(f), strings.Join(f, "\n"))
	}
	if n := countRequests(t, auditLog, user); n == 0 {
		t.Errorf("The audit log holds no request of %s: the check above proves nothing", user)
	}
	checkLeastPrivilege(ctx, t, admin, auditLog, ns, sa, map[string]string{
		// The autopilot lists nodes when TaskManagers it would add might
		// not fit; that needs a job's metrics from Flink, and this
		// platform runs no Flink REST simulator (the autopilot's e2e tests
		// run the path, on the shared platform).
		"list nodes.": "autopilot capacity",
		// client-go's events recorder patches an event's series when the
		// same event repeats for the same version of the object; which do
		// repeat is timing (TestUnreachableJarIsReportedWithoutWriteLoop's
		// retries do).
		"patch events.events.k8s.io": "event series",
		// SQL jobs (the Secrets their secretRefs name, the NetworkPolicy
		// in front of the SQL Gateway): the chart's platform runs no
		// simulator, so no SQL job plans there; TestSQLJobLifecycle runs
		// the path on the shared platform.
		"get secrets.":                             "SQL secretRefs",
		"list networkpolicies.networking.k8s.io":   "SQL gateway policy",
		"watch networkpolicies.networking.k8s.io":  "SQL gateway policy",
		"create networkpolicies.networking.k8s.io": "SQL gateway policy",
		"patch networkpolicies.networking.k8s.io":  "SQL gateway policy",
		// An older cluster's JobManager Deployment is patched, and read
		// around the cache for its created fields, until it is replaced
		// by a StatefulSet; the chart's platform creates none
		// (TestLegacyJobManagerDeployment runs the path).
		"patch deployments.apps": "older clusters' JobManager Deployments",
		"get deployments.apps":   "older clusters' JobManager Deployments",
		// A budget is read around the cache and patched at its first
		// change after its create; the one cluster with a budget here, a
		// job cluster, is not changed (its version would wait for a
		// savepoint no Flink here takes), and the patch release below
		// changes a session cluster running nothing, which has none.
		// TestUpgradeTakesSavepointAndRestores runs the path (a job
		// cluster's version relabels its budget).
		"get poddisruptionbudgets.policy":   "a budget's first change",
		"patch poddisruptionbudgets.policy": "a budget's first change",
	})
}

// checkKubernetesHA follows a cluster with Kubernetes HA under the chart's
// permissions: Available with pods running as the operator's account, then,
// named an account of the user's that may do nothing, without the
// operator's account and with the missing rights reported.
func checkKubernetesHA(ctx context.Context, t *testing.T, admin client.Client, ha *v1.FlinkCluster) {
	t.Helper()
	key := client.ObjectKeyFromObject(ha)
	testwait.Until(t, 2*time.Minute, func() error {
		if err := admin.Get(ctx, key, ha); err != nil {
			return err
		}
		for _, typ := range []string{v1.ConditionAvailable, v1.ConditionHighAvailabilityPermissions} {
			if c := meta.FindStatusCondition(ha.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != ha.Generation {
				return fmt.Errorf("%s is not %s: %+v", key, typ, c)
			}
		}
		return nil
	})
	pods := &corev1.PodList{}
	if err := admin.List(ctx, pods, client.InNamespace(ha.Namespace), client.MatchingLabels{resources.LabelInstance: ha.Name}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Errorf("%s has no pods", key)
	}
	for _, p := range pods.Items {
		if p.Spec.ServiceAccountName != resources.HighAvailabilityName(ha) {
			t.Errorf("Pod %s runs as %q, want %s", p.Name, p.Spec.ServiceAccountName, resources.HighAvailabilityName(ha))
		}
	}

	if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ha.Namespace, Name: "flink"}}); err != nil {
		t.Fatal(err)
	}
	base := ha.DeepCopy()
	ha.Spec.ServiceAccountName = "flink"
	// A patch release too: every child's version label changes, so each
	// kind the operator created by POST has its created fields taken over
	// (a get of the object) and is patched under the chart's rights.
	ha.Spec.Version = "1.19.2"
	if err := admin.Patch(ctx, ha, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, func() error {
		if err := admin.Get(ctx, key, ha); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ha.Status.Conditions, v1.ConditionHighAvailabilityPermissions)
		if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != ha.Generation || !strings.Contains(c.Message, "may not get, list, watch") {
			return fmt.Errorf("%s: HighAvailabilityPermissions = %+v, want False naming the missing verbs", key, c)
		}
		for _, obj := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}, &corev1.ServiceAccount{}} {
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ha.Namespace, Name: resources.HighAvailabilityName(ha)}, obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the operator's %T is still there (%v)", obj, err)
			}
		}
		return nil
	})
}

// auditAll records every request at Metadata level, so 403s are visible.
var auditAll = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`)

type auditEntry struct {
	Verb             string                     `json:"verb"`
	RequestURI       string                     `json:"requestURI"`
	User             struct{ Username string }  `json:"user"`
	ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
	ResponseStatus   *struct{ Code int }        `json:"responseStatus"`
}

func auditEntries(t *testing.T, path, user string) []auditEntry {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditEntry
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var e auditEntry
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if e.User.Username == user || e.ImpersonatedUser != nil && e.ImpersonatedUser.Username == user {
			out = append(out, e)
		}
	}
	return out
}

func forbiddenRequests(t *testing.T, path, user string) []string {
	var out []string
	for _, e := range auditEntries(t, path, user) {
		if e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusForbidden {
			out = append(out, e.Verb+" "+e.RequestURI)
		}
	}
	return out
}

func countRequests(t *testing.T, path, user string) int { return len(auditEntries(t, path, user)) }

// impersonatingKubeconfig copies the admin kubeconfig with every user
// acting as user.
func impersonatingKubeconfig(t *testing.T, admin, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkLeaseFlowSchema asserts that the API server dispatched requests
// through FlowSchema name into the leader-election priority level.
func checkLeaseFlowSchema(ctx context.Context, t *testing.T, cfg *rest.Config, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "apiserver_flowcontrol_dispatched_requests_total{") &&
			strings.Contains(line, `flow_schema="`+name+`"`) && strings.Contains(line, `priority_level="leader-election"`) {
			t.Logf("Lease requests through FlowSchema %s: %s", name, line)
			return
		}
	}
	t.Errorf("The API server dispatched no request through FlowSchema %s into priority level leader-election", name)
}

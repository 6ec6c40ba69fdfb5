package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// helmRun runs bin/helm against the platform, with caches of its own.
func helmRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmTry(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmTry runs bin/helm and returns its output and how it failed.
func helmTry(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "bin", "helm"), append(args, "--kubeconfig", plat.KubeconfigPath())...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

var (
	externalSecretsCRD   sync.Once
	externalSecretsCRDOK bool
)

// installExternalSecretsCRD installs the External Secrets Operator's
// ExternalSecret CRD from the project's copy (testdata/external-secrets), so
// the API server validates the ExternalSecret the charts render. No ESO
// runs: the tests create the Secret it would sync. It waits by reading the
// CRD, not with kubectl wait: right after the apply the CRD's
// status.conditions can still be null, and kubectl wait then fails at once
// ("accessor error: <nil> is of the type <nil>") instead of waiting.
func installExternalSecretsCRD(t *testing.T) {
	t.Helper()
	externalSecretsCRD.Do(func() {
		kubectl(t, "apply", "--server-side", "-f", filepath.Join(root, "test", "e2e", "testdata", "external-secrets", "externalsecrets.yaml"))
		eventually(t, time.Minute, "the ExternalSecret CRD Established", func() error {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := k8s.Get(context.Background(), client.ObjectKey{Name: "externalsecrets.external-secrets.io"}, crd); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", conds)
		})
		externalSecretsCRDOK = true
	})
	// A test after the one whose install failed fails too, not on a
	// missing CRD further on.
	if !externalSecretsCRDOK {
		t.Fatal("the ExternalSecret CRD was not installed (see the first test that tried)")
	}
}

// syncExternalSecret does what the External Secrets Operator does for an
// ExternalSecret with creationPolicy Owner: it creates the target Secret
// with the keys the ExternalSecret lists, owned by the ExternalSecret.
func syncExternalSecret(t *testing.T, ns, name string) {
	t.Helper()
	es := &unstructured.Unstructured{}
	es.SetGroupVersionKind(schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"})
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, es); err != nil {
		t.Fatalf("the chart's ExternalSecret %s: %v", name, err)
	}
	target, _, _ := unstructured.NestedString(es.Object, "spec", "target", "name")
	policy, _, _ := unstructured.NestedString(es.Object, "spec", "target", "creationPolicy")
	data, _, _ := unstructured.NestedSlice(es.Object, "spec", "data")
	if policy != "Owner" || len(data) == 0 {
		t.Fatalf("ExternalSecret %s: creationPolicy %q, %d data entries", name, policy, len(data))
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret",
			Name: es.GetName(), UID: es.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Data: map[string][]byte{}}
	for _, d := range data {
		key, _, _ := unstructured.NestedString(d.(map[string]any), "secretKey")
		secret.Data[key] = []byte("material of " + key + " from the store")
	}
	if err := k8s.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
}

// leftovers lists every object of every namespaced, listable resource in
// the namespace, except what Kubernetes puts in every namespace (the default
// ServiceAccount, kube-root-ca.crt) and events, which record what happened.
func leftovers(t *testing.T, ns string) []string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || r.Name == "events" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list %s: %v", r.Name, err)
			}
			for _, it := range items.Items {
				name := it.GetName()
				if (r.Name == "serviceaccounts" && name == "default") || (r.Name == "configmaps" && name == "kube-root-ca.crt") {
					continue
				}
				out = append(out, r.Name+"/"+name)
			}
		}
	}
	return out
}

// uninstallLeavesNothing uninstalls the release and waits until nothing the
// release or the operator made is left in the namespace.
func uninstallLeavesNothing(t *testing.T, ns, release string) {
	t.Helper()
	helmRun(t, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m")
	eventually(t, 2*time.Minute, "nothing left after helm uninstall", func() error {
		if left := leftovers(t, ns); len(left) > 0 {
			return fmt.Errorf("%d objects left: %v", len(left), left)
		}
		return nil
	})
}

// TestFlinkChartDesignCommand runs the reference design's one-command
// install as written (section 2.2; only the namespace is added), waits for
// the FlinkCluster to be Available, and uninstalls it.
func TestFlinkChartDesignCommand(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	helmRun(t, "install", "flink-prod", "./charts/flink-jobmanager",
		"--set", "jobmanager.replicas=3", "--set", "taskmanager.replicas=12",
		"--set", "kafka.service.name=kafka-prod", "--namespace", ns)
	explainOnFailure(t, ns, "flink-prod")
	fc := waitServing(t, ns, "flink-prod")
	fc = waitReady(t, ns, fc.Name, "3/3", "12/12")
	if fc.Spec.Kafka == nil || fc.Spec.Kafka.Bootstrap.Servers != "kafka-prod:9092" {
		t.Fatalf("spec.kafka %+v, want bootstrap servers kafka-prod:9092", fc.Spec.Kafka)
	}
	// Kubernetes HA with the chart's ServiceAccount, whose Role the
	// operator checks: the rights are complete.
	waitCondition(t, ns, "flink-prod", v1.ConditionHighAvailabilityPermissions, metav1.ConditionTrue, time.Minute)
	uninstallLeavesNothing(t, ns, "flink-prod")
}

// TestFlinkChartRefusedAtAdmission: values helm can render but that make a
// cluster Flink cannot run safely (three JobManagers without high
// availability) are refused by the API server, and helm says why.
func TestFlinkChartRefusedAtAdmission(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	out, err := helmTry(t, "install", "flink-bad", "./charts/flink-jobmanager", "--namespace", ns,
		"--set", "jobmanager.replicas=3", "--set", "highAvailability.mode=none")
	if err == nil {
		t.Fatalf("helm installed three JobManagers without high availability:\n%s", out)
	}
	if !strings.Contains(err.Error(), "spec.jobManager.replicas greater than 1 requires spec.highAvailability.mode") {
		t.Fatalf("helm install failed without the API server's reason: %v", err)
	}
	uninstallLeavesNothing(t, ns, "flink-bad")
}

// TestFlinkChartProd installs the prod environment: the ExternalSecret is
// admitted by the External Secrets CRD and its Secret (made as ESO would)
// is mounted at /etc/flink/kafka-tls in every Flink pod; helm upgrade takes
// the TaskManagers from 12 to 15 and the operator scales without a new
// StatefulSet revision; helm uninstall leaves nothing behind.
func TestFlinkChartProd(t *testing.T) {
	parallel(t)
	installExternalSecretsCRD(t)
	ns := newNamespace(t)
	const release = "flink-prod"
	explainOnFailure(t, ns, release)
	values := filepath.Join("charts", "flink-jobmanager", "values-prod.yaml")
	helmRun(t, "install", release, "./charts/flink-jobmanager", "--namespace", ns, "--values", values)
	syncExternalSecret(t, ns, release+"-kafka-tls")
	fc := waitServing(t, ns, release)
	fc = waitReady(t, ns, fc.Name, "3/3", "12/12")

	// Every JobManager and TaskManager pod mounts the Secret.
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{resources.LabelInstance: release, resources.LabelName: resources.AppName}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 15 {
		t.Fatalf("%d Flink pods, want 15", len(pods.Items))
	}
	for _, p := range pods.Items {
		if err := mountsSecret(p, release+"-kafka-tls", "/etc/flink/kafka-tls"); err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
		}
	}

	sts := &appsv1.StatefulSet{}
	stsKey := client.ObjectKey{Namespace: ns, Name: release + "-taskmanager"}
	if err := k8s.Get(context.Background(), stsKey, sts); err != nil {
		t.Fatal(err)
	}
	revision, before := sts.Status.UpdateRevision, revisions(t, ns)
	generation := fc.Generation

	helmRun(t, "upgrade", release, "./charts/flink-jobmanager", "--namespace", ns, "--values", values, "--set", "taskmanager.replicas=15")
	eventually(t, 2*time.Minute, "15 TaskManagers ready", func() error {
		fc := getFC(t, ns, release)
		if fc.Generation == generation {
			return fmt.Errorf("the upgrade did not reach the FlinkCluster yet")
		}
		if fc.Status.ObservedGeneration != fc.Generation || fc.Status.TaskManager.Ready != "15/15" {
			return fmt.Errorf("generation %d observed %d, TaskManagers %s", fc.Generation, fc.Status.ObservedGeneration, fc.Status.TaskManager.Ready)
		}
		return nil
	})
	waitServing(t, ns, release)
	if err := k8s.Get(context.Background(), stsKey, sts); err != nil {
		t.Fatal(err)
	}
	if sts.Status.UpdateRevision != revision || sts.Status.CurrentRevision != revision {
		t.Errorf("scaling 12 → 15 started a rollout: revision %s, now current %s, update %s", revision, sts.Status.CurrentRevision, sts.Status.UpdateRevision)
	}
	if after := revisions(t, ns); after != before {
		t.Errorf("ControllerRevisions went from %d to %d on scaling 12 → 15", before, after)
	}
	uninstallLeavesNothing(t, ns, release)
}

// TestFlinkChartAutoscaler: the flink-taskmanager chart's
// HorizontalPodAutoscaler scales the TaskManagers through the FlinkCluster's
// scale subresource (kube-controller-manager's HPA controller raises a
// count below minReplicas without metrics, which this platform lacks), and
// helm upgrade leaves the count the HPA chose.
func TestFlinkChartAutoscaler(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	const release = "flink-hpa"
	explainOnFailure(t, ns, release)
	helmRun(t, "install", release, "./charts/flink-jobmanager", "--namespace", ns,
		"--set", "taskmanager.autoscaling.enabled=true", "--set", "taskmanager.autoscaling.minReplicas=3")
	ready3 := func() error {
		fc := getFC(t, ns, release)
		if fc.Spec.TaskManager.Replicas != 3 || fc.Status.TaskManager.Ready != "3/3" {
			return fmt.Errorf("spec.taskManager.replicas %d, ready %s", fc.Spec.TaskManager.Replicas, fc.Status.TaskManager.Ready)
		}
		return nil
	}
	eventually(t, 2*time.Minute, "the HPA scales the TaskManagers to its minimum, 3", ready3)
	generation := getFC(t, ns, release).Generation
	helmRun(t, "upgrade", release, "./charts/flink-jobmanager", "--namespace", ns, "--reuse-values",
		"--set", "taskmanager.autoscaling.maxReplicas=8")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: release + "-taskmanager"}, hpa); err != nil {
		t.Fatal(err)
	}
	if hpa.Spec.MaxReplicas != 8 {
		t.Fatalf("the upgrade left the HPA's maxReplicas at %d, want 8", hpa.Spec.MaxReplicas)
	}
	if fc := getFC(t, ns, release); fc.Generation != generation || fc.Spec.TaskManager.Replicas != 3 {
		t.Fatalf("helm upgrade changed the FlinkCluster (generation %d → %d, replicas %d): it must leave the HPA's count", generation, fc.Generation, fc.Spec.TaskManager.Replicas)
	}
	uninstallLeavesNothing(t, ns, release)
}

// TestFlinkChartEnvironments installs dev and staging from their values
// files, waits for each FlinkCluster to be Available, and uninstalls them.
func TestFlinkChartEnvironments(t *testing.T) {
	parallel(t)
	installExternalSecretsCRD(t)
	for _, env := range []string{"dev", "staging"} {
		t.Run(env, func(t *testing.T) {
			ns := newNamespace(t)
			release := "flink-" + env
			explainOnFailure(t, ns, release)
			helmRun(t, "install", release, "./charts/flink-jobmanager", "--namespace", ns,
				"--values", filepath.Join("charts", "flink-jobmanager", "values-"+env+".yaml"))
			if env == "staging" {
				syncExternalSecret(t, ns, release+"-kafka-tls")
			}
			waitServing(t, ns, release)
			if env == "dev" {
				// The vendored Kafka, named by the values flink-base sets.
				kafka := &appsv1.StatefulSet{}
				eventually(t, time.Minute, "the dev Kafka ready", func() error {
					if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "kafka"}, kafka); err != nil {
						return err
					}
					if kafka.Status.ReadyReplicas != 1 {
						return fmt.Errorf("%d ready", kafka.Status.ReadyReplicas)
					}
					return nil
				})
			}
			uninstallLeavesNothing(t, ns, release)
		})
	}
}

// waitServing waits until the cluster is Available and Flink's REST API
// answers (the second health level): a JobManager that refused to start
// never gets there.
func waitServing(t *testing.T, ns, name string) *v1.FlinkCluster {
	t.Helper()
	waitCondition(t, ns, name, v1.ConditionRestAvailable, metav1.ConditionTrue, 3*time.Minute)
	return waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue, 3*time.Minute)
}

// waitReady waits for the status to count every JobManager and TaskManager
// ready: Available needs only the leading JobManager, so the standbys may
// still be starting when it turns True.
func waitReady(t *testing.T, ns, name, jobManagers, taskManagers string) *v1.FlinkCluster {
	t.Helper()
	var fc *v1.FlinkCluster
	eventually(t, 2*time.Minute, name+" JobManagers "+jobManagers+", TaskManagers "+taskManagers, func() error {
		fc = getFC(t, ns, name)
		if fc.Status.JobManager.Ready != jobManagers || fc.Status.TaskManager.Ready != taskManagers {
			return fmt.Errorf("JobManagers %s, TaskManagers %s", fc.Status.JobManager.Ready, fc.Status.TaskManager.Ready)
		}
		return nil
	})
	return fc
}

// explainOnFailure logs, when the test fails, what the simulator saw of the
// cluster and the state of its JobManager pods.
func explainOnFailure(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if view, err := sim.Engine.View(simKey(ns, name)); err == nil {
			t.Logf("simulator: JobManagerReady %v, %d TaskManagers, events:\n%s", view.JobManagerReady, view.TaskManagers, strings.Join(view.Events, "\n"))
		}
		pods := &corev1.PodList{}
		if err := k8s.List(context.Background(), pods, client.InNamespace(ns)); err == nil {
			for _, p := range pods.Items {
				t.Logf("pod %s on %q: %s, conditions %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
			}
		}
	})
}

func mountsSecret(p corev1.Pod, secret, path string) error {
	var volume string
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			volume = v.Name
		}
	}
	if volume == "" {
		return fmt.Errorf("no volume of Secret %s", secret)
	}
	for _, c := range p.Spec.Containers {
		if c.Name != resources.ComponentJobManager && c.Name != resources.ComponentTaskManager {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.Name == volume && m.MountPath == path && m.ReadOnly {
				return nil
			}
		}
		return fmt.Errorf("container %s does not mount volume %s read-only at %s", c.Name, volume, path)
	}
	return fmt.Errorf("no Flink container")
}

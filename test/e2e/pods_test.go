package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/resources"
)

// clusterPods lists one component's pods of a cluster.
func clusterPods(t *testing.T, ns, name, component string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns),
		client.MatchingLabels(resources.SelectorLabels(name, component))); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// byNode counts running pods per node.
func byNode(t *testing.T, pods []corev1.Pod) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("pod %s: phase %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		n[p.Spec.NodeName]++
	}
	return n
}

// sharedNodes are the platform's own fake nodes, every one untainted.
func sharedNodes(t *testing.T) []string {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := k8s.List(context.Background(), nodes, client.MatchingLabels{platform.FakeNodeLabel: "kwok"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes.Items {
		if len(n.Spec.Taints) == 0 {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	return names
}

// deleteCluster deletes a cluster at the end of a test and waits for its
// pods to go, so that the next test has the nodes' capacity to itself. The
// garbage collector takes about 40 s to reach the workloads and a pod's
// grace period runs out in full without a kubelet, so the workloads and
// then the pods are deleted here directly.
func deleteCluster(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		ctx := context.Background()
		kubectl(t, "delete", "-n", ns, "fc/"+name, "--ignore-not-found", "--timeout=60s")
		mine := []client.DeleteAllOfOption{client.InNamespace(ns), client.MatchingLabels{resources.LabelInstance: name}}
		for _, kind := range []client.Object{&appsv1.Deployment{}, &appsv1.ReplicaSet{}, &appsv1.StatefulSet{}} {
			if err := k8s.DeleteAllOf(ctx, kind, mine...); err != nil {
				t.Error(err)
			}
		}
		eventually(t, time.Minute, "pods of "+name+" gone", func() error {
			if err := k8s.DeleteAllOf(ctx, &corev1.Pod{}, append(mine, client.GracePeriodSeconds(0))...); err != nil {
				return err
			}
			pods := &corev1.PodList{}
			if err := k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{resources.LabelInstance: name}); err != nil {
				return err
			}
			if len(pods.Items) > 0 {
				return fmt.Errorf("%d left", len(pods.Items))
			}
			return nil
		})
	})
}

// restrictedNamespace is a namespace that enforces the restricted Pod
// Security Standard, checked by the API server refusing a pod without
// a security context.
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest")
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "flink", Image: "flink:1.17.1"}}},
	}
	// A dry run goes through admission and leaves nothing behind; until
	// the namespace's default ServiceAccount exists, admission refuses the
	// pod for that instead.
	eventually(t, 30*time.Second, "namespace enforces restricted", func() error {
		err := k8s.Create(ctx, bare.DeepCopy(), client.DryRunAll)
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
			return fmt.Errorf("creating a pod without a security context gave %v", err)
		}
		return nil
	})
	return ns
}

// TestReferenceExampleSpreadsAcrossNodes: the reference example's three
// JobManagers land on three nodes and its twelve TaskManagers on every
// node, evenly, in a namespace that enforces the restricted Pod Security
// Standard (which would refuse every pod of a cluster that did not meet it).
func TestReferenceExampleSpreadsAcrossNodes(t *testing.T) {
	alone(t)
	ns := restrictedNamespace(t)
	const name = "realtime-warehouse"
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(root, "examples", "realtime-warehouse.yaml"))
	deleteCluster(t, ns, name)
	kubectl(t, "wait", "-n", ns, "--for=condition=Available", "fc/"+name, "--timeout=120s")

	nodes := sharedNodes(t)
	jms := byNode(t, clusterPods(t, ns, name, resources.ComponentJobManager))
	if len(jms) != 3 {
		t.Errorf("3 JobManagers on %d nodes (%v), want 3", len(jms), jms)
	}
	tms := byNode(t, clusterPods(t, ns, name, resources.ComponentTaskManager))
	lo, hi := 12, 0
	for _, n := range nodes {
		lo, hi = min(lo, tms[n]), max(hi, tms[n])
	}
	if len(tms) != len(nodes) || hi-lo > 1 {
		t.Errorf("12 TaskManagers over nodes %v: %v, want every node and a skew of at most 1", nodes, tms)
	}
	if got := len(clusterPods(t, ns, name, resources.ComponentJobManager)) + len(clusterPods(t, ns, name, resources.ComponentTaskManager)); got != 15 {
		t.Errorf("%d pods in the restricted namespace, want 15", got)
	}
}

// poolNodes adds n fake nodes labelled pool=flink and tainted
// dedicated=flink:NoSchedule, shaped like the platform's own, and deletes
// them when the test ends.
func poolNodes(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	model := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "kwok-node-0"}, model); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("kwok-pool-flink-%d", i)
		labels := map[string]string{}
		for k, v := range model.Labels {
			labels[k] = v
		}
		labels[corev1.LabelHostname] = name
		labels["pool"] = "flink"
		// A pod CIDR and an address of their own, far from the platform's.
		cidr := fmt.Sprintf("10.250.%d.0/20", i*16)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: model.Annotations},
			Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr},
				Taints: []corev1.Taint{{Key: "dedicated", Value: "flink", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Capacity: model.Status.Capacity, Allocatable: model.Status.Allocatable,
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("172.30.200.%d", i+1)},
					{Type: corev1.NodeHostName, Address: name},
				},
			},
		}
		if err := k8s.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := k8s.Delete(context.Background(), node); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		})
		names = append(names, name)
	}
	eventually(t, time.Minute, "pool nodes Ready with only their own taint", func() error {
		for _, name := range names {
			node := &corev1.Node{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return err
			}
			ready := false
			for _, c := range node.Status.Conditions {
				ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			}
			if !ready || len(node.Spec.Taints) != 1 {
				return fmt.Errorf("%s: ready %v, taints %v", name, ready, node.Spec.Taints)
			}
		}
		return nil
	})
	return names
}

// TestPodTemplateOnDedicatedPool applies the README's dedicated node pool
// example in a restricted namespace: every pod carries the template's
// toleration and node selector and runs on the pool, the JobManagers on
// different pool nodes, and each TaskManager has the template's sidecar.
func TestPodTemplateOnDedicatedPool(t *testing.T) {
	alone(t)
	pool := poolNodes(t, 2)
	ns := restrictedNamespace(t)
	const name = "dedicated-pool"
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(root, "examples", "dedicated-pool.yaml"))
	deleteCluster(t, ns, name)
	kubectl(t, "wait", "-n", ns, "--for=condition=Available", "fc/"+name, "--timeout=120s")

	onPool := map[string]bool{pool[0]: true, pool[1]: true}
	jms := clusterPods(t, ns, name, resources.ComponentJobManager)
	tms := clusterPods(t, ns, name, resources.ComponentTaskManager)
	if len(jms) != 2 || len(tms) != 4 {
		t.Fatalf("%d JobManagers and %d TaskManagers, want 2 and 4", len(jms), len(tms))
	}
	if nodes := byNode(t, jms); len(nodes) != 2 {
		t.Errorf("JobManagers on %v, want two nodes (spread: required)", nodes)
	}
	byNode(t, tms)
	for _, p := range append(jms, tms...) {
		if !onPool[p.Spec.NodeName] {
			t.Errorf("pod %s on %s, not on the pool %v", p.Name, p.Spec.NodeName, pool)
		}
		if p.Spec.NodeSelector["pool"] != "flink" {
			t.Errorf("pod %s: node selector %v", p.Name, p.Spec.NodeSelector)
		}
		tolerates := false
		for _, tol := range p.Spec.Tolerations {
			tolerates = tolerates || tol.Key == "dedicated" && tol.Value == "flink" && tol.Effect == corev1.TaintEffectNoSchedule
		}
		if !tolerates {
			t.Errorf("pod %s: tolerations %v lack dedicated=flink:NoSchedule", p.Name, p.Spec.Tolerations)
		}
		if p.Labels["team"] != "data-platform" {
			t.Errorf("pod %s: labels %v", p.Name, p.Labels)
		}
	}
	for _, p := range tms {
		var names []string
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != "taskmanager,metrics-agent" {
			t.Errorf("pod %s: containers %v, want taskmanager and the metrics-agent sidecar", p.Name, names)
		}
	}

	// Required means required: a third JobManager has no pool node left
	// and the scheduler says why.
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Spec.JobManager.Replicas = 3 })
	eventually(t, time.Minute, "a third JobManager unschedulable for its anti-affinity", func() error {
		for _, p := range clusterPods(t, ns, name, resources.ComponentJobManager) {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
					strings.Contains(c.Message, "anti-affinity") {
					return nil
				}
			}
		}
		return fmt.Errorf("no JobManager is unschedulable for its anti-affinity")
	})
	nodes := map[string]int{}
	for _, p := range clusterPods(t, ns, name, resources.ComponentJobManager) {
		if p.Spec.NodeName != "" {
			nodes[p.Spec.NodeName]++
		}
	}
	if len(nodes) > 2 || nodes[pool[0]] > 1 || nodes[pool[1]] > 1 {
		t.Errorf("scheduled JobManagers %v, want at most one on each pool node", nodes)
	}
}

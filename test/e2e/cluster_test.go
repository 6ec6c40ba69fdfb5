package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

func tmPods(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns),
		client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentTaskManager))); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func revisions(t *testing.T, ns string) int {
	t.Helper()
	list := &appsv1.ControllerRevisionList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestReferenceExampleLifecycle follows the README: apply the reference
// example, wait for Available, scale it with kubectl scale, change its
// configuration, then delete it.
func TestReferenceExampleLifecycle(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(root, "examples", "realtime-warehouse.yaml"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Available", "fc/realtime-warehouse", "--timeout=120s")

	if fc := waitReady(t, ns, "realtime-warehouse", "3/3", "12/12"); fc.Status.Phase != v1.PhaseRunning {
		t.Fatalf("phase %s, want Running", fc.Status.Phase)
	}
	pods := tmPods(t, ns, "realtime-warehouse")
	if len(pods) != 12 {
		t.Fatalf("%d TaskManager pods, want 12", len(pods))
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			t.Errorf("pod %s: phase %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}
	out := kubectl(t, "get", "fc", "-n", ns)
	for _, col := range []string{"VERSION", "JOBMANAGERS", "TASKMANAGERS", "PHASE", "1.17.1", "12/12", "Running"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get fc lacks %q:\n%s", col, out)
		}
	}

	// Scale through the scale subresource: only the replica count moves.
	before := revisions(t, ns)
	kubectl(t, "scale", "-n", ns, "fc/realtime-warehouse", "--replicas=15")
	eventually(t, 90*time.Second, "15 TaskManagers ready", func() error {
		fc := getFC(t, ns, "realtime-warehouse")
		if fc.Status.TaskManager.Ready != "15/15" || fc.Status.Phase != v1.PhaseRunning {
			return fmt.Errorf("TaskManagers %s, phase %s", fc.Status.TaskManager.Ready, fc.Status.Phase)
		}
		return nil
	})
	if after := revisions(t, ns); after != before {
		t.Errorf("ControllerRevisions went from %d to %d on scaling 12 → 15", before, after)
	}
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}, sts); err != nil {
		t.Fatal(err)
	}
	if sts.Status.CurrentRevision != sts.Status.UpdateRevision {
		t.Errorf("scaling started a rollout: %s → %s", sts.Status.CurrentRevision, sts.Status.UpdateRevision)
	}

	// A configuration change rolls every TaskManager to a new revision.
	oldUIDs := map[string]bool{}
	for _, p := range tmPods(t, ns, "realtime-warehouse") {
		oldUIDs[string(p.UID)] = true
	}
	oldRevision := sts.Status.CurrentRevision
	patchSpec(t, ns, "realtime-warehouse", func(fc *v1.FlinkCluster) { fc.Spec.Checkpointing.Interval = "1m" })
	eventually(t, 3*time.Minute, "TaskManagers rolled", func() error {
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}, s); err != nil {
			return err
		}
		if s.Status.UpdateRevision == oldRevision || s.Status.CurrentRevision != s.Status.UpdateRevision || s.Status.ReadyReplicas != 15 {
			return fmt.Errorf("revision %s/%s, ready %d", s.Status.CurrentRevision, s.Status.UpdateRevision, s.Status.ReadyReplicas)
		}
		for _, p := range tmPods(t, ns, "realtime-warehouse") {
			if oldUIDs[string(p.UID)] {
				return fmt.Errorf("pod %s not replaced yet", p.Name)
			}
		}
		return nil
	})
	waitCondition(t, ns, "realtime-warehouse", v1.ConditionAvailable, metav1.ConditionTrue, time.Minute)

	// Deletion removes every child, through the finalizer and owner references.
	kubectl(t, "delete", "-n", ns, "fc/realtime-warehouse", "--timeout=60s")
	eventually(t, 2*time.Minute, "children deleted", func() error {
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.PodList{}} {
			if err := k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{resources.LabelInstance: "realtime-warehouse"}); err != nil {
				return err
			}
			if n := len(apiItems(list)); n > 0 {
				return fmt.Errorf("%d %T left", n, list)
			}
		}
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-config"}, cm); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap still there (%v)", err)
		}
		return nil
	})
}

func apiItems(list client.ObjectList) []any {
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		return toAny(l.Items)
	case *appsv1.StatefulSetList:
		return toAny(l.Items)
	case *corev1.ServiceList:
		return toAny(l.Items)
	case *corev1.PodList:
		return toAny(l.Items)
	case *policyv1.PodDisruptionBudgetList:
		return toAny(l.Items)
	}
	return nil
}

func toAny[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}

// TestOperatorRestartConverges kills the operator while clusters are being
// created and checks that the restarted one converges to the same state
// without duplicate children.
func TestOperatorRestartConverges(t *testing.T) {
	alone(t)
	ns := newNamespace(t)
	ctx := context.Background()
	const n = 5
	for i := range n {
		fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("restart-%d", i), Namespace: ns}}
		fc.Spec = v1.FlinkClusterSpec{Version: "1.18.1", JobManager: v1.JobManagerSpec{Replicas: 1},
			TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2}}
		if err := k8s.Create(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	// Kill as soon as the first child exists: mid-way through the batch.
	eventually(t, 30*time.Second, "first child", func() error {
		list := &appsv1.StatefulSetList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	op.kill()
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		waitCondition(t, ns, fmt.Sprintf("restart-%d", i), v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	}
	// The restarted operator's health verdicts are its own: a job a user
	// runs on one cluster brings that cluster's budget.
	runUserJob(t, ns, "restart-0")
	waitBudget(t, ns, "restart-0")
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}, &policyv1.PodDisruptionBudgetList{}} {
		if err := k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{resources.LabelManagedBy: resources.ManagedBy}); err != nil {
			t.Fatal(err)
		}
		// One of each per cluster (the JobManager's Service the only one),
		// two StatefulSets (the JobManager's, the TaskManagers'), no
		// Deployment, and one budget (the one cluster that runs a job).
		want := n
		switch list.(type) {
		case *appsv1.StatefulSetList:
			want = 2 * n
		case *appsv1.DeploymentList:
			want = 0
		case *policyv1.PodDisruptionBudgetList:
			want = 1
		}
		got := len(apiItems(list))
		if cms, ok := list.(*corev1.ConfigMapList); ok {
			got = len(cms.Items)
		}
		if got != want {
			t.Errorf("%T: %d objects, want %d", list, got, want)
		}
	}
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3*n {
		t.Errorf("%d pods, want %d", len(pods.Items), 3*n)
	}
}

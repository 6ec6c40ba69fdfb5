package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestPodsSayReadyBeforeTheWorkloads: a cluster is Available as soon as its
// pods are ready, before kube-controller-manager writes so into the
// workloads' status (here it never does), and only pods of the
// StatefulSet's update revision count.
func TestPodsSayReadyBeforeTheWorkloads(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const name = "realtime-warehouse" // 3 JobManagers with HA, 12 TaskManagers
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatal(err)
	}
	// The workload controllers' part, but for readiness: every pod created
	// and updated, none ready yet.
	testwait.Until(t, 10*time.Second, func() error {
		d := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, d); err != nil {
			return err
		}
		d.Status = appsv1.StatefulSetStatus{ObservedGeneration: d.Generation, Replicas: 3, UpdatedReplicas: 3, CurrentRevision: "jm-r1", UpdateRevision: "jm-r1"}
		if err := k8s.Status().Update(ctx, d); err != nil {
			return err
		}
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}, s); err != nil {
			return err
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 12, UpdatedReplicas: 12,
			CurrentRevision: "tm-r1", UpdateRevision: "tm-r1"}
		return k8s.Status().Update(ctx, s)
	})

	readyPod(t, ns, name, resources.ComponentJobManager, "jobmanager-0", "jm-r1")
	for i := range 11 {
		readyPod(t, ns, name, resources.ComponentTaskManager, fmt.Sprintf("taskmanager-%d", i), "tm-r1")
	}
	// A TaskManager the StatefulSet has not replaced yet: it runs the
	// previous template, ready or not.
	old := readyPod(t, ns, name, resources.ComponentTaskManager, "taskmanager-11", "tm-r0")

	var fc *v1.FlinkCluster
	testwait.Until(t, 15*time.Second, func() error {
		fc = getCluster(t, ns, name)
		if fc.Status.JobManager.Ready != "1/3" || fc.Status.TaskManager.Ready != "11/12" {
			return fmt.Errorf("ready JobManagers %q, TaskManagers %q; want 1/3 and 11/12 (the old revision's pod not counted)",
				fc.Status.JobManager.Ready, fc.Status.TaskManager.Ready)
		}
		return nil
	})
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAvailable); c == nil || c.Reason != "TaskManagersNotReady" {
		t.Errorf("Available = %+v, want False with TaskManagersNotReady", c)
	}

	// The StatefulSet replaces it: now every TaskManager runs the update
	// revision.
	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	readyPod(t, ns, name, resources.ComponentTaskManager, "taskmanager-11-replaced", "tm-r1")
	fc = waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue)
	if fc.Status.TaskManager.Ready != "12/12" || fc.Status.Phase != v1.PhaseRunning {
		t.Errorf("TaskManagers ready %q, phase %s; want 12/12, Running", fc.Status.TaskManager.Ready, fc.Status.Phase)
	}
	s := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}, s); err != nil {
		t.Fatal(err)
	}
	if s.Status.ReadyReplicas != 0 {
		t.Errorf("the StatefulSet's status says %d ready: the test meant the pods alone to say so", s.Status.ReadyReplicas)
	}
}

// readyPod creates a Ready pod of the cluster's component, as the
// workload controller and a kubelet would.
func readyPod(t *testing.T, ns, cluster, component, name, revision string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-" + name, Labels: resources.SelectorLabels(cluster, component)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: component, Image: "flink:1.17.1"}}},
	}
	if revision != "" {
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := k8s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

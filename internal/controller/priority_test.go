package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
)

var testOwner = []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "FlinkCluster", Name: "fc", UID: "u", Controller: ptr.To(true)}}

func childMeta(rv string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: "fc-x", ResourceVersion: rv, OwnerReferences: testOwner}
}

func TestUpdateOpts(t *testing.T) {
	jobManager := func(rv string) metav1.ObjectMeta {
		m := childMeta(rv)
		m.Labels = map[string]string{resources.LabelComponent: resources.ComponentJobManager}
		return m
	}
	// The JobManager counts as ready with one ready pod of its two.
	jm := func(rv string, ready int32) client.Object {
		return &appsv1.StatefulSet{ObjectMeta: jobManager(rv), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.StatefulSetStatus{ReadyReplicas: ready}}
	}
	// An older cluster's JobManager is a Deployment.
	deploy := func(rv string, ready int32) client.Object {
		return &appsv1.Deployment{ObjectMeta: jobManager(rv), Status: appsv1.DeploymentStatus{ReadyReplicas: ready}}
	}
	sts := func(rv string, ready int32) client.Object {
		return &appsv1.StatefulSet{ObjectMeta: childMeta(rv), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.StatefulSetStatus{ReadyReplicas: ready}}
	}
	cm := func(rv string) client.Object { return &corev1.ConfigMap{ObjectMeta: childMeta(rv)} }
	const delay = 5 * time.Second
	for _, tc := range []struct {
		name         string
		old, new     client.Object
		clusterReady bool
		wantPrio     int
		wantAfter    time.Duration
	}{
		{"JobManager turns ready, TaskManagers ready: the cluster is", jm("1", 0), jm("2", 1), true, ReadinessPriority, 0},
		{"JobManager turns ready alone: progress", jm("1", 0), jm("2", 1), false, 0, delay},
		{"JobManager Deployment turns ready, TaskManagers ready", deploy("1", 0), deploy("2", 1), true, ReadinessPriority, 0},
		{"TaskManagers all ready, JobManager ready", sts("1", 1), sts("2", 2), true, ReadinessPriority, 0},
		{"JobManager turns unready", jm("1", 1), jm("2", 0), false, ReadinessPriority, 0},
		{"JobManager Deployment turns unready", deploy("1", 1), deploy("2", 0), false, ReadinessPriority, 0},
		{"TaskManagers no longer all ready", sts("1", 2), sts("2", 1), true, ReadinessPriority, 0},
		{"one of two TaskManagers ready", sts("1", 0), sts("2", 1), true, 0, delay},
		{"a ConfigMap changed", cm("1"), cm("2"), true, 0, delay},
		{"resync", sts("1", 1), sts("1", 1), true, handler.LowPriority, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := updateOpts(tc.old, tc.new, func() bool { return tc.clusterReady }, delay)
			if ptr.Deref(got.Priority, 0) != tc.wantPrio || got.After != tc.wantAfter {
				t.Errorf("opts = priority %d after %s, want %d after %s", ptr.Deref(got.Priority, 0), got.After, tc.wantPrio, tc.wantAfter)
			}
		})
	}
}

// TestChildHandlerQueues sends events through the handler into
// controller-runtime's own priority queue: a child another controller owns
// queues nothing, a deleted child queues its cluster at once.
func TestChildHandlerQueues(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := childHandler{delay: time.Hour}
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", ResourceVersion: "1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}}}
	h.Delete(context.Background(), event.DeleteEvent{Object: foreign}, q)
	// Our own create echoing back waits the (hour-long) delay; the
	// deletion that follows must not.
	h.Create(context.Background(), event.CreateEvent{Object: &corev1.Service{ObjectMeta: childMeta("1")}}, q)
	h.Delete(context.Background(), event.DeleteEvent{Object: &corev1.Service{ObjectMeta: childMeta("1")}}, q)
	item, prio, _ := q.GetWithPriority()
	if item != (reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "fc"}}) || prio != 0 {
		t.Errorf("first item %v at %d, want ns/fc at 0", item, prio)
	}
	q.Done(item)
	if n := q.Len(); n != 0 {
		t.Errorf("%d more items ready, want none (the foreign one is not ours)", n)
	}
}

// TestPodHandlerQueues: a pod's readiness wakes its cluster (by the pod's
// instance label; its controller is a workload) ahead of the queue when the
// cluster just turned ready or a pod stopped being ready; a pod's other
// changes, and the pods of workloads not ours, wake nothing.
func TestPodHandlerQueues(t *testing.T) {
	// The pods as the pod cache hands them over (readiness.Slim).
	pod := func(rv string, ready bool, labels map[string]string) *readiness.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fc-taskmanager-0", ResourceVersion: rv, Labels: labels}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return readiness.Slim(p)
	}
	ours := map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelInstance: "fc"}
	noCluster := map[string]string{resources.LabelManagedBy: resources.ManagedBy}
	deleting := func(p *readiness.Pod) *readiness.Pod { p.DeletionTimestamp = &metav1.Time{Time: time.Now()}; return p }
	for _, tc := range []struct {
		name         string
		send         func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request])
		clusterReady bool
		wantQueued   bool
	}{
		{"the last pod turns ready", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1", false, ours), ObjectNew: pod("2", true, ours)}, q)
		}, true, true},
		{"a pod turns ready, others are not", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1", false, ours), ObjectNew: pod("2", true, ours)}, q)
		}, false, false},
		{"a pod stops being ready", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1", true, ours), ObjectNew: pod("2", false, ours)}, q)
		}, true, true},
		{"a ready pod is being deleted", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1", true, ours), ObjectNew: deleting(pod("2", true, ours))}, q)
		}, true, true},
		{"a ready pod is gone", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: pod("1", true, ours)}, q)
		}, true, true},
		{"a pending pod is gone", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: pod("1", false, ours)}, q)
		}, true, false},
		{"a ready pod changes otherwise", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1", true, ours), ObjectNew: pod("2", true, ours)}, q)
		}, true, false},
		{"a pod is created", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: pod("1", true, ours)}, q)
		}, true, false},
		{"a pod of no cluster", func(h podHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("1", true, noCluster), ObjectNew: pod("2", false, noCluster)}, q)
		}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			h := podHandler{cluster: childHandler{reader: readyReader(tc.clusterReady)}}
			tc.send(h, q)
			if !tc.wantQueued {
				if n := q.Len(); n != 0 {
					t.Errorf("%d items queued, want none", n)
				}
				return
			}
			item, prio, _ := q.GetWithPriority()
			if item != (reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "fc"}}) || prio != ReadinessPriority {
				t.Errorf("queued %v at %d, want ns/fc at %d", item, prio, ReadinessPriority)
			}
			q.Done(item)
		})
	}
}

// readyReader serves one cluster "fc" whose JobManager and two TaskManagers
// are ready by their status, or not; the pods it lists are none.
type readyReader bool

func (r readyReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	n := int32(0)
	if r {
		n = 2
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return apierrors.NewNotFound(appsv1.Resource("deployments"), key.Name)
	case *appsv1.StatefulSet:
		o.Name, o.Spec.Replicas, o.Status.ReadyReplicas = key.Name, ptr.To[int32](2), n
		if strings.HasSuffix(key.Name, "-jobmanager") {
			o.Spec.Replicas, o.Status.ReadyReplicas = ptr.To[int32](1), min(n, 1)
		}
	}
	return nil
}

func (readyReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

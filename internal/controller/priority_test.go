package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// TestWorkloadHandlerPriority sends workload updates through the handler
// into controller-runtime's own priority queue and reads back the priority
// each owner was queued at.
func TestWorkloadHandlerPriority(t *testing.T) {
	owner := []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "FlinkCluster", Name: "fc", UID: "u", Controller: ptr.To(true)}}
	meta := func(rv string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: "fc-x", ResourceVersion: rv, OwnerReferences: owner}
	}
	deploy := func(rv string, ready int32) client.Object {
		return &appsv1.Deployment{ObjectMeta: meta(rv), Status: appsv1.DeploymentStatus{ReadyReplicas: ready}}
	}
	sts := func(rv string, ready int32) client.Object {
		return &appsv1.StatefulSet{ObjectMeta: meta(rv), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}, Status: appsv1.StatefulSetStatus{ReadyReplicas: ready}}
	}
	for _, tc := range []struct {
		name     string
		old, new client.Object
		want     int
	}{
		{"JobManager turns ready", deploy("1", 0), deploy("2", 1), ReadinessPriority},
		{"JobManager turns unready", deploy("1", 1), deploy("2", 0), ReadinessPriority},
		{"TaskManagers all ready", sts("1", 1), sts("2", 2), ReadinessPriority},
		{"one of two TaskManagers ready", sts("1", 0), sts("2", 1), 0},
		{"resync", sts("1", 1), sts("1", 1), handler.LowPriority},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			workloadHandler{}.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}, q)
			item, prio, _ := q.GetWithPriority()
			if item.Name != "fc" || item.Namespace != "ns" || prio != tc.want {
				t.Errorf("queued %v at priority %d, want ns/fc at %d", item, prio, tc.want)
			}
		})
	}
	// A workload another controller owns queues nothing: a later item is
	// the first one out.
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", ResourceVersion: "1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}}}
	workloadHandler{}.Create(context.Background(), event.CreateEvent{Object: foreign}, q)
	workloadHandler{}.Create(context.Background(), event.CreateEvent{Object: deploy("1", 0)}, q)
	if item, _, _ := q.GetWithPriority(); item.Name != "fc" {
		t.Errorf("first item %v, want the FlinkCluster's", item)
	}
}

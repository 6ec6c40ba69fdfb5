package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// ReadinessPriority is the queue priority of a cluster whose JobManager or
// TaskManagers just turned ready or unready. During a burst the queue holds
// about one entry per cluster; a cluster that can now say Available (or must
// stop saying it) would otherwise wait behind every cluster still being
// created, a whole queue cycle (minutes at N = 1000). Finishing work first
// costs the others nothing in total throughput.
const ReadinessPriority = 10

// workloadHandler enqueues the FlinkCluster that controls a Deployment or
// StatefulSet, ahead of the queue when the update changed the workload's
// readiness as availability() reads it, and behind it for the initial list.
type workloadHandler struct{}

var _ handler.EventHandler = workloadHandler{}

func (workloadHandler) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var prio *int
	if e.IsInInitialList {
		prio = new(handler.LowPriority)
	}
	enqueueOwner(q, e.Object, prio)
}

func (workloadHandler) Update(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var prio *int
	switch {
	case e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion():
		// A resync: nothing changed.
		prio = new(handler.LowPriority)
	case workloadReady(e.ObjectOld) != workloadReady(e.ObjectNew):
		prio = new(ReadinessPriority)
	}
	enqueueOwner(q, e.ObjectNew, prio)
}

func (workloadHandler) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueOwner(q, e.Object, nil)
}

func (workloadHandler) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueOwner(q, e.Object, nil)
}

// workloadReady is the readiness availability() reads: a ready JobManager
// pod, all desired TaskManagers ready.
func workloadReady(obj client.Object) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return resources.JobManagerReady(o)
	case *appsv1.StatefulSet:
		return o.DeletionTimestamp == nil && o.Spec.Replicas != nil && o.Status.ReadyReplicas >= *o.Spec.Replicas
	}
	return false
}

func enqueueOwner(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, prio *int) {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "FlinkCluster" {
		return
	}
	if gv, err := schema.ParseGroupVersion(owner.APIVersion); err != nil || gv.Group != v1.GroupVersion.Group {
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: prio}, req)
		return
	}
	q.Add(req)
}

package controller

import (
	"context"
	"time"

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

// ReadinessPriority is the queue priority of a cluster whose readiness just
// changed: its last workload turned ready (it can now say Available), or a
// workload stopped being ready (it must stop saying so). During a burst the
// queue holds about one entry per cluster; such a cluster would otherwise
// wait behind every cluster still being created, a whole queue cycle
// (minutes at N = 1000). Finishing work first costs the others nothing in
// total throughput.
const ReadinessPriority = 10

// DefaultProgressDelay is how long progress of the children (pods created,
// one of two TaskManagers ready, our own creates echoing back) may wait
// before a reconcile reports it. Events within the window share one
// reconcile and one status write; a change of readiness never waits.
const DefaultProgressDelay = 5 * time.Second

// childHandler enqueues the FlinkCluster that controls a child: ahead of
// the queue when the cluster's readiness changed, after the progress delay
// for mere progress, at once for a deletion (a child to restore), and
// behind everything for the initial list and resyncs.
type childHandler struct {
	// reader is the cache, for the sibling workload's readiness.
	reader client.Reader
	delay  time.Duration
}

var _ handler.EventHandler = childHandler{}

func (h childHandler) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.IsInInitialList {
		enqueueOwner(q, e.Object, priorityqueue.AddOpts{Priority: new(handler.LowPriority)})
		return
	}
	enqueueOwner(q, e.Object, priorityqueue.AddOpts{After: h.delay})
}

func (h childHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	sibling := func() bool { return h.siblingReady(ctx, e.ObjectNew) }
	enqueueOwner(q, e.ObjectNew, updateOpts(e.ObjectOld, e.ObjectNew, sibling, h.delay))
}

// updateOpts decides how an update of a child is queued; siblingReady is
// asked only when the child itself just turned ready.
func updateOpts(old, cur client.Object, siblingReady func() bool, delay time.Duration) priorityqueue.AddOpts {
	switch wasReady, ready := workloadReady(old), workloadReady(cur); {
	case old.GetResourceVersion() == cur.GetResourceVersion():
		// A resync: nothing changed.
		return priorityqueue.AddOpts{Priority: new(handler.LowPriority)}
	case wasReady && !ready:
		return priorityqueue.AddOpts{Priority: new(ReadinessPriority)}
	case ready && !wasReady && siblingReady():
		return priorityqueue.AddOpts{Priority: new(ReadinessPriority)}
	}
	return priorityqueue.AddOpts{After: delay}
}

func (childHandler) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueOwner(q, e.Object, priorityqueue.AddOpts{})
}

func (childHandler) Generic(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	enqueueOwner(q, e.Object, priorityqueue.AddOpts{})
}

// siblingReady reports whether the cluster's other workload is ready too,
// so the cluster as a whole just turned ready. Without a reader, or when
// the sibling cannot be read, the event counts as progress: the delayed
// reconcile still reports it.
func (h childHandler) siblingReady(ctx context.Context, obj client.Object) bool {
	owner := metav1.GetControllerOf(obj)
	if h.reader == nil || owner == nil {
		return h.reader == nil
	}
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: owner.Name}}
	var sibling client.Object
	var key string
	switch obj.(type) {
	case *appsv1.Deployment:
		sibling, key = &appsv1.StatefulSet{}, resources.TaskManagerName(fc)
	case *appsv1.StatefulSet:
		sibling, key = &appsv1.Deployment{}, resources.JobManagerName(fc)
	default:
		return false
	}
	if err := h.reader.Get(ctx, types.NamespacedName{Namespace: fc.Namespace, Name: key}, sibling); err != nil {
		return false
	}
	return workloadReady(sibling)
}

// workloadReady is the readiness availability() reads: a ready JobManager
// pod, all desired TaskManagers ready. Other kinds are never ready.
func workloadReady(obj client.Object) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return resources.JobManagerReady(o)
	case *appsv1.StatefulSet:
		return o.DeletionTimestamp == nil && o.Spec.Replicas != nil && o.Status.ReadyReplicas >= *o.Spec.Replicas
	}
	return false
}

func enqueueOwner(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, opts priorityqueue.AddOpts) {
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "FlinkCluster" {
		return
	}
	if gv, err := schema.ParseGroupVersion(owner.APIVersion); err != nil || gv.Group != v1.GroupVersion.Group {
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(opts, req)
		return
	}
	if opts.After > 0 {
		q.AddAfter(req, opts.After)
		return
	}
	q.Add(req)
}

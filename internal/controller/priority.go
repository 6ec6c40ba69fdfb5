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
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
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
	// reader is the cache, for the sibling workload's readiness, and pods
	// the cluster's pods.
	reader client.Reader
	pods   *readiness.Cache
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
	ready := func() bool { return h.clusterReady(ctx, e.ObjectNew) }
	enqueueOwner(q, e.ObjectNew, updateOpts(e.ObjectOld, e.ObjectNew, ready, h.delay))
}

// updateOpts decides how an update of a child is queued; clusterReady is
// asked only when the child itself just turned ready.
func updateOpts(old, cur client.Object, clusterReady func() bool, delay time.Duration) priorityqueue.AddOpts {
	switch wasReady, ready := workloadReady(old), workloadReady(cur); {
	case old.GetResourceVersion() == cur.GetResourceVersion():
		// A resync: nothing changed.
		return priorityqueue.AddOpts{Priority: new(handler.LowPriority)}
	case wasReady && !ready:
		return priorityqueue.AddOpts{Priority: new(ReadinessPriority)}
	case ready && !wasReady && clusterReady():
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

// clusterReady reports whether the cluster of obj (a workload or a pod) is
// ready as a whole, as availability() will count it: a ready JobManager
// and every desired TaskManager ready. Without a reader it says yes (the
// reconcile finds out); when the workloads cannot be read, no.
func (h childHandler) clusterReady(ctx context.Context, obj client.Object) bool {
	key, ok := clusterOf(obj)
	if h.reader == nil || !ok {
		return h.reader == nil
	}
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	tm := &appsv1.StatefulSet{}
	jm, err := workload.Read(ctx, h.reader, fc)
	if err != nil || h.reader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: resources.TaskManagerName(fc)}, tm) != nil ||
		tm.Spec.Replicas == nil {
		return false
	}
	pods := h.pods.Pods(key.Namespace, key.Name)
	return readiness.JobManagers(jm, pods).Ready >= 1 && readiness.TaskManagers(tm, pods).Ready >= *tm.Spec.Replicas
}

// workloadReady is the readiness a workload's own status shows: a ready
// JobManager pod, all desired TaskManagers ready. Other kinds are never
// ready.
func workloadReady(obj client.Object) bool {
	if jm, ok := workload.Of(obj); ok {
		return jm.Ready()
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		return o.DeletionTimestamp == nil && o.Spec.Replicas != nil && o.Status.ReadyReplicas >= *o.Spec.Replicas
	}
	return false
}

// podHandler wakes a cluster when a pod's readiness changes it: ahead of
// the queue when its last pod turned ready (it can now say Available,
// before the workloads' status says so) or a pod stopped being ready. A
// pod's other changes wake nothing: the workloads' status reports
// progress, and a pod no workload counts yet is not the cluster's news.
type podHandler struct{ cluster childHandler }

var _ handler.EventHandler = podHandler{}

func (podHandler) Create(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func (h podHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	switch wasReady, ready := podCounts(e.ObjectOld), podCounts(e.ObjectNew); {
	case wasReady && !ready, ready && !wasReady && h.cluster.clusterReady(ctx, e.ObjectNew):
		enqueueOwner(q, e.ObjectNew, priorityqueue.AddOpts{Priority: new(ReadinessPriority)})
	}
}

func (podHandler) Delete(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if podCounts(e.Object) {
		enqueueOwner(q, e.Object, priorityqueue.AddOpts{Priority: new(ReadinessPriority)})
	}
}

func (podHandler) Generic(context.Context, event.GenericEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

// podCounts: the pod is one readiness may count, Ready and not being
// deleted.
func podCounts(obj client.Object) bool {
	p, ok := obj.(*readiness.Pod)
	return ok && p.DeletionTimestamp == nil && p.Ready
}

// clusterOf names the FlinkCluster an object belongs to: the controller
// of a child, the instance label of a pod (its controller is a workload).
func clusterOf(obj client.Object) (types.NamespacedName, bool) {
	if p, pod := obj.(*readiness.Pod); pod {
		// The cache holds only the pods labelled as Datapilot's.
		return types.NamespacedName{Namespace: p.Namespace, Name: p.Cluster}, p.Cluster != ""
	}
	owner := metav1.GetControllerOf(obj)
	if owner == nil || owner.Kind != "FlinkCluster" {
		return types.NamespacedName{}, false
	}
	if gv, err := schema.ParseGroupVersion(owner.APIVersion); err != nil || gv.Group != v1.GroupVersion.Group {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: owner.Name}, true
}

func enqueueOwner(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object, opts priorityqueue.AddOpts) {
	key, ok := clusterOf(obj)
	if !ok {
		return
	}
	req := reconcile.Request{NamespacedName: key}
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

package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// SetupWithManager registers the controller. It watches the FlinkClusters
// and the children they own; the manager's cache is label-filtered to
// Datapilot's children, so other workloads cost nothing.
//
// healthEvents, when not nil, carries the clusters whose health verdict
// changed: the poller runs apart from reconciles and wakes one only then.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int, healthEvents <-chan event.GenericEvent) error {
	// Our own status writes bump neither generation nor annotations, so
	// they do not wake the controller again.
	specChanged := predicate.Or(
		predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		predicate.LabelChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return !e.ObjectNew.GetDeletionTimestamp().IsZero()
		}},
	)
	delay := r.ProgressDelay
	if delay == 0 {
		delay = DefaultProgressDelay
	}
	children := childHandler{reader: mgr.GetCache(), pods: r.Pods, delay: delay}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("flinkcluster").
		For(&v1.FlinkCluster{}, builder.WithPredicates(specChanged)).
		// Readiness changes of the workloads go ahead of the queue; mere
		// progress of the children waits a little and shares a reconcile
		// (childHandler).
		Watches(&appsv1.Deployment{}, children).
		Watches(&appsv1.StatefulSet{}, children).
		// Only the metadata of these is read (metadataOnly).
		Watches(&corev1.Service{}, children, builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, children, builder.OnlyMetadata).
		// A budget's status follows every pod; only its spec is ours.
		Watches(&policyv1.PodDisruptionBudget{}, children, builder.OnlyMetadata, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The Kubernetes HA account: watched so a deleted one comes back.
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.RoleBinding{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent, NeedLeaderElection: ptr.To(r.Shards == nil)})
	if r.Pods != nil {
		// The pods say a cluster turned ready before the workloads' status
		// does (readiness). A raw source: WithEventFilter's shard filter
		// is passed to it here.
		var preds []predicate.Predicate
		if r.Shards != nil {
			preds = append(preds, ownedByShard(r.Shards))
		}
		b = b.WatchesRawSource(r.Pods.Source(podHandler{cluster: children}, preds...))
	}
	if r.Shards != nil {
		// Every replica runs the controller; each reconciles its shards'
		// clusters, all of them again when it acquires a shard.
		b = b.WithEventFilter(ownedByShard(r.Shards)).
			WatchesRawSource(source.Channel(r.Shards.Events(), &handler.EnqueueRequestForObject{}))
	}
	if healthEvents != nil {
		b = b.WatchesRawSource(source.Channel(healthEvents, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Reconcile moves one FlinkCluster towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("A write met a newer version of the object; looking again", "error", err.Error())
	}
	return requeueOnConflict(res, err)
}

// requeueOnConflict turns a write the API server refused for its
// resourceVersion (the status apply is conditional on the version it was
// computed from: another writer, our own write still on its way to the
// cache, or the cluster deleted and re-created) into a quick look again
// without an error: it is optimistic concurrency doing its job, and the
// next reconcile decides from the object as it is. Logged as a "Reconciler
// error" it was noise, and the rate limiter's backoff delayed the retry.
func requeueOnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return res, err
}

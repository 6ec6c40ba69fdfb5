// Package teardown knows when a namespace is being deleted. While it is,
// the namespace controller deletes the FlinkClusters' children in no
// particular order, often before the FlinkClusters themselves: a JobManager
// Deployment vanishes under a cluster not yet marked for deletion. Nothing
// there is news to report, and the API server refuses new Events in a
// terminating namespace anyway (each refusal an error line in the log, and
// client-go's later attempt to finish the Event's series a 404).
package teardown

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// namespaceMeta is a Namespace's metadata only: the cache keeps no spec or
// status of the platform's namespaces.
func namespaceMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return m
}

// Watch registers the informer of Namespace metadata with the cache, so it
// syncs with the rest before the controllers start and Terminating reads
// memory, not the API server.
func Watch(ctx context.Context, c cache.Informers) error {
	_, err := c.GetInformer(ctx, namespaceMeta())
	return err
}

// Terminating reports whether namespace is being deleted. A namespace the
// cache does not hold is not: it may be new, its watch event behind that
// of a FlinkCluster created in it (a namespace is gone only once its
// FlinkClusters are). A read that fails says no too: the Event is then
// recorded, as before.
func Terminating(ctx context.Context, r client.Reader, namespace string) bool {
	if namespace == "" {
		return false
	}
	ns := namespaceMeta()
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return false
	}
	return ns.DeletionTimestamp != nil
}

// Recorder records through next every Event but those about an object in a
// terminating namespace, which it logs at V(1) instead: they would be
// refused, and would go with the namespace if they were not.
func Recorder(next recorder.EventRecorder, r client.Reader) recorder.EventRecorder {
	return quiet{next: next, r: r}
}

type quiet struct {
	next recorder.EventRecorder
	r    client.Reader
}

// readTimeout bounds the cache read; an Event is never worth a stall.
const readTimeout = time.Second

func (q quiet) dropped(regarding runtime.Object, reason string) bool {
	obj, err := meta.Accessor(regarding)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	if !Terminating(ctx, q.r, obj.GetNamespace()) {
		return false
	}
	logf.Log.WithName("events").V(1).Info("Not recording an Event: its namespace is being deleted",
		"namespace", obj.GetNamespace(), "name", obj.GetName(), "reason", reason)
	return true
}

func (q quiet) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if !q.dropped(regarding, reason) {
		q.next.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
}

func (q quiet) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	if !q.dropped(regarding, reason) {
		q.next.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
	}
}

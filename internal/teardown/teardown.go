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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// A GET of one namespace: granted by a ClusterRole, or by a Role in that
// namespace (the API server authorizes GET /api/v1/namespaces/{name} as a
// request in namespace {name}), so it also works with WATCH_NAMESPACE.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// remember is how long a namespace found terminating is taken to be so
// without asking again; a namespace never stops terminating, it is gone.
const remember = 30 * time.Second

// readTimeout bounds the read; an Event or a probe is never worth a stall.
const readTimeout = 2 * time.Second

// Checker says whether a namespace is being deleted. It asks the API
// server only when asked (a failed probe, an Event): no informer, so
// nothing to list or watch cluster-wide, and no cache whose sync could hold
// the operator's start. A namespace found terminating is remembered for a
// while; one that is not is asked again next time.
type Checker struct {
	// Reader reads the namespace: the manager's API reader.
	Reader client.Reader
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu          sync.Mutex
	terminating map[string]time.Time // namespace -> remembered until
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Terminating reports whether namespace has a deletion timestamp. A read
// that fails (the namespace not found, the right missing, the API server
// away) says no: the probe or the Event then goes ahead, as without it.
func (c *Checker) Terminating(ctx context.Context, namespace string) bool {
	if c == nil || namespace == "" {
		return false
	}
	now := c.now()
	c.mu.Lock()
	until, ok := c.terminating[namespace]
	c.mu.Unlock()
	if ok && now.Before(until) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil || ns.DeletionTimestamp == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terminating == nil {
		c.terminating = map[string]time.Time{}
	}
	for k, t := range c.terminating {
		if !now.Before(t) {
			delete(c.terminating, k)
		}
	}
	c.terminating[namespace] = now.Add(remember)
	return true
}

// Recorder records through next every Event but those about an object in a
// terminating namespace, which it logs at V(1) instead: they would be
// refused, and would go with the namespace if they were not.
func Recorder(next recorder.EventRecorder, c *Checker) recorder.EventRecorder {
	return quiet{next: next, c: c}
}

type quiet struct {
	next recorder.EventRecorder
	c    *Checker
}

func (q quiet) dropped(regarding runtime.Object, reason string) bool {
	obj, err := meta.Accessor(regarding)
	if err != nil || !q.c.Terminating(context.Background(), obj.GetNamespace()) {
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

package readiness

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/datapilot/datapilot/internal/resources"
)

// Pod is what the operator keeps of a Flink pod: what the counting reads
// and what names the pod. A whole corev1.Pod is 1.2 KB before anything is
// set in it, and the cache holds three or more per cluster (measured by
// `make bench`: at 1200 clusters the pods were the largest thing in the
// heap); the reads that need a whole pod (a job's jar upload, the
// autopilot's capacity) go to the API server.
type Pod struct {
	metav1.TypeMeta
	// Name, namespace, UID, resourceVersion, creation and deletion only.
	metav1.ObjectMeta
	// Cluster, Component and Revision are the pod's instance, component
	// and controller-revision-hash labels.
	Cluster, Component, Revision string
	// Ready: the pod's Ready condition is True, since ReadySince (its
	// last transition, as the kubelet recorded it).
	Ready      bool
	ReadySince metav1.Time
	// UnreadySince: the last transition of a Ready condition that is not
	// True (zero when the pod has none yet, or is ready).
	UnreadySince metav1.Time
}

// DeepCopyObject makes Pod a runtime.Object, as informers and event
// handlers need.
func (p *Pod) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// Slim is what the cache keeps of a pod.
func Slim(p *corev1.Pod) *Pod {
	out := &Pod{
		Cluster: p.Labels[resources.LabelInstance], Component: p.Labels[resources.LabelComponent],
		Revision: p.Labels[appsv1.ControllerRevisionHashLabelKey],
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type != corev1.PodReady:
		case c.Status == corev1.ConditionTrue:
			out.Ready, out.ReadySince = true, c.LastTransitionTime
		default:
			out.UnreadySince = c.LastTransitionTime
		}
	}
	out.Name, out.Namespace, out.ResourceVersion, out.UID = p.Name, p.Namespace, p.ResourceVersion, p.UID
	out.CreationTimestamp, out.DeletionTimestamp = p.CreationTimestamp, p.DeletionTimestamp
	return out
}

// byCluster is the index of the pods by namespace and cluster.
const byCluster = "cluster"

// Cache holds the Flink pods (those labelled managed by Datapilot) as Pods,
// indexed by cluster: one informer per watched namespace, or one for all.
// controller-runtime's cache keeps the type it lists, a whole corev1.Pod
// however little of it a transform leaves; this one keeps a Pod. It is a
// manager.Runnable that runs on every replica, as caches do.
type Cache struct {
	informers []toolscache.SharedIndexInformer
}

// NewCache builds the pod cache of namespaces (all of them when none),
// narrowed by fieldSelector when it is not nil (the ignored namespaces). A
// nil httpClient is one built from cfg; the manager's shares its
// connections.
func NewCache(cfg *rest.Config, httpClient *http.Client, namespaces []string, fieldSelector fields.Selector) (*Cache, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	var err error
	if httpClient == nil {
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("client for the pod cache: %w", err)
		}
	}
	core, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("client for the pod cache: %w", err)
	}
	// One informer per namespace: a namespace named twice would count
	// each of its pods twice.
	namespaces = slices.Compact(slices.Sorted(slices.Values(namespaces)))
	if len(namespaces) == 0 || slices.Contains(namespaces, metav1.NamespaceAll) {
		namespaces = []string{metav1.NamespaceAll}
	}
	selector := labels.Set{resources.LabelManagedBy: resources.ManagedBy}.String()
	c := &Cache{}
	for _, ns := range namespaces {
		lw := toolscache.NewFilteredListWatchFromClient(core.RESTClient(), "pods", ns, func(o *metav1.ListOptions) {
			o.LabelSelector = selector
			if fieldSelector != nil {
				o.FieldSelector = fieldSelector.String()
			}
		})
		inf := toolscache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, toolscache.SharedIndexInformerOptions{
			Indexers: toolscache.Indexers{byCluster: indexCluster},
		})
		if err := inf.SetTransform(slimTransform); err != nil {
			return nil, err
		}
		c.informers = append(c.informers, inf)
	}
	return c, nil
}

// slimTransform stores a Slim pod. A tombstone's object has been through
// it already.
func slimTransform(in any) (any, error) {
	if p, ok := in.(*corev1.Pod); ok {
		return Slim(p), nil
	}
	return in, nil
}

func indexCluster(obj any) ([]string, error) {
	if p, ok := obj.(*Pod); ok && p.Cluster != "" {
		return []string{p.Namespace + "/" + p.Cluster}, nil
	}
	return nil, nil
}

// Start runs the informers until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	for _, inf := range c.informers {
		go inf.RunWithContext(ctx)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection: every replica keeps its cache.
func (c *Cache) NeedLeaderElection() bool { return false }

// Pods are one cluster's pods, copies. Before the cache has synced they
// may be none: the workloads' status alone counts then.
func (c *Cache) Pods(namespace, cluster string) []Pod {
	if c == nil {
		return nil
	}
	var out []Pod
	for _, inf := range c.informers {
		// Only an unknown index errs, and byCluster is always there.
		items, _ := inf.GetIndexer().ByIndex(byCluster, namespace+"/"+cluster)
		for _, it := range items {
			out = append(out, *it.(*Pod))
		}
	}
	return out
}

// Source is the controller's watch of the pods: h sees *Pod. Its workers
// start once the pods are listed, so a first count is not made from an
// empty cache.
func (c *Cache) Source(h handler.EventHandler, preds ...predicate.Predicate) source.SyncingSource {
	return podSource{c: c, h: h, preds: preds}
}

type podSource struct {
	c     *Cache
	h     handler.EventHandler
	preds []predicate.Predicate
}

func (s podSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	for _, inf := range s.c.informers {
		src := &source.Informer{Informer: inf, Handler: s.h, Predicates: s.preds}
		if err := src.Start(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (s podSource) WaitForSync(ctx context.Context) error {
	synced := make([]toolscache.InformerSynced, len(s.c.informers))
	for i, inf := range s.c.informers {
		synced[i] = inf.HasSynced
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("the pod cache did not sync: %w", ctx.Err())
	}
	return nil
}

func (s podSource) String() string { return "pods (readiness.Cache)" }

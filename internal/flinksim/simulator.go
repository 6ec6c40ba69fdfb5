package flinksim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// Options configure a Simulator.
type Options struct {
	// ListenAddr is where the simulator serves; "127.0.0.1:0" picks a free
	// port (see Addr). Default 127.0.0.1:8089.
	ListenAddr string
	// Namespaces limits the watch; empty means all.
	Namespaces []string
	// Engine tunes the simulated durations.
	Engine EngineOptions
	// Log receives the simulator's logs; the zero value discards them.
	Log logr.Logger
}

// Simulator is the Flink REST simulator: an Engine fed by a watch on the
// Flink pods and FlinkClusters of a Kubernetes API server, served over HTTP.
// Its Engine methods are the in-process fault injection API.
type Simulator struct {
	*Engine
	cfg  *rest.Config
	opts Options
	ln   net.Listener
	log  logr.Logger
}

// New creates a simulator and binds its listener, so Addr is known before
// Start. A nil cfg serves without watching: the caller feeds Observe.
func New(cfg *rest.Config, opts Options) (*Simulator, error) {
	if opts.ListenAddr == "" {
		opts.ListenAddr = "127.0.0.1:8089"
	}
	ln, err := net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("Flink REST simulator: listening on %s: %w", opts.ListenAddr, err)
	}
	return &Simulator{
		Engine: NewEngine(opts.Engine), cfg: cfg, opts: opts, ln: ln,
		log: opts.Log.WithName("flink-rest-simulator"),
	}, nil
}

// Addr is the address the simulator listens on.
func (s *Simulator) Addr() string { return s.ln.Addr().String() }

// BaseURLTemplate is the Flink REST base URL template for the operator's
// flink.Resolver Override.
func (s *Simulator) BaseURLTemplate() string {
	return "http://" + s.Addr() + "/clusters/{namespace}/{name}"
}

// Handler serves the simulated REST and admin APIs.
func (s *Simulator) Handler() http.Handler { return NewHandler(s.Engine, s.log) }

// Start watches the API server (when New had a config) and serves until
// ctx is done or serving fails.
func (s *Simulator) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	if s.cfg != nil {
		if err := s.watch(ctx, errc); err != nil {
			_ = s.ln.Close()
			return err
		}
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("Flink REST simulator: serving: %w", err)
		}
	}()
	s.log.Info("Flink REST simulator serving", "addr", s.Addr(), "baseURLTemplate", s.BaseURLTemplate())
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shutdown)
	return err
}

// watch starts a label-filtered cache of Flink pods and FlinkClusters, and
// one worker that turns their changes into Observations. A single worker
// keeps observations of a cluster in order: two stale reads applied out of
// order would look like a lost TaskManager and restart jobs.
func (s *Simulator) watch(ctx context.Context, errc chan<- error) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return err
	}
	opts := cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(s.opts.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.opts.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(s.cfg, opts)
	if err != nil {
		return fmt.Errorf("Flink REST simulator: creating the cache: %w", err)
	}
	queue := workqueue.NewTyped[ClusterKey]()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	enqueue := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		switch o := obj.(type) {
		case *corev1.Pod:
			if name := o.Labels[resources.LabelInstance]; name != "" {
				queue.Add(ClusterKey{Namespace: o.Namespace, Name: name})
			}
		case *v1.FlinkCluster:
			queue.Add(ClusterKey{Namespace: o.Namespace, Name: o.Name})
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &v1.FlinkCluster{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("Flink REST simulator: informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			errc <- fmt.Errorf("Flink REST simulator: cache: %w", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("Flink REST simulator: cache did not sync")
	}
	go func() {
		for {
			k, shutdown := queue.Get()
			if shutdown {
				return
			}
			if err := s.sync(ctx, c, k); err != nil {
				s.log.Error(err, "Flink REST simulator: observing cluster", "cluster", k.String())
			}
			queue.Done(k)
		}
	}()
	return nil
}

// sync reads one cluster's FlinkCluster and pods from the cache and feeds
// the Engine.
func (s *Simulator) sync(ctx context.Context, c cache.Cache, k ClusterKey) error {
	var fc v1.FlinkCluster
	err := c.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, &fc)
	if apierrors.IsNotFound(err) {
		s.Forget(k)
		s.log.V(1).Info("Flink REST simulator: forgot cluster", "cluster", k.String())
		return nil
	}
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(k.Namespace),
		client.MatchingLabels{resources.LabelInstance: k.Name, resources.LabelManagedBy: resources.ManagedBy}); err != nil {
		return err
	}
	o := ObservationFor(&fc, pods.Items)
	s.Observe(k, o)
	s.log.V(1).Info("Flink REST simulator: observed cluster", "cluster", k.String(),
		"jobManagerReady", o.JobManagerReady, "version", o.Version, "taskManagers", len(o.TaskManagerUIDs), "slotsPerTaskManager", o.SlotsPerTaskManager)
	return nil
}

// ObservationFor derives what the simulated Flink sees from a cluster's
// pods: the leading JobManager is the oldest Ready one; its container image
// tag is the Flink version.
func ObservationFor(fc *v1.FlinkCluster, pods []corev1.Pod) Observation {
	o := Observation{SlotsPerTaskManager: int(fc.Spec.TaskManager.Slots)}
	if o.SlotsPerTaskManager <= 0 {
		o.SlotsPerTaskManager = 1
	}
	var jms []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if !podReady(p) {
			continue
		}
		switch p.Labels[resources.LabelComponent] {
		case resources.ComponentJobManager:
			jms = append(jms, p)
		case resources.ComponentTaskManager:
			o.TaskManagerUIDs = append(o.TaskManagerUIDs, string(p.UID))
		}
	}
	sort.Slice(jms, func(i, j int) bool {
		a, b := jms[i], jms[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	o.Version = fc.Spec.Version
	if len(jms) > 0 {
		o.JobManagerReady, o.JobManagerUID = true, string(jms[0].UID)
		o.Version = podFlinkVersion(jms[0], o.Version)
	}
	return o
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podFlinkVersion is the version in the JobManager container's image tag
// (flink:1.18.1-scala_2.12 -> 1.18.1), else the pod's version label, else
// fallback.
func podFlinkVersion(p *corev1.Pod, fallback string) string {
	var image string
	for _, c := range p.Spec.Containers {
		if c.Name == resources.ComponentJobManager || image == "" {
			image = c.Image
		}
	}
	if v := ImageVersion(image); v != "" {
		return v
	}
	if v := p.Labels[resources.LabelVersion]; v != "" {
		return v
	}
	return fallback
}

// ImageVersion extracts a major.minor.patch version from an image tag, or
// "" when the tag has none (latest, a digest, no tag).
func ImageVersion(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return ""
	}
	tag := image[colon+1:]
	end := 0
	for end < len(tag) && (tag[end] >= '0' && tag[end] <= '9' || tag[end] == '.') {
		end++
	}
	v := strings.TrimRight(tag[:end], ".")
	if strings.Count(v, ".") != 2 || strings.Contains(v, "..") {
		return ""
	}
	return v
}

package flinksim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
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
// Flink pods and ConfigMaps of a Kubernetes API server, served over HTTP.
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

// PodURLTemplate is the REST base URL template of one JobManager pod, for
// the operator's flink.Resolver PodOverride.
func (s *Simulator) PodURLTemplate() string {
	return s.BaseURLTemplate() + "/pods/{pod}"
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
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(conn net.Conn, state http.ConnState) {
			if state == http.StateClosed || state == http.StateHijacked {
				s.ConnClosed(conn.RemoteAddr().String())
			}
		}}
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

// watch starts a label-filtered cache of Flink pods and their ConfigMaps,
// and one worker that turns their changes into Observations. A single
// worker keeps observations of a cluster in order: two stale reads applied
// out of order would look like a lost TaskManager and restart jobs.
func (s *Simulator) watch(ctx context.Context, errc chan<- error) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	managed := labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})
	opts := cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:       {Label: managed},
			&corev1.ConfigMap{}: {Label: managed},
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
		if o, ok := obj.(client.Object); ok {
			if name := o.GetLabels()[resources.LabelInstance]; name != "" {
				queue.Add(ClusterKey{Namespace: o.GetNamespace(), Name: name})
			}
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.ConfigMap{}} {
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

// sync reads one cluster's pods and the ConfigMaps they mount from the
// cache and feeds the Engine. The simulator knows a cluster only by its
// pods, as Flink does: not by the FlinkCluster.
func (s *Simulator) sync(ctx context.Context, c cache.Cache, k ClusterKey) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(k.Namespace),
		client.MatchingLabels{resources.LabelInstance: k.Name, resources.LabelManagedBy: resources.ManagedBy}); err != nil {
		return err
	}
	configMaps := map[string]*corev1.ConfigMap{}
	for i := range pods.Items {
		for _, v := range pods.Items[i].Spec.Volumes {
			if v.ConfigMap == nil || configMaps[v.ConfigMap.Name] != nil {
				continue
			}
			var cm corev1.ConfigMap
			err := c.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: v.ConfigMap.Name}, &cm)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			configMaps[cm.Name] = &cm
		}
	}
	o := ObservationFor(pods.Items, configMaps)
	s.Observe(k, o)
	s.log.V(1).Info("Flink REST simulator: observed cluster", "cluster", k.String(),
		"jobManagers", len(o.JobManagers), "taskManagers", len(o.TaskManagers))
	return nil
}

// ObservationFor derives what the simulated processes see from a
// cluster's pods and the ConfigMaps (by name) they mount.
func ObservationFor(pods []corev1.Pod, configMaps map[string]*corev1.ConfigMap) Observation {
	var o Observation
	for i := range pods {
		p := &pods[i]
		switch p.Labels[resources.LabelComponent] {
		case resources.ComponentJobManager:
			o.JobManagers = append(o.JobManagers, podFor(p, resources.ComponentJobManager, configMaps))
		case resources.ComponentTaskManager:
			o.TaskManagers = append(o.TaskManagers, podFor(p, resources.ComponentTaskManager, configMaps))
		}
	}
	return o
}

// podFor reads one pod: the Flink container (named for its component,
// else the first), its environment, and its mounts: a ConfigMap at
// /opt/flink/conf is the configuration Flink reads, a
// PersistentVolumeClaim outlives the pod, anything else dies with it.
func podFor(p *corev1.Pod, component string, configMaps map[string]*corev1.ConfigMap) Pod {
	out := Pod{
		UID: string(p.UID), Name: p.Name, Created: p.CreationTimestamp.Time,
		Running: p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning, Env: map[string]string{},
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready = out.Running && c.Status == corev1.ConditionTrue
		}
	}
	if len(p.Spec.Containers) == 0 {
		return out
	}
	ctr := p.Spec.Containers[0]
	for _, c := range p.Spec.Containers {
		if c.Name == component {
			ctr = c
		}
	}
	out.Image = ctr.Image
	for _, e := range ctr.Env {
		if e.ValueFrom == nil {
			out.Env[e.Name] = e.Value
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range ctr.VolumeMounts {
		v := volumes[m.Name]
		if path.Clean(m.MountPath) == resources.ConfDir && v.ConfigMap != nil {
			cm := configMaps[v.ConfigMap.Name]
			if cm == nil {
				out.ConfMissing = v.ConfigMap.Name
				continue
			}
			out.Conf = configMapFiles(cm, v.ConfigMap.Items)
			continue
		}
		mount := Mount{Path: m.MountPath}
		if v.PersistentVolumeClaim != nil {
			mount.Claim = v.PersistentVolumeClaim.ClaimName
		}
		out.Mounts = append(out.Mounts, mount)
	}
	return out
}

// configMapFiles are the files a ConfigMap volume shows: every key, or the
// listed items at their paths.
func configMapFiles(cm *corev1.ConfigMap, items []corev1.KeyToPath) map[string]string {
	files := map[string]string{}
	if len(items) == 0 {
		for k, v := range cm.Data {
			files[k] = v
		}
		return files
	}
	for _, it := range items {
		if v, ok := cm.Data[it.Key]; ok {
			files[it.Path] = v
		}
	}
	return files
}

package flinksim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

	readsMu sync.Mutex
	reads   ReadStats
}

// ReadStats are the watch's namespace reads so far. How late a change is
// seen follows from them (readPace): the bench reports them, since that
// delay lies on the operator's path to a running Flink, not the baseline's.
type ReadStats struct {
	Count          int
	Total, Longest time.Duration
}

// ReadStats returns the namespace reads so far.
func (s *Simulator) ReadStats() ReadStats {
	s.readsMu.Lock()
	defer s.readsMu.Unlock()
	return s.reads
}

func (r ReadStats) String() string {
	if r.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("%d / %s / %s", r.Count, (r.Total / time.Duration(r.Count)).Round(time.Microsecond), r.Longest.Round(time.Microsecond))
}

func (s *Simulator) noteRead(d time.Duration) {
	s.readsMu.Lock()
	defer s.readsMu.Unlock()
	s.reads.Count++
	s.reads.Total += d
	s.reads.Longest = max(s.reads.Longest, d)
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
// flink.Resolver Override: the JobManager Service its default address
// names, reached at RESTPort.
func (s *Simulator) BaseURLTemplate() string {
	return "http://" + s.Addr() + "/clusters/{namespace}/{service}"
}

// PodURLTemplate is the REST base URL template of one JobManager pod, for
// the operator's flink.Resolver PodOverride: its name and UID, as a pod's
// IP names one incarnation of it (the handler's podAddress).
func (s *Simulator) PodURLTemplate() string {
	return s.BaseURLTemplate() + "/pods/{pod}@{uid}"
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

// watch starts a cache of the pods, Services and ConfigMaps of the watched
// namespaces, and one worker that turns a namespace's changes into the
// Observations of its clusters. Every pod is watched, whoever made it: a
// pod is a Flink process by its container's entrypoint argument, and which
// cluster it belongs to follows from its configuration and the Services,
// not from labels. A single worker keeps observations in order: two stale
// reads applied out of order would look like a lost TaskManager and
// restart jobs. Events of a namespace coalesce while the worker is busy.
func (s *Simulator) watch(ctx context.Context, errc chan<- error) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	opts := cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()}
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
	access, err := newAccessReviewer(s.cfg, accessTTL)
	if err != nil {
		return err
	}
	queue := workqueue.NewTypedDelayingQueue[string]()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	enqueue := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if o, ok := obj.(client.Object); ok {
			queue.Add(o.GetNamespace())
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.ConfigMap{}, &corev1.Service{}} {
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
	w := &watcher{sim: s, cache: c, access: access, last: map[string]map[ClusterKey]observed{}, tmKeys: map[string]map[string]ClusterKey{}}
	var pace readPace
	go func() {
		for {
			ns, shutdown := queue.Get()
			if shutdown {
				return
			}
			if wait := pace.wait(ns, time.Now()); wait > 0 {
				queue.AddAfter(ns, wait)
				queue.Done(ns)
				continue
			}
			start := time.Now()
			again, err := w.sync(ctx, ns)
			end := time.Now()
			pace.read(ns, start, end)
			s.noteRead(end.Sub(start))
			if err != nil {
				s.log.Error(err, "Flink REST simulator: observing namespace", "namespace", ns)
			}
			if again {
				// A refused ServiceAccount may be granted: ask again once
				// the cached answer expires.
				queue.AddAfter(ns, accessTTL)
			}
			queue.Done(ns)
		}
	}()
	return nil
}

// readPace spaces the reads of a namespace. A namespace is read whole at
// every change in it: with a thousand clusters in one namespace a read
// takes a good part of a core, changes arrive faster than it ends, and the
// worker would read back to back for as long as they come, taking the CPU
// of the control plane it watches (65 % of the bench process's CPU in
// profiles at N = 400, a seventh of the machine's). So a namespace is read
// again no sooner than its last read took, at most maxRest: half the
// worker's time at most for one namespace, and a change in it is observed
// about three of its reads late at most (one under way, the rest, the
// next), plus the reads of other namespaces queued ahead. A read is timed
// by the clock, not the CPU: the ServiceAccount reviews it may wait for
// count too, hence the bound. No Flink class is followed here: this is
// when the simulator learns of Kubernetes objects, not what a Flink
// process does once started (Engine.Observe and what it calls decide
// that). It makes the simulator later, and kinder in one way only: a pod
// that runs and is gone again within one rest starts no process, where
// Flink would have run one for that moment (within one read, the same
// held before). Only the watch's one worker uses it.
type readPace map[string]time.Time

// maxRest bounds a namespace's rest after a read slowed by something other
// than its size (API round trips, a busy machine).
const maxRest = time.Second

// wait is how long the namespace still rests at now.
func (p *readPace) wait(ns string, now time.Time) time.Duration {
	return max(0, (*p)[ns].Sub(now))
}

// read notes a read of the namespace from start to end: it rests as long,
// up to maxRest.
func (p *readPace) read(ns string, start, end time.Time) {
	if *p == nil {
		*p = readPace{}
	}
	(*p)[ns] = end.Add(min(end.Sub(start), maxRest))
}

// accessTTL is how long an answer about a ServiceAccount's rights is kept.
const accessTTL = 5 * time.Second

// watcher turns a namespace's objects into Observations, feeding the
// Engine only the clusters whose observation changed.
type watcher struct {
	sim    *Simulator
	cache  cache.Cache
	access *accessReviewer
	confs  confCache
	last   map[string]map[ClusterKey]observed
	tmKeys map[string]map[string]ClusterKey
}

// observed is an Observation as last fed, to compare with the next.
type observed struct {
	o     Observation
	dials []string
}

// sync observes one namespace. again says a JobManager was refused its
// Kubernetes HA rights.
func (w *watcher) sync(ctx context.Context, ns string) (again bool, err error) {
	v := namespaceView{namespace: ns, configMaps: map[string]*corev1.ConfigMap{}}
	var pods corev1.PodList
	var svcs corev1.ServiceList
	var cms corev1.ConfigMapList
	// The cache's own objects, not copies: a namespace is read whole at
	// every change in it, and copying its pods was over a third of this
	// sync's CPU at a thousand clusters. How the simulator reads
	// Kubernetes, not a Flink behaviour: what it observes is the same
	// either way. Nothing here writes to
	// them: observeNamespace copies what the Engine keeps into its own
	// types, except the network, which keeps pointers to the pods and
	// Services and only reads them (Dial); an update replaces a cached
	// object rather than changing it.
	for _, l := range []client.ObjectList{&pods, &svcs, &cms} {
		if err := w.cache.List(ctx, l, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
	}
	v.pods, v.services = pods.Items, svcs.Items
	for i := range cms.Items {
		v.configMaps[cms.Items[i].Name] = &cms.Items[i]
	}
	g := observeNamespace(v, func(namespace, sa string, verbs []string) string {
		msg := w.access.review(ctx, namespace, sa, verbs)
		again = again || msg != ""
		return msg
	}, &w.confs, w.tmKeys[ns])
	w.tmKeys[ns] = g.tmKeys
	w.sim.ObserveGateways(ns, g.gateways, g.net)
	prev := w.last[ns]
	next := map[ClusterKey]observed{}
	for k, o := range g.clusters {
		ob := observed{o: o, dials: g.dials[k]}
		next[k] = ob
		if p, ok := prev[k]; ok && sameObservation(p, ob) {
			continue
		}
		w.sim.Observe(k, o)
		w.sim.log.V(1).Info("Flink REST simulator: observed cluster", "cluster", k.String(),
			"jobManagers", len(o.JobManagers), "taskManagers", len(o.TaskManagers))
	}
	for k := range prev {
		if _, ok := next[k]; !ok {
			w.sim.Observe(k, Observation{})
		}
	}
	w.last[ns] = next
	return again, nil
}

func sameObservation(a, b observed) bool {
	ao, bo := a.o, b.o
	ao.Network, bo.Network = nil, nil
	return reflect.DeepEqual(ao, bo) && reflect.DeepEqual(a.dials, b.dials)
}

package operator

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/health"
	"github.com/datapilot/datapilot/internal/pacing"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/sharding"
	"github.com/datapilot/datapilot/internal/teardown"
)

// Scheme holds every type the operator reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1.AddToScheme(s); err != nil {
		panic(err)
	}
	// v1alpha1 is only ever converted, by the conversion webhook; the
	// CRD is read when its caBundle is injected.
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// ignoring selects objects outside the namespaces given; nil for none.
func ignoring(namespaces []string) fields.Selector {
	if len(namespaces) == 0 {
		return nil
	}
	var out []fields.Selector
	for _, ns := range namespaces {
		out = append(out, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return fields.AndSelectors(out...)
}

// NewManager builds the manager with the FlinkCluster controller registered.
func NewManager(cfg *rest.Config, o Options) (manager.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logOpts := []zap.Opts{zap.Level(zapLevel(o.LogLevel))}
	if o.LogOutput != nil {
		logOpts = append(logOpts, zap.WriteTo(o.LogOutput))
	}
	logger := zap.New(logOpts...)
	ctrl.SetLogger(logger)
	if o.LogOutput != nil {
		// client-go logs through klog (warnings, leader election): to
		// the same place, not the terminal.
		klog.SetLogger(logger)
	}

	// Only Datapilot's children enter the cache, without managedFields,
	// the workloads without their pod specs (slimWorkloads); the pods have
	// a cache of their own (readiness.Cache): memory follows the number of
	// clusters, not the size of the platform.
	managed := labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})
	cacheOpts := cache.Options{
		DefaultTransform: stripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:            {Label: managed, Transform: slimWorkloads()},
			&appsv1.StatefulSet{}:           {Label: managed, Transform: slimWorkloads()},
			&corev1.Service{}:               {Label: managed},
			&corev1.ConfigMap{}:             {Label: managed},
			&policyv1.PodDisruptionBudget{}: {Label: managed},
			&corev1.ServiceAccount{}:        {Label: managed},
			&rbacv1.Role{}:                  {Label: managed},
			&rbacv1.RoleBinding{}:           {Label: managed},
			&networkingv1.NetworkPolicy{}:   {Label: managed},
		},
	}
	if len(o.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	// Ignored namespaces are filtered out by the API server: the operator
	// never sees their clusters, so it never reconciles one.
	ignored := ignoring(o.IgnoredNamespaces)
	if ignored != nil {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{cache.AllNamespaces: {FieldSelector: ignored}}
	}
	certDir, removeCertDir := o.WebhookCertDir, false
	if o.WebhookCertMode == WebhookCertSelfSigned {
		var err error
		if certDir, removeCertDir, err = selfSignedCertDir(o); err != nil {
			return nil, err
		}
	}
	identity, err := replicaIdentity()
	if err != nil {
		return nil, err
	}
	// Answers and watch streams uncompressed: the API server (1.37 on the
	// local platform) gzips every watch event it flushes to a client that
	// accepts gzip, which in the bench's operator phase (N = 400) was 2% of
	// its CPU, and decompressing 5% of the operator's, to save bandwidth
	// between a controller and its API server, which is not what is scarce.
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	if o.Shards > 1 {
		// The audit log tells the replicas apart by their user agent.
		cfg.UserAgent = rest.DefaultKubernetesUserAgent() + " replica/" + identity
	}
	// An operator started while the API server restarts waits for it
	// (building the manager reads the server's API groups) instead of
	// exiting: up to a minute, then the error.
	mgr, err := newManagerWhenReachable(cfg, ctrl.Options{
		Scheme:                        Scheme(),
		Cache:                         cacheOpts,
		MapperProvider:                newRESTMapper,
		Metrics:                       metricsOptions(o),
		PprofBindAddress:              o.PprofAddr,
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              "datapilot.data.example.com",
		LeaderElectionNamespace:       leaderNamespace(o),
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		WebhookServer:                 webhookServer(o, certDir, removeCertDir),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	// Events about objects in a namespace being deleted are not sent, and
	// its clusters' failing probes not reported (teardown).
	terminating := &teardown.Checker{Reader: mgr.GetAPIReader()}
	// API latency and client-side throttling, which say where a slow
	// reconcile spends its time.
	restClientMetrics()
	// The pods are cached apart, as little of each as readiness reads.
	pods, err := readiness.NewCache(cfg, mgr.GetHTTPClient(), o.WatchNamespaces, ignored)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(pods); err != nil {
		return nil, fmt.Errorf("add the pod cache: %w", err)
	}
	r := &controller.Reconciler{
		Client:    mgr.GetClient(),
		Pods:      pods,
		APIReader: mgr.GetAPIReader(),
		Recorder:  teardown.Recorder(mgr.GetEventRecorder("datapilot"), terminating),
		Metrics:   metrics(),
		Resolver:  flink.Resolver{Override: o.FlinkRESTOverride, PodOverride: o.FlinkRESTPodOverride},
		Platform:  o.Platform(),
		// Per-request timeouts are set by the Flink client, and the jar
		// upload's by the jar policy. Every request is counted by endpoint
		// and status (datapilot_flink_rest_requests_total).
		HTTPClient: &http.Client{Transport: flinkRESTMetrics().Transport(flinkTransport())},
	}
	if r.Jars, err = o.JarPolicy(); err != nil {
		return nil, err
	}
	// The health poller probes Flink REST on its own interval and wakes a
	// reconcile only when a cluster's verdict changes.
	notify := make(chan event.GenericEvent, 1024)
	r.Health = health.NewTracker()
	pacer := newPacer(o)
	r.Pacer = pacer
	poller := &health.Poller{
		Reader: mgr.GetCache(), Pods: pods, Resolver: r.Resolver, HTTPClient: r.HTTPClient,
		Interval: o.ReconcileInterval, Pace: pacer, Tracker: r.Health,
		Recorder: teardown.Recorder(mgr.GetEventRecorder("datapilot-health"), terminating), Notify: notify,
		Metrics: healthMetrics(), Teardown: terminating,
	}
	r.Prober = poller
	if o.Shards > 1 {
		sharder, err := newSharder(mgr, cfg, o, identity, r.Metrics)
		if err != nil {
			return nil, err
		}
		r.Shards, poller.Owns = sharder, sharder.Owns
	}
	if err := mgr.Add(poller); err != nil {
		return nil, fmt.Errorf("add health poller: %w", err)
	}
	if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles, notify); err != nil {
		return nil, fmt.Errorf("set up FlinkCluster controller: %w", err)
	}
	if err := setUpConversion(mgr, o, certDir); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// newSharder adds the shard elections to the manager (internal/sharding).
func newSharder(mgr manager.Manager, cfg *rest.Config, o Options, identity string, m *controller.Metrics) (*sharding.Sharder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the shard leases: %w", err)
	}
	led := shardMetric()
	s := &sharding.Sharder{
		Shards: o.Shards, Replicas: o.Replicas, Namespace: leaderNamespace(o), Identity: identity,
		Leases:        cs.CoordinationV1(),
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Reader: mgr.GetCache(), WaitForSync: mgr.GetCache().WaitForCacheSync,
	}
	// A lost shard's clusters leave this replica's phase counts.
	s.OnChange = func(n int) {
		led.Set(float64(n))
		m.Retain(s.Owns)
	}
	if err := mgr.Add(s); err != nil {
		return nil, fmt.Errorf("add shard elections: %w", err)
	}
	return s, nil
}

// replicaIdentity names this replica in the leases: POD_NAME, else the
// host (in a pod, the pod's name), and a random suffix, as
// controller-runtime names its leader. Processes on one host (the bench,
// the e2e tier) tell themselves apart with POD_NAME.
func replicaIdentity() (string, error) {
	host := os.Getenv("POD_NAME")
	if host == "" {
		var err error
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("replica identity: %w", err)
		}
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// metricsOptions serve /metrics, behind the API server's authentication
// and authorization unless o says otherwise, as kubebuilder's scaffold
// does (metricsAuth): the metrics name every cluster and its state. The
// serving certificate is self-signed (controller-runtime generates it).
func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = metricsAuth
	}
	return m
}

// newPacer is the adaptive Flink polling interval, with its one log line
// per change.
func newPacer(o Options) *pacing.Pacer {
	log := ctrl.Log.WithName("pacing")
	return &pacing.Pacer{
		Base: o.ReconcileInterval, Degraded: o.DegradedReconcileInterval, Threshold: o.SlowReconcileThreshold,
		Metrics: pacingMetrics(),
		OnChange: func(degraded bool, p95, interval time.Duration) {
			if degraded {
				log.Info("Reconciles are slow; polling Flink less often", "p95", p95, "threshold", o.SlowReconcileThreshold, "interval", interval)
				return
			}
			log.Info("Reconciles are fast again; polling Flink at the reconcile interval", "p95", p95, "threshold", o.SlowReconcileThreshold, "interval", interval)
		},
	}
}

// metrics are registered once per process: tests and the local platform may
// build more than one manager, and a collector registers only once.
var (
	metrics           = sync.OnceValue(func() *controller.Metrics { return controller.NewMetrics(crmetrics.Registry) })
	healthMetrics     = sync.OnceValue(func() *health.Metrics { return health.NewMetrics(crmetrics.Registry) })
	restClientMetrics = sync.OnceFunc(func() {
		crmetrics.RegisterRESTClientMetrics(crmetrics.MetricRequestLatency, crmetrics.MetricRateLimiterLatency)
	})
	shardMetric = sync.OnceValue(func() prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "datapilot_shards_led", Help: "Shards (FlinkCluster leases) this replica leads."})
		crmetrics.Registry.MustRegister(g)
		return g
	})
	pacingMetrics    = sync.OnceValue(func() *pacing.Metrics { return pacing.NewMetrics(crmetrics.Registry) })
	flinkRESTMetrics = sync.OnceValue(func() *flink.RESTMetrics { return flink.NewRESTMetrics(crmetrics.Registry) })
)

// Run starts the operator and blocks until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("datapilot").Info("Starting operator",
		"watchNamespaces", strings.Join(o.WatchNamespaces, ","), "ignoredNamespaces", strings.Join(o.IgnoredNamespaces, ","), "maxConcurrentReconciles", o.MaxConcurrentReconciles,
		"reconcileInterval", o.ReconcileInterval, "leaderElection", o.LeaderElection,
		"webhookCertMode", o.WebhookCertMode)
	return mgr.Start(ctx)
}

// leaderNamespace is the lease's namespace: the flag, else the pod's own
// namespace in a cluster, else kube-system for an operator run from outside.
func leaderNamespace(o Options) string {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	if raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(raw))
	}
	return "kube-system"
}

func zapLevel(l string) zapcore.Level {
	switch l {
	case "debug":
		return zapcore.DebugLevel
	case "error":
		return zapcore.ErrorLevel
	}
	return zapcore.InfoLevel
}

func newManagerWhenReachable(cfg *rest.Config, opts ctrl.Options) (ctrl.Manager, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		mgr, err := ctrl.NewManager(cfg, opts)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "connection refused") {
			return mgr, err
		}
		time.Sleep(time.Second)
	}
}

// flinkTransport is the Flink REST requests' transport: Go's default, but
// keeping as many idle connections to one host as the operator sends it
// requests at once. Where every cluster's REST API is reached through one
// host (a proxy, or the simulator through flink.Resolver's override), the
// default two made nearly every probe dial anew: 4.7 % of the operator's
// CPU at N = 1000 (its profile: Transport.dialConn). The total idle
// connections stay bounded by the default's MaxIdleConns.
func flinkTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = flinkIdlePerHost
	return t
}

// flinkIdlePerHost covers the reconcile workers and the health poller's
// probes in flight at once.
const flinkIdlePerHost = 64

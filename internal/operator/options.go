// Package operator assembles Datapilot's manager: settings, scheme, metrics
// and the FlinkCluster controller. cmd/datapilot and the local platform both
// start the operator through Run.
package operator

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/pacing"
	"github.com/datapilot/datapilot/internal/resources"
)

// Options are the operator's settings. Every one has a flag; the ones a
// platform team tunes in production also read an environment variable, which
// the flag overrides when both are given.
type Options struct {
	// LogLevel is debug, info or error (LOG_LEVEL).
	LogLevel string
	// LogOutput receives the operator's JSON logs (and klog's); nil is
	// stderr. The local platform sends them to a file.
	LogOutput io.Writer
	// ReconcileInterval is how often a cluster's Flink REST API is polled;
	// Kubernetes objects are watched, never polled (RECONCILE_INTERVAL).
	ReconcileInterval time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles (MAX_CONCURRENT_RECONCILES).
	MaxConcurrentReconciles int
	// WatchNamespaces limits the operator to these namespaces; empty means
	// all (WATCH_NAMESPACE, comma-separated).
	WatchNamespaces []string
	// IgnoredNamespaces are left alone, every other namespace watched
	// (IGNORE_NAMESPACE, comma-separated): another operator's, or a
	// measurement's. It excludes WatchNamespaces.
	IgnoredNamespaces []string
	// LeaderElection makes one replica active at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease; defaults to the pod's namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election. A
	// leader that dies without releasing its lease is replaced after at
	// most LeaseDuration + RetryPeriod (14 s by default; client-go's 15 s
	// lease measured 17–21 s to the first reconcile on a loaded machine),
	// so the new leader's first reconcile comes within 20 s. The renew
	// deadline leaves a leader 8 s of API server trouble before it steps
	// down; a graceful stop releases the lease at once.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Shards, above 1, shares the FlinkClusters among replicas: each
	// cluster belongs to one shard (a hash of namespace/name), each shard
	// is a Lease elected on its own, and a replica reconciles the clusters
	// of the shards it leads (internal/sharding). Replicas is how many
	// replicas share them; each leads its fair share first.
	Shards, Replicas int
	// SlowReconcileThreshold is the p95 of reconcile time above which the
	// Flink polling interval degrades to DegradedReconcileInterval
	// (SLOW_RECONCILE_THRESHOLD, DEGRADED_RECONCILE_INTERVAL).
	SlowReconcileThreshold, DegradedReconcileInterval time.Duration
	// FlinkHAClusterRole is the ClusterRole the Flink pods' own accounts
	// are bound to for Kubernetes HA (FLINK_HA_CLUSTER_ROLE); the operator
	// needs bind on it.
	FlinkHAClusterRole string
	// JarAllowedHosts are hosts ("host" or "host:port") job jars may be
	// fetched from although their address is refused (loopback,
	// link-local, the API server, JarDeniedCIDRs) (JAR_ALLOWED_HOSTS).
	JarAllowedHosts []string
	// JarDeniedCIDRs are further addresses jars are never fetched from,
	// such as the cluster's Service and pod ranges (JAR_DENIED_CIDRS).
	JarDeniedCIDRs []string
	// JarMaxMiB bounds a job jar; JarFetchTimeout its download and upload.
	JarMaxMiB       int
	JarFetchTimeout time.Duration
	// MetricsAddr serves Prometheus metrics; "0" disables.
	MetricsAddr string
	// MetricsSecure serves them over HTTPS to clients the API server
	// authenticates (TokenReview) and authorizes (SubjectAccessReview for
	// get on the non-resource URL /metrics). Plain HTTP without it, for a
	// loopback address on a developer's machine only.
	MetricsSecure bool
	// ProbeAddr serves /healthz and /readyz; "0" disables.
	ProbeAddr string
	// PprofAddr serves Go's /debug/pprof/ on a port of its own; "0", the
	// default, disables it: a heap profile names what a cluster costs in
	// memory, and also what the operator holds.
	PprofAddr string
	// FlinkRESTOverride, when set, is a base URL template with {namespace}
	// and {name} placeholders used instead of the JobManager Service's DNS
	// name. The local platform points it at the Flink REST simulator.
	FlinkRESTOverride string
	// FlinkRESTPodOverride, when set, is the URL template of one
	// JobManager pod's REST API, with {namespace}, {name} and {pod}, used
	// instead of the pod's IP (the simulator serves each pod's).
	FlinkRESTPodOverride string
	// StateStorageURI is the platform's shared storage for every cluster's
	// checkpoints, savepoints and HA metadata, such as s3://bucket/flink:
	// each cluster uses <uri>/<namespace>/<name>/ unless its spec.storage
	// says otherwise (STATE_STORAGE_URI).
	StateStorageURI string
	// StateStorageClaim is instead a ReadWriteMany PersistentVolumeClaim of
	// this name in each cluster's namespace, mounted into every pod
	// (STATE_STORAGE_CLAIM).
	StateStorageClaim string

	// WebhookCertMode is how the conversion webhook (/convert, which
	// serves data.example.com/v1alpha1) gets its serving certificate:
	//   none         no webhook server (the default)
	//   dir          tls.crt and tls.key from WebhookCertDir; the CRD's
	//                conversion stanza and caBundle are managed elsewhere
	//                (for example by cert-manager's CA injector)
	//   self-signed  a CA and serving certificate generated at startup; the
	//                operator points the CRD's conversion at WebhookService
	//                or WebhookURL and adds the CA to its caBundle
	WebhookCertMode string
	// WebhookPort and WebhookHost are where the webhook server listens.
	WebhookPort int
	WebhookHost string
	// WebhookCertDir holds tls.crt and tls.key. With self-signed, the
	// generated pair is written there; empty means a temporary dir.
	WebhookCertDir string
	// WebhookService is the Service the API server reaches the webhook
	// through, as namespace/name or name (then in the pod's namespace);
	// it listens on WebhookPort. Self-signed mode only.
	WebhookService string
	// WebhookURL is an https URL the API server reaches the webhook at,
	// such as https://127.0.0.1:9443/convert on a local platform; instead
	// of WebhookService. Self-signed mode only.
	WebhookURL string
}

// Webhook certificate modes.
const (
	WebhookCertNone       = "none"
	WebhookCertDir        = "dir"
	WebhookCertSelfSigned = "self-signed"
)

// Defaults returns the options with every environment variable applied.
func Defaults() (Options, error) {
	o := Options{
		LogLevel:                "info",
		ReconcileInterval:       30 * time.Second,
		MaxConcurrentReconciles: 5,
		LeaderElection:          true,
		FlinkHAClusterRole:      resources.DefaultHAClusterRole,
		JarMaxMiB:               controller.DefaultJarMaxBytes >> 20,
		JarFetchTimeout:         controller.DefaultJarTimeout,
		MetricsAddr:             ":8443",
		MetricsSecure:           true,
		ProbeAddr:               ":8081",
		PprofAddr:               "0",
		WebhookCertMode:         WebhookCertNone,
		WebhookPort:             9443,
		LeaseDuration:           12 * time.Second,
		RenewDeadline:           8 * time.Second,
		RetryPeriod:             2 * time.Second,
		Shards:                  1,
		Replicas:                1,

		SlowReconcileThreshold:    pacing.DefaultThreshold,
		DegradedReconcileInterval: pacing.DefaultDegraded,
	}
	if v := os.Getenv("LOG_LEVEL"); v != "" {
		o.LogLevel = strings.ToLower(v)
	}
	if v := os.Getenv("RECONCILE_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return o, fmt.Errorf("RECONCILE_INTERVAL %q is not a duration: %w", v, err)
		}
		o.ReconcileInterval = d
	}
	for env, dst := range map[string]*time.Duration{
		"SLOW_RECONCILE_THRESHOLD":    &o.SlowReconcileThreshold,
		"DEGRADED_RECONCILE_INTERVAL": &o.DegradedReconcileInterval,
	} {
		if v := os.Getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return o, fmt.Errorf("%s %q is not a duration: %w", env, v, err)
			}
			*dst = d
		}
	}
	if v := os.Getenv("MAX_CONCURRENT_RECONCILES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, fmt.Errorf("MAX_CONCURRENT_RECONCILES %q is not an integer: %w", v, err)
		}
		o.MaxConcurrentReconciles = n
	}
	o.WatchNamespaces = splitList(os.Getenv("WATCH_NAMESPACE"))
	o.IgnoredNamespaces = splitList(os.Getenv("IGNORE_NAMESPACE"))
	o.JarAllowedHosts = splitList(os.Getenv("JAR_ALLOWED_HOSTS"))
	if v := os.Getenv("FLINK_HA_CLUSTER_ROLE"); v != "" {
		o.FlinkHAClusterRole = v
	}
	o.JarDeniedCIDRs = splitList(os.Getenv("JAR_DENIED_CIDRS"))
	o.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
	o.FlinkRESTOverride = os.Getenv("FLINK_REST_OVERRIDE")
	o.FlinkRESTPodOverride = os.Getenv("FLINK_REST_POD_OVERRIDE")
	o.StateStorageURI = os.Getenv("STATE_STORAGE_URI")
	o.StateStorageClaim = os.Getenv("STATE_STORAGE_CLAIM")
	return o, nil
}

// BindFlags registers the options as flags, with the current values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info or error (env LOG_LEVEL).")
	fs.DurationVar(&o.ReconcileInterval, "reconcile-interval", o.ReconcileInterval, "How often each cluster's Flink REST API is polled (env RECONCILE_INTERVAL).")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "Parallel reconciles (env MAX_CONCURRENT_RECONCILES).")
	fs.Var(newListValue(&o.WatchNamespaces), "watch-namespace", "Comma-separated namespaces to watch; empty watches all (env WATCH_NAMESPACE).")
	fs.Var(newListValue(&o.IgnoredNamespaces), "ignore-namespace", "Comma-separated namespaces left alone while every other is watched; excludes --watch-namespace (env IGNORE_NAMESPACE).")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "Elect a leader so only one replica reconciles.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election lease (env POD_NAMESPACE).")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long a standby waits before taking a lease its holder stopped renewing.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it gives up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the lease.")
	fs.IntVar(&o.Shards, "shards", o.Shards, "Shares the FlinkClusters among replicas in this many shards, one Lease each; 1 runs one leader for all.")
	fs.IntVar(&o.Replicas, "shard-replicas", o.Replicas, "How many replicas share the shards (the Deployment's replicas): each leads its fair share before taking more.")
	fs.DurationVar(&o.SlowReconcileThreshold, "slow-reconcile-threshold", o.SlowReconcileThreshold, "p95 of reconcile time above which Flink polling slows to --degraded-reconcile-interval (env SLOW_RECONCILE_THRESHOLD).")
	fs.DurationVar(&o.DegradedReconcileInterval, "degraded-reconcile-interval", o.DegradedReconcileInterval, "Flink polling interval while reconciles are slow (env DEGRADED_RECONCILE_INTERVAL).")
	fs.StringVar(&o.FlinkHAClusterRole, "flink-ha-cluster-role", o.FlinkHAClusterRole, "ClusterRole with the ConfigMap rights of Flink's Kubernetes HA services, bound to each such cluster's account in its namespace; the operator needs bind on it (env FLINK_HA_CLUSTER_ROLE).")
	fs.Var(newListValue(&o.JarAllowedHosts), "jar-allowed-hosts", "Comma-separated hosts (host or host:port) job jars may be fetched from although their address is loopback, link-local or otherwise refused (env JAR_ALLOWED_HOSTS).")
	fs.Var(newListValue(&o.JarDeniedCIDRs), "jar-denied-cidrs", "Comma-separated networks job jars are never fetched from, such as the cluster's Service and pod CIDRs (env JAR_DENIED_CIDRS).")
	fs.IntVar(&o.JarMaxMiB, "jar-max-size-mib", o.JarMaxMiB, "Largest job jar the operator streams to a JobManager, in MiB.")
	fs.DurationVar(&o.JarFetchTimeout, "jar-fetch-timeout", o.JarFetchTimeout, "Deadline of a job jar's download and upload together.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve metrics over HTTPS to clients the API server authenticates and authorizes (get on /metrics); false serves plain HTTP to anyone.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of /healthz and /readyz; 0 disables it.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "Address of Go's /debug/pprof/, unauthenticated: bind it to localhost and port-forward; 0 (the default) disables it.")
	fs.StringVar(&o.WebhookCertMode, "webhook-cert-mode", o.WebhookCertMode, "Conversion webhook certificate: none (no webhook server), dir (tls.crt/tls.key from --webhook-cert-dir) or self-signed (generated; the CRD's conversion and caBundle are set by the operator).")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port of the conversion webhook server.")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "Address the conversion webhook server binds; empty means every interface.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "Directory of the webhook's tls.crt and tls.key; with self-signed, where they are written (default a temporary directory).")
	fs.StringVar(&o.WebhookService, "webhook-service", o.WebhookService, "With self-signed: the Service ([namespace/]name, on --webhook-port) the API server reaches the webhook through.")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "With self-signed: the https URL the API server reaches the webhook at, instead of --webhook-service.")
	fs.StringVar(&o.StateStorageURI, "state-storage-uri", o.StateStorageURI, "Shared storage for every cluster's checkpoints, savepoints and HA metadata, such as s3://bucket/flink; a spec's storage overrides it (env STATE_STORAGE_URI).")
	fs.StringVar(&o.StateStorageClaim, "state-storage-claim", o.StateStorageClaim, "Instead of --state-storage-uri: a ReadWriteMany PersistentVolumeClaim of this name in each cluster's namespace, mounted into every Flink pod (env STATE_STORAGE_CLAIM).")
	fs.StringVar(&o.FlinkRESTOverride, "flink-rest-override", o.FlinkRESTOverride, "Base URL template for Flink REST with {namespace} and {name}; for the local platform's simulator (env FLINK_REST_OVERRIDE).")
	fs.StringVar(&o.FlinkRESTPodOverride, "flink-rest-pod-override", o.FlinkRESTPodOverride, "URL template of one JobManager pod's Flink REST with {namespace}, {name}, {pod} and {uid} (the pod's UID: one incarnation of the name, as its IP is); for the local platform's simulator (env FLINK_REST_POD_OVERRIDE).")
}

// Validate reports settings that cannot work.
func (o Options) Validate() error {
	switch o.LogLevel {
	case "debug", "info", "error":
	default:
		return fmt.Errorf("log level %q is not one of debug, info, error", o.LogLevel)
	}
	if o.ReconcileInterval < time.Second {
		return fmt.Errorf("reconcile interval %s is below the 1s minimum", o.ReconcileInterval)
	}
	if o.SlowReconcileThreshold <= 0 {
		return fmt.Errorf("slow reconcile threshold %s must be positive", o.SlowReconcileThreshold)
	}
	// A degraded interval below RECONCILE_INTERVAL is taken as the latter
	// (pacing never polls faster when slow).
	if o.DegradedReconcileInterval <= 0 {
		return fmt.Errorf("degraded reconcile interval %s must be positive", o.DegradedReconcileInterval)
	}
	// client-go's leader election requires LeaseDuration > RenewDeadline >
	// RetryPeriod × 1.2 (its JitterFactor).
	if !(o.LeaseDuration > o.RenewDeadline && float64(o.RenewDeadline) > 1.2*float64(o.RetryPeriod) && o.RetryPeriod > 0) {
		return fmt.Errorf("leader election needs lease duration (%s) > renew deadline (%s) > 1.2 × retry period (%s)", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod)
	}
	if o.Shards < 1 || o.Replicas < 1 {
		return fmt.Errorf("shards (%d) and shard replicas (%d) must be at least 1", o.Shards, o.Replicas)
	}
	if o.Shards > 1 && !o.LeaderElection {
		return fmt.Errorf("--shards=%d needs --leader-elect: the shards are leases", o.Shards)
	}
	if len(o.WatchNamespaces) > 0 && len(o.IgnoredNamespaces) > 0 {
		return fmt.Errorf("--watch-namespace (%s) and --ignore-namespace (%s) exclude each other: list only the namespaces to watch",
			strings.Join(o.WatchNamespaces, ","), strings.Join(o.IgnoredNamespaces, ","))
	}
	if o.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("max concurrent reconciles %d must be at least 1", o.MaxConcurrentReconciles)
	}
	if err := o.validateStorage(); err != nil {
		return err
	}
	if _, err := o.JarPolicy(); err != nil {
		return err
	}
	return o.validateWebhook()
}

// JarPolicy is what the operator fetches job jars from.
func (o Options) JarPolicy() (controller.JarPolicy, error) {
	p := controller.JarPolicy{MaxBytes: int64(o.JarMaxMiB) << 20, Timeout: o.JarFetchTimeout, AllowedHosts: o.JarAllowedHosts}
	if o.JarMaxMiB < 1 || o.JarFetchTimeout <= 0 {
		return p, fmt.Errorf("jar size limit %d MiB and fetch timeout %s must be positive", o.JarMaxMiB, o.JarFetchTimeout)
	}
	for _, c := range o.JarDeniedCIDRs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return p, fmt.Errorf("jar denied CIDR %q: %w", c, err)
		}
		p.DeniedNets = append(p.DeniedNets, n)
	}
	return p, nil
}

// validateStorage holds the platform's storage to the rules admission
// holds spec.storage to.
func (o Options) validateStorage() error {
	if o.StateStorageURI != "" && o.StateStorageClaim != "" {
		return fmt.Errorf("set one of --state-storage-uri and --state-storage-claim, not both")
	}
	if o.StateStorageURI != "" {
		u, err := url.Parse(o.StateStorageURI)
		if err != nil || u.Scheme == "" || !strings.Contains(o.StateStorageURI, "://") {
			return fmt.Errorf("state storage URI %q is not a URI such as s3://bucket/flink", o.StateStorageURI)
		}
		if strings.EqualFold(u.Scheme, "file") {
			return fmt.Errorf("state storage URI %q is on each pod's own disk; give shared storage (s3://, gs://, abfss://, hdfs://, ...) or --state-storage-claim", o.StateStorageURI)
		}
	}
	if c := o.StateStorageClaim; c != "" && len(validation.IsDNS1123Subdomain(c)) > 0 {
		return fmt.Errorf("state storage claim %q is not a PersistentVolumeClaim name", c)
	}
	return nil
}

// Platform is what the settings give every cluster.
func (o Options) Platform() resources.Platform {
	p := resources.Platform{HAClusterRole: o.FlinkHAClusterRole, OperatorNamespace: os.Getenv("POD_NAMESPACE")}
	switch {
	case o.StateStorageURI != "":
		p.Storage = &v1.StorageSpec{URI: o.StateStorageURI}
	case o.StateStorageClaim != "":
		p.Storage = &v1.StorageSpec{ClaimName: o.StateStorageClaim}
	}
	return p
}

func (o Options) validateWebhook() error {
	switch o.WebhookCertMode {
	case WebhookCertNone, WebhookCertDir, WebhookCertSelfSigned:
	default:
		return fmt.Errorf("webhook cert mode %q is not one of none, dir, self-signed", o.WebhookCertMode)
	}
	if o.WebhookCertMode != WebhookCertSelfSigned {
		if o.WebhookService != "" || o.WebhookURL != "" {
			return fmt.Errorf("--webhook-service and --webhook-url need --webhook-cert-mode=self-signed")
		}
	}
	if o.WebhookCertMode == WebhookCertNone {
		return nil
	}
	if o.WebhookPort < 1 || o.WebhookPort > 65535 {
		return fmt.Errorf("webhook port %d is not between 1 and 65535", o.WebhookPort)
	}
	if o.WebhookCertMode == WebhookCertDir && o.WebhookCertDir == "" {
		return fmt.Errorf("--webhook-cert-mode=dir needs --webhook-cert-dir")
	}
	if o.WebhookCertMode == WebhookCertSelfSigned {
		if (o.WebhookService == "") == (o.WebhookURL == "") {
			return fmt.Errorf("--webhook-cert-mode=self-signed needs exactly one of --webhook-service and --webhook-url")
		}
		if o.WebhookURL != "" {
			u, err := url.Parse(o.WebhookURL)
			if err != nil || u.Scheme != "https" || u.Hostname() == "" {
				return fmt.Errorf("webhook URL %q is not an https URL with a host", o.WebhookURL)
			}
		}
		if o.WebhookService != "" {
			ns, name, ok := strings.Cut(o.WebhookService, "/")
			if !ok {
				name, ns = ns, ""
			}
			if name == "" || ok && ns == "" || strings.Contains(name, "/") {
				return fmt.Errorf("webhook service %q is not [namespace/]name", o.WebhookService)
			}
		}
	}
	return nil
}

// splitList reads a comma-separated list, blanks and repeats dropped: a
// namespace named twice is still one namespace to watch.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

type listValue struct{ dst *[]string }

func newListValue(dst *[]string) *listValue { return &listValue{dst: dst} }

func (l *listValue) String() string     { return strings.Join(*l.dst, ",") }
func (l *listValue) Set(s string) error { *l.dst = splitList(s); return nil }
func (l *listValue) Type() string       { return "strings" }

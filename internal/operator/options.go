// Package operator assembles Datapilot's manager: settings, scheme, metrics
// and the FlinkCluster controller. cmd/datapilot and the local platform both
// start the operator through Run.
package operator

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Options are the operator's settings. Every one has a flag; the ones a
// platform team tunes in production also read an environment variable, which
// the flag overrides when both are given.
type Options struct {
	// LogLevel is debug, info or error (LOG_LEVEL).
	LogLevel string
	// ReconcileInterval is how often a cluster's Flink REST API is polled;
	// Kubernetes objects are watched, never polled (RECONCILE_INTERVAL).
	ReconcileInterval time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles (MAX_CONCURRENT_RECONCILES).
	MaxConcurrentReconciles int
	// WatchNamespaces limits the operator to these namespaces; empty means
	// all (WATCH_NAMESPACE, comma-separated).
	WatchNamespaces []string
	// LeaderElection makes one replica active at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease; defaults to the pod's namespace.
	LeaderElectionNamespace string
	// MetricsAddr serves Prometheus metrics; "0" disables.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" disables.
	ProbeAddr string
	// FlinkRESTOverride, when set, is a base URL template with {namespace}
	// and {name} placeholders used instead of the JobManager Service's DNS
	// name. The local platform points it at the Flink REST simulator.
	FlinkRESTOverride string
}

// Defaults returns the options with every environment variable applied.
func Defaults() (Options, error) {
	o := Options{
		LogLevel:                "info",
		ReconcileInterval:       30 * time.Second,
		MaxConcurrentReconciles: 5,
		LeaderElection:          true,
		MetricsAddr:             ":8080",
		ProbeAddr:               ":8081",
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
	if v := os.Getenv("MAX_CONCURRENT_RECONCILES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, fmt.Errorf("MAX_CONCURRENT_RECONCILES %q is not an integer: %w", v, err)
		}
		o.MaxConcurrentReconciles = n
	}
	o.WatchNamespaces = splitList(os.Getenv("WATCH_NAMESPACE"))
	o.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
	o.FlinkRESTOverride = os.Getenv("FLINK_REST_OVERRIDE")
	return o, nil
}

// BindFlags registers the options as flags, with the current values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info or error (env LOG_LEVEL).")
	fs.DurationVar(&o.ReconcileInterval, "reconcile-interval", o.ReconcileInterval, "How often each cluster's Flink REST API is polled (env RECONCILE_INTERVAL).")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "Parallel reconciles (env MAX_CONCURRENT_RECONCILES).")
	fs.Var(newListValue(&o.WatchNamespaces), "watch-namespace", "Comma-separated namespaces to watch; empty watches all (env WATCH_NAMESPACE).")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "Elect a leader so only one replica reconciles.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election lease (env POD_NAMESPACE).")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "Address of the Prometheus metrics endpoint; 0 disables it.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "Address of /healthz and /readyz; 0 disables it.")
	fs.StringVar(&o.FlinkRESTOverride, "flink-rest-override", o.FlinkRESTOverride, "Base URL template for Flink REST with {namespace} and {name}; for the local platform's simulator (env FLINK_REST_OVERRIDE).")
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
	if o.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("max concurrent reconciles %d must be at least 1", o.MaxConcurrentReconciles)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
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

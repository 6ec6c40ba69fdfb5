package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultsFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		check   func(Options) string
		wantErr string
	}{
		{name: "defaults", check: func(o Options) string {
			if o.ReconcileInterval != 30*time.Second || o.MaxConcurrentReconciles != 5 || !o.LeaderElection || o.LogLevel != "info" || o.WatchNamespaces != nil {
				return "unexpected defaults"
			}
			return ""
		}},
		{name: "reference overlay", env: map[string]string{"LOG_LEVEL": "INFO", "RECONCILE_INTERVAL": "30s", "MAX_CONCURRENT_RECONCILES": "5"}, check: func(o Options) string {
			if o.LogLevel != "info" {
				return "LOG_LEVEL=INFO not lower-cased"
			}
			return ""
		}},
		{name: "namespace list", env: map[string]string{"WATCH_NAMESPACE": " team-a, team-b ,team-a"}, check: func(o Options) string {
			if strings.Join(o.WatchNamespaces, "|") != "team-a|team-b" {
				return "namespaces " + strings.Join(o.WatchNamespaces, "|")
			}
			return ""
		}},
		{name: "ignored namespaces", env: map[string]string{"IGNORE_NAMESPACE": "legacy, bench"}, check: func(o Options) string {
			if strings.Join(o.IgnoredNamespaces, "|") != "legacy|bench" || o.WatchNamespaces != nil {
				return "ignored " + strings.Join(o.IgnoredNamespaces, "|")
			}
			return ""
		}},
		{name: "bad interval", env: map[string]string{"RECONCILE_INTERVAL": "thirty"}, wantErr: "RECONCILE_INTERVAL"},
		{name: "bad concurrency", env: map[string]string{"MAX_CONCURRENT_RECONCILES": "five"}, wantErr: "MAX_CONCURRENT_RECONCILES"},
		{name: "pacing", env: map[string]string{"SLOW_RECONCILE_THRESHOLD": "5s", "DEGRADED_RECONCILE_INTERVAL": "2m"}, check: func(o Options) string {
			if o.SlowReconcileThreshold != 5*time.Second || o.DegradedReconcileInterval != 2*time.Minute {
				return "pacing settings not read"
			}
			return ""
		}},
		{name: "bad threshold", env: map[string]string{"SLOW_RECONCILE_THRESHOLD": "soon"}, wantErr: "SLOW_RECONCILE_THRESHOLD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"LOG_LEVEL", "RECONCILE_INTERVAL", "MAX_CONCURRENT_RECONCILES", "WATCH_NAMESPACE", "IGNORE_NAMESPACE", "POD_NAMESPACE", "FLINK_REST_OVERRIDE", "SLOW_RECONCILE_THRESHOLD", "DEGRADED_RECONCILE_INTERVAL"} {
				t.Setenv(k, tc.env[k])
			}
			o, err := Defaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(o); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestFlagsOverrideEnvironmentAndValidate(t *testing.T) {
	t.Setenv("RECONCILE_INTERVAL", "45s")
	o, err := Defaults()
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if o.ReconcileInterval != 45*time.Second {
		t.Fatalf("environment not applied: %s", o.ReconcileInterval)
	}
	if err := fs.Parse([]string{"--reconcile-interval=10s", "--watch-namespace=a,b", "--log-level=debug"}); err != nil {
		t.Fatal(err)
	}
	if o.ReconcileInterval != 10*time.Second || len(o.WatchNamespaces) != 2 || o.LogLevel != "debug" {
		t.Errorf("flags not applied: %+v", o)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.LogLevel = "verbose" },
		func(o *Options) { o.ReconcileInterval = 100 * time.Millisecond },
		func(o *Options) { o.MaxConcurrentReconciles = 0 },
		func(o *Options) { o.SlowReconcileThreshold = 0 },
		func(o *Options) { o.DegradedReconcileInterval = -time.Second },
		func(o *Options) { o.RenewDeadline = o.LeaseDuration },
		func(o *Options) { o.RetryPeriod = o.RenewDeadline },
		// Which would win is a guess; one list says it.
		func(o *Options) { o.IgnoredNamespaces = []string{"legacy"} },
	} {
		c := o
		bad(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate refused good options: %v", err)
	}
}

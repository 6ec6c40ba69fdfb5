package e2e

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/test/monitoring"
)

// TestDashboardQueriesReturnSeries: Prometheus scrapes the operator while
// two clusters run, one with the autopilot recommending a scale-up, one
// upgraded with a savepoint; then every query of the chart's Grafana
// dashboard, its variables set to the two clusters, returns series. A
// panel whose query matches nothing (a renamed metric, a label the operator
// does not export) fails the test.
func TestDashboardQueriesReturnSeries(t *testing.T) {
	parallel(t)
	if prom == nil {
		t.Fatal("bin/prometheus is missing: run 'make tools' (make test does it for you)")
	}
	queries, _, err := monitoring.DashboardQueries(filepath.Join(root, monitoring.DashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := newNamespace(t)

	// The autopilot's: Enrich is overloaded (400 records/s on 2 subtasks of
	// 100), with short windows so a recommendation comes within seconds.
	pilot := jobClusterAt(ns, "pilot", "1.19.3")
	if err := sim.Engine.SetWorkload(simKey(ns, pilot.Name), chain(flinksim.RateShape{Kind: "constant", Base: 400})); err != nil {
		t.Fatal(err)
	}
	pilot.Spec.TaskManager.Replicas = 1
	pilot.Spec.FlinkConfiguration = v1.FlinkConfiguration{"metrics.fetcher.update-interval": "1000"}
	pilot.Spec.Autoscaler = &v1.AutoscalerSpec{Mode: v1.AutoscalerRecommend, TargetUtilizationPercent: 70, UtilizationBoundaryPercent: 20,
		MinParallelism: 1, MaxParallelism: 16, MaxTaskManagers: 8,
		Interval: "1s", MetricWindow: "3s", Stabilization: "5s", ScaleDownDelay: "30s", CatchUpDuration: "1m", MaxRescalesPerHour: 10}
	upgraded := jobCluster(ns, "upgraded")
	for _, fc := range []*v1.FlinkCluster{pilot, upgraded} {
		if err := k8s.Create(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"upgraded", "pilot"} {
		waitStable(t, ns, name)
	}
	// A state-safe upgrade: a savepoint, a new job restored from it, the
	// stability gate.
	patchSpec(t, ns, "upgraded", func(fc *v1.FlinkCluster) { fc.Spec.Job.Parallelism = 3 })
	eventually(t, 2*time.Minute, "the upgrade to succeed", func() error {
		fc := getFC(t, ns, "upgraded")
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionUpgrading)
		if c == nil || c.Reason != "UpgradeSucceeded" || c.ObservedGeneration != fc.Generation {
			return fmt.Errorf("Upgrading is %+v", c)
		}
		return nil
	})
	eventually(t, 2*time.Minute, "a recommendation", func() error {
		if _, st := autoscalerStatus(t, ns, "pilot"); len(st.Decisions) == 0 {
			return fmt.Errorf("no decision yet")
		}
		return nil
	})

	values := map[string]string{
		"namespace": ns,
		"cluster":   "pilot|upgraded",
		// Since Prometheus started, so events of the test count however
		// long ago they were.
		"__rate_interval": strconv.Itoa(int(time.Since(prom.started).Seconds())+1) + "s",
	}
	series := 0
	for _, q := range queries {
		expr, err := monitoring.Substitute(q.Expr, values)
		if err != nil {
			t.Errorf("panel %q %s: %v", q.Panel, q.RefID, err)
			continue
		}
		// The last events are a scrape or two away from Prometheus.
		eventually(t, 20*time.Second, fmt.Sprintf("panel %q %s", q.Panel, q.RefID), func() error {
			got, err := prom.query(ctx, expr)
			if err != nil {
				return err
			}
			if len(got) == 0 {
				return fmt.Errorf("no series for %s", expr)
			}
			series += len(got)
			return nil
		})
	}
	t.Logf("%d dashboard queries returned %d series (Prometheus was ready %v after its start)", len(queries), series, prom.readyAfter)
	// The per-cluster panels name the test's clusters, and only them.
	for _, tc := range []struct {
		expr  string
		names []string
	}{
		{`datapilot_flinkcluster_phase{namespace="` + ns + `"}`, []string{"pilot", "upgraded"}},
		{`datapilot_autoscaler_parallelism{namespace="` + ns + `"}`, []string{"pilot"}},
		{`datapilot_flinkcluster_last_savepoint_timestamp_seconds{namespace="` + ns + `"}`, []string{"upgraded"}},
	} {
		got, err := prom.query(ctx, tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Metric["name"])
			if v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64); math.IsNaN(v) || v == 0 {
				t.Errorf("%s: %v for %s", tc.expr, s.Value[1], s.Metric["name"])
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.names) {
			t.Errorf("%s: series of %v, want %v", tc.expr, names, tc.names)
		}
	}
}

// waitStable waits until the cluster's job runs and its spec is stable.
func waitStable(t *testing.T, ns, name string) {
	t.Helper()
	waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	eventually(t, time.Minute, name+": job running and stable", func() error {
		fc := getFC(t, ns, name)
		if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		return nil
	})
}

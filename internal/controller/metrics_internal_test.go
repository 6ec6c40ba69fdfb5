package controller

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/lifecycle"
)

// series lists a registry's samples of the named metric as
// "label=value,...: value" strings, sorted.
func series(t *testing.T, reg *prometheus.Registry, name string) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out = append(out, strings.Join(ls, ",")+": "+strconvG(v))
		}
	}
	sort.Strings(out)
	return out
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func histogram(t *testing.T, o prometheus.Observer) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

func cond(t, s, r string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: r}
}

// TestClusterSeriesFollowTheStatus: a cluster's phase and condition series
// follow its status, a changed condition leaves no stale series behind, and
// a deleted cluster leaves none at all.
func TestClusterSeriesFollowTheStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "demo"}}
	done := metav1.NewTime(time.Unix(1700000000, 0))
	seen := metav1.NewTime(time.Unix(1700000100, 0))

	m.observe(fc, &v1.FlinkClusterStatus{Phase: v1.PhasePending, Conditions: []metav1.Condition{
		cond(v1.ConditionAvailable, "False", "JobManagerNotReady"), cond(v1.ConditionDegraded, "False", "AsExpected")}})
	m.observe(fc, &v1.FlinkClusterStatus{Phase: v1.PhaseDegraded,
		Conditions: []metav1.Condition{cond(v1.ConditionAvailable, "True", "Running"), cond(v1.ConditionDegraded, "True", "RestartLoop")},
		Job:        &v1.JobStatus{LastSavepoint: &v1.SavepointInfo{CompletedAt: &done}, LastCheckpoint: &v1.CheckpointInfo{ObservedAt: seen}}})

	for _, tc := range []struct {
		metric string
		want   []string
	}{
		{"datapilot_flinkcluster_phase", []string{"name=demo,namespace=team-a,phase=Degraded: 1"}},
		{"datapilot_flinkcluster_condition", []string{
			"name=demo,namespace=team-a,reason=RestartLoop,status=True,type=Degraded: 1",
			"name=demo,namespace=team-a,reason=Running,status=True,type=Available: 1",
		}},
		{"datapilot_flinkcluster_last_savepoint_timestamp_seconds", []string{"name=demo,namespace=team-a: 1.7e+09"}},
		{"datapilot_flinkcluster_last_checkpoint_timestamp_seconds", []string{"name=demo,namespace=team-a: 1.7000001e+09"}},
	} {
		if got := series(t, reg, tc.metric); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tc.metric, got, tc.want)
		}
	}

	// A status that no longer carries the job keeps its last times; the
	// phase count follows the phase.
	m.observe(fc, &v1.FlinkClusterStatus{Phase: v1.PhaseRunning})
	for _, tc := range []struct {
		metric string
		want   []string
	}{
		{"datapilot_flinkcluster_phase", []string{"name=demo,namespace=team-a,phase=Running: 1"}},
		{"datapilot_flinkcluster_condition", nil},
		{"datapilot_flinkcluster_last_savepoint_timestamp_seconds", []string{"name=demo,namespace=team-a: 1.7e+09"}},
	} {
		if got := series(t, reg, tc.metric); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("after a status without job or conditions, %s:\n got %q\nwant %q", tc.metric, got, tc.want)
		}
	}
	if got := series(t, reg, "datapilot_flinkclusters"); !slices.Contains(got, "phase=Running: 1") || !slices.Contains(got, "phase=Degraded: 0") {
		t.Errorf("datapilot_flinkclusters: %q, want Running 1 and Degraded 0", got)
	}

	m.forget(types.NamespacedName{Namespace: "team-a", Name: "demo"})
	if got := series(t, reg, "datapilot_flinkclusters"); !slices.Contains(got, "phase=Running: 0") {
		t.Errorf("datapilot_flinkclusters after forget: %q, want Running 0", got)
	}
	for _, name := range []string{"datapilot_flinkcluster_phase", "datapilot_flinkcluster_condition",
		"datapilot_flinkcluster_last_savepoint_timestamp_seconds", "datapilot_flinkcluster_last_checkpoint_timestamp_seconds"} {
		if got := series(t, reg, name); len(got) > 0 {
			t.Errorf("%s after forget: %q, want none", name, got)
		}
	}
}

// TestUpgradeAndRollbackDurations: an upgrade's end is timed from its
// start, a rollback's from the start of its RollingBack phase, and every
// result's series exists before its first event.
func TestUpgradeAndRollbackDurations(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	if got := series(t, reg, "datapilot_rollback_duration_seconds"); len(got) != 2 {
		t.Fatalf("rollback durations before any rollback: %q, want succeeded and failed at 0", got)
	}
	start := time.Unix(1700000000, 0)
	up := &v1.UpgradeStatus{StartedAt: metav1.NewTime(start), PhaseStartedAt: metav1.NewTime(start.Add(40 * time.Second)), Phase: v1.UpgradeRollingBack}
	m.count(up, []lifecycle.Transition{{Kind: lifecycle.UpgradeFailed}, {Kind: lifecycle.RollbackSucceeded}}, start.Add(50*time.Second))

	for _, tc := range []struct {
		h      *prometheus.HistogramVec
		result string
		sum    float64
	}{
		{m.UpgradeDuration, "failed", 50},
		{m.RollbackDuration, "succeeded", 10},
	} {
		dm := histogram(t, tc.h.WithLabelValues(tc.result))
		if dm.GetSampleCount() != 1 || dm.GetSampleSum() != tc.sum {
			t.Errorf("%s: %d samples summing to %v s, want 1 of %v s", tc.result, dm.GetSampleCount(), dm.GetSampleSum(), tc.sum)
		}
	}
	if h := histogram(t, m.UpgradeDuration.WithLabelValues("succeeded")); h.GetSampleCount() != 0 {
		t.Errorf("succeeded upgrades: %d samples, want 0", h.GetSampleCount())
	}
}

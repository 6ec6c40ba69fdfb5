package health

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/datapilot/datapilot/api/v1"
)

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

func ok(l Level) Probe {
	return Probe{Level: l, OK: true, Reason: string(l) + "OK", Message: "The " + string(l) + " level passes."}
}

func fail(l Level, reason string) Probe {
	return Probe{Level: l, Reason: reason, Message: "The " + string(l) + " level fails: " + reason + "."}
}

func unknown(l Level, reason string) Probe {
	return Probe{Level: l, Unknown: true, Reason: reason, Message: "The " + string(l) + " level was not probed."}
}

var (
	healthy  = []Probe{ok(LevelJobManager), ok(LevelRest), ok(LevelJobs)}
	rest503  = []Probe{ok(LevelJobManager), fail(LevelRest, ReasonRestUnavailable), unknown(LevelJobs, ReasonRestUnavailable)}
	jmDown   = []Probe{fail(LevelJobManager, ReasonJobManagerNotReady), unknown(LevelRest, ReasonJobManagerNotReady), unknown(LevelJobs, ReasonJobManagerNotReady)}
	jobsDown = []Probe{ok(LevelJobManager), ok(LevelRest), fail(LevelJobs, ReasonJobNotRunning)}
	jobsGone = []Probe{ok(LevelJobManager), ok(LevelRest), fail(LevelJobs, ReasonJobNotFound)}
	starting = []Probe{unknown(LevelJobManager, ReasonJobManagerStarting), unknown(LevelRest, ReasonJobManagerStarting), unknown(LevelJobs, ReasonJobManagerStarting)}
)

// want is what one round must produce. Levels lists the expected status of
// JobManager, Rest and Jobs, in that order; reasons, when set, the expected
// reasons; failures, when set, the expected consecutive-failure counts.
type want struct {
	changed        bool
	degraded       bool
	degradedReason string
	levels         [3]metav1.ConditionStatus
	reasons        [3]string
	failures       *[3]int
}

type step struct {
	probes    []Probe
	threshold int
	want      want
}

func counts(a, b, c int) *[3]int { return &[3]int{a, b, c} }

func TestEvaluate(t *testing.T) {
	allTrue := [3]metav1.ConditionStatus{T, T, T}
	okReasons := [3]string{"JobManagerOK", "RestOK", "JobsOK"}
	healthyStep := step{healthy, 3, want{changed: true, levels: allTrue, reasons: okReasons, failures: counts(0, 0, 0)}}
	steady := step{healthy, 3, want{levels: allTrue, reasons: okReasons, failures: counts(0, 0, 0)}}

	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one 503 then success: nothing changes and never Degraded", []step{
			healthyStep,
			{rest503, 3, want{levels: allTrue, reasons: okReasons, failures: counts(0, 1, 0)}},
			steady,
		}},
		{"three 503s in a row: Degraded with the level's reason, jobs Unknown", []step{
			healthyStep,
			{rest503, 3, want{levels: allTrue, failures: counts(0, 1, 0)}},
			{rest503, 3, want{levels: allTrue, failures: counts(0, 2, 0)}},
			{rest503, 3, want{changed: true, degraded: true, degradedReason: ReasonRestUnavailable,
				levels: [3]metav1.ConditionStatus{T, F, U}, reasons: [3]string{"JobManagerOK", ReasonRestUnavailable, ReasonRestUnavailable},
				failures: counts(0, 3, 0)}},
			{rest503, 3, want{degraded: true, degradedReason: ReasonRestUnavailable,
				levels: [3]metav1.ConditionStatus{T, F, U}, failures: counts(0, 4, 0)}},
		}},
		{"recovery clears Degraded at once", []step{
			healthyStep,
			{rest503, 3, want{levels: allTrue}},
			{rest503, 3, want{levels: allTrue}},
			{rest503, 3, want{changed: true, degraded: true, degradedReason: ReasonRestUnavailable, levels: [3]metav1.ConditionStatus{T, F, U}}},
			{healthy, 3, want{changed: true, levels: allTrue, reasons: okReasons, failures: counts(0, 0, 0)}},
		}},
		{"threshold from spec honoured: 5", []step{
			healthyStep,
			{jobsDown, 5, want{levels: allTrue}},
			{jobsDown, 5, want{levels: allTrue}},
			{jobsDown, 5, want{levels: allTrue}},
			{jobsDown, 5, want{levels: allTrue, failures: counts(0, 0, 4)}},
			{jobsDown, 5, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
		}},
		{"threshold 1: the first failure degrades", []step{
			healthyStep,
			{jobsDown, 1, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
		}},
		{"threshold below 1 means the default", []step{
			healthyStep,
			{jobsDown, 0, want{levels: allTrue}},
			{jobsDown, 0, want{levels: allTrue}},
			{jobsDown, 0, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
		}},
		{"level 2 and 3 Unknown while level 1 fails", []step{
			healthyStep,
			{jmDown, 3, want{levels: allTrue, failures: counts(1, 0, 0)}},
			{jmDown, 3, want{levels: allTrue, failures: counts(2, 0, 0)}},
			{jmDown, 3, want{changed: true, degraded: true, degradedReason: ReasonJobManagerNotReady,
				levels:  [3]metav1.ConditionStatus{F, U, U},
				reasons: [3]string{ReasonJobManagerNotReady, ReasonJobManagerNotReady, ReasonJobManagerNotReady}}},
			{healthy, 3, want{changed: true, levels: allTrue}},
		}},
		{"a new cluster whose JobManager fails is Unknown until the threshold", []step{
			{jmDown, 3, want{changed: true, levels: [3]metav1.ConditionStatus{U, U, U},
				reasons: [3]string{ReasonJobManagerNotReady, ReasonJobManagerNotReady, ReasonJobManagerNotReady}, failures: counts(1, 0, 0)}},
			{jmDown, 3, want{levels: [3]metav1.ConditionStatus{U, U, U}, failures: counts(2, 0, 0)}},
			{jmDown, 3, want{changed: true, degraded: true, degradedReason: ReasonJobManagerNotReady, levels: [3]metav1.ConditionStatus{F, U, U}}},
		}},
		{"a starting cluster is Unknown and never Degraded", []step{
			{starting, 3, want{changed: true, levels: [3]metav1.ConditionStatus{U, U, U},
				reasons: [3]string{ReasonJobManagerStarting, ReasonJobManagerStarting, ReasonJobManagerStarting}, failures: counts(0, 0, 0)}},
			{starting, 3, want{levels: [3]metav1.ConditionStatus{U, U, U}, failures: counts(0, 0, 0)}},
			{starting, 3, want{levels: [3]metav1.ConditionStatus{U, U, U}, failures: counts(0, 0, 0)}},
			{starting, 3, want{levels: [3]metav1.ConditionStatus{U, U, U}, failures: counts(0, 0, 0)}},
			{healthy, 3, want{changed: true, levels: allTrue}},
		}},
		{"the first 503 after start only replaces the Unknown reason", []step{
			{starting, 3, want{changed: true, levels: [3]metav1.ConditionStatus{U, U, U}}},
			{rest503, 3, want{changed: true, levels: [3]metav1.ConditionStatus{T, U, U},
				reasons: [3]string{"JobManagerOK", ReasonRestUnavailable, ReasonJobManagerStarting}, failures: counts(0, 1, 0)}},
			{rest503, 3, want{levels: [3]metav1.ConditionStatus{T, U, U}, failures: counts(0, 2, 0)}},
			{healthy, 3, want{changed: true, levels: allTrue}},
		}},
		{"failures interrupted by a pass do not add up", []step{
			healthyStep,
			{rest503, 3, want{levels: allTrue}},
			{rest503, 3, want{levels: allTrue, failures: counts(0, 2, 0)}},
			steady,
			{rest503, 3, want{levels: allTrue}},
			{rest503, 3, want{levels: allTrue, failures: counts(0, 2, 0)}},
			steady,
		}},
		{"a round where the level cannot be probed resets its count and keeps its condition", []step{
			healthyStep,
			{jobsDown, 3, want{levels: allTrue, failures: counts(0, 0, 1)}},
			{jobsDown, 3, want{levels: allTrue, failures: counts(0, 0, 2)}},
			{rest503, 3, want{levels: allTrue, reasons: okReasons, failures: counts(0, 1, 0)}},
			{jobsDown, 3, want{levels: allTrue, failures: counts(0, 0, 1)}},
		}},
		{"one 503 while Degraded by jobs keeps Degraded", []step{
			healthyStep,
			{jobsDown, 3, want{levels: allTrue}},
			{jobsDown, 3, want{levels: allTrue}},
			{jobsDown, 3, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
			{rest503, 3, want{degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F},
				failures: counts(0, 1, 0)}},
			{jobsDown, 3, want{degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F},
				failures: counts(0, 0, 1)}},
			{healthy, 3, want{changed: true, levels: allTrue}},
		}},
		{"a new reason while False is a change", []step{
			healthyStep,
			{jobsDown, 1, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
			{jobsDown, 1, want{degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
			{jobsGone, 1, want{changed: true, degraded: true, degradedReason: ReasonJobNotFound, levels: [3]metav1.ConditionStatus{T, T, F}}},
		}},
		{"a threshold raised while False keeps False until the level passes", []step{
			healthyStep,
			{jobsDown, 1, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
			{jobsDown, 10, want{degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}, failures: counts(0, 0, 2)}},
			{healthy, 10, want{changed: true, levels: allTrue}},
		}},
		{"the lowest False level names Degraded", []step{
			healthyStep,
			{jobsDown, 1, want{changed: true, degraded: true, degradedReason: ReasonJobNotRunning, levels: [3]metav1.ConditionStatus{T, T, F}}},
			{jmDown, 1, want{changed: true, degraded: true, degradedReason: ReasonJobManagerNotReady, levels: [3]metav1.ConditionStatus{F, U, U}}},
		}},
		{"missing probes are unknown", []step{
			{nil, 3, want{changed: true, levels: [3]metav1.ConditionStatus{U, U, U}, reasons: [3]string{"NotProbed", "NotProbed", "NotProbed"}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v Verdict
			now := time.Unix(1700000000, 0)
			for i, s := range tc.steps {
				now = now.Add(30 * time.Second)
				next, changed := Evaluate(v, s.probes, s.threshold, now)
				w := s.want
				if changed != w.changed {
					t.Errorf("round %d: changed = %v, want %v", i, changed, w.changed)
				}
				if next.Degraded != w.degraded || next.DegradedReason != w.degradedReason {
					t.Errorf("round %d: Degraded = %v %q, want %v %q", i, next.Degraded, next.DegradedReason, w.degraded, w.degradedReason)
				}
				if next.Degraded && next.DegradedMessage == "" {
					t.Errorf("round %d: Degraded without a message", i)
				}
				for j, l := range Levels {
					lv := next.Levels[l]
					if lv.Status != w.levels[j] {
						t.Errorf("round %d: %s status = %s, want %s (%+v)", i, l, lv.Status, w.levels[j], lv)
					}
					if w.reasons[j] != "" && lv.Reason != w.reasons[j] {
						t.Errorf("round %d: %s reason = %s, want %s", i, l, lv.Reason, w.reasons[j])
					}
					if w.failures != nil && lv.ConsecutiveFailures != w.failures[j] {
						t.Errorf("round %d: %s failures = %d, want %d", i, l, lv.ConsecutiveFailures, w.failures[j])
					}
				}
				if !next.ObservedAt.Equal(now) {
					t.Errorf("round %d: ObservedAt = %v", i, next.ObservedAt)
				}
				v = next
			}
		})
	}
}

// A single failure must leave the rendered conditions byte for byte alone.
func TestEvaluateOneFailureKeepsConditions(t *testing.T) {
	now := time.Unix(1700000000, 0)
	v, _ := Evaluate(Verdict{}, healthy, 3, now)
	for _, round := range [][]Probe{rest503, jmDown, jobsDown} {
		next, changed := Evaluate(v, round, 3, now.Add(time.Minute))
		if changed {
			t.Errorf("%v: changed", round)
		}
		for _, l := range Levels {
			b, a := v.LevelOf(l), next.LevelOf(l)
			if a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message {
				t.Errorf("%v: level %s moved from %+v to %+v", round, l, b, a)
			}
		}
		if next.Degraded != v.Degraded || next.DegradedReason != v.DegradedReason || next.DegradedMessage != v.DegradedMessage {
			t.Errorf("%v: Degraded moved from %v %s to %v %s", round, v.Degraded, v.DegradedReason, next.Degraded, next.DegradedReason)
		}
	}
}

func TestEvaluateDegradedMessageIsStable(t *testing.T) {
	var v Verdict
	now := time.Unix(1700000000, 0)
	for range 3 {
		v, _ = Evaluate(v, jobsDown, 3, now)
	}
	msg := v.DegradedMessage
	if msg == "" || msg[0] < 'A' || msg[0] > 'Z' {
		t.Fatalf("DegradedMessage = %q", msg)
	}
	// More failures, and a raised threshold, do not rewrite the message.
	for _, th := range []int{3, 3, 5} {
		var changed bool
		v, changed = Evaluate(v, jobsDown, th, now)
		if changed || v.DegradedMessage != msg {
			t.Errorf("threshold %d: changed = %v, message %q", th, changed, v.DegradedMessage)
		}
	}
}

func TestLevelOf(t *testing.T) {
	now := time.Unix(1700000000, 0)
	var empty Verdict
	for _, l := range Levels {
		if lv := empty.LevelOf(l); lv.Status != U || lv.Reason != ReasonNotProbed || lv.Message == "" {
			t.Errorf("empty verdict, level %s: %+v", l, lv)
		}
	}
	if empty.Degraded {
		t.Error("empty verdict is Degraded")
	}

	var v Verdict
	for range 3 {
		v, _ = Evaluate(v, rest503, 3, now)
	}
	for l, st := range map[Level]metav1.ConditionStatus{LevelJobManager: T, LevelRest: F, LevelJobs: U} {
		if lv := v.LevelOf(l); lv.Status != st || lv.Reason == "" || lv.Message == "" {
			t.Errorf("%s = %+v, want status %s", l, lv, st)
		}
	}
	if !v.Degraded || v.DegradedReason != ReasonRestUnavailable {
		t.Errorf("Degraded %v reason %s, want true %s", v.Degraded, v.DegradedReason, ReasonRestUnavailable)
	}
}

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		health *v1.HealthPolicy
		want   int
	}{
		{nil, 3},
		{&v1.HealthPolicy{}, 3},
		{&v1.HealthPolicy{FailureThreshold: 1}, 1},
		{&v1.HealthPolicy{FailureThreshold: 7}, 7},
	} {
		fc := &v1.FlinkCluster{Spec: v1.FlinkClusterSpec{Health: tc.health}}
		if got := Threshold(fc); got != tc.want {
			t.Errorf("Threshold(%+v) = %d, want %d", tc.health, got, tc.want)
		}
	}
}

func TestTracker(t *testing.T) {
	var tr Tracker // the zero value works
	k := keyOf("ns", "a")
	if _, ok := tr.Get(k); ok {
		t.Fatal("empty tracker has a verdict")
	}
	tr.update(k, func(e *entry) {
		e.verdict, _ = Evaluate(Verdict{}, healthy, 3, time.Unix(1, 0))
		e.verdict.Jobs = []JobSummary{{ID: "j"}}
	})
	got, ok := tr.Get(k)
	if !ok || got.Levels[LevelRest].Status != T {
		t.Fatalf("Get = %+v, %v", got, ok)
	}
	// The copy does not alias the tracker's state.
	got.Levels[LevelRest] = LevelVerdict{Status: F}
	got.Jobs[0].ID = "x"
	again, _ := tr.Get(k)
	if again.Levels[LevelRest].Status != T || again.Jobs[0].ID != "j" {
		t.Errorf("Get aliases the tracker: %+v", again)
	}
	tr.update(keyOf("ns", "b"), func(*entry) {})
	tr.retain(map[types.NamespacedName]bool{k: true})
	if tr.Len() != 1 {
		t.Errorf("Len after retain = %d", tr.Len())
	}
	tr.Forget(k)
	if _, ok := tr.Get(k); ok || tr.Len() != 0 {
		t.Error("Forget kept the verdict")
	}
}

func keyOf(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

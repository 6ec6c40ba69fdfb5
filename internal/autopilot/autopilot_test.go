package autopilot

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// policy is the API's defaults, with a short window to keep histories small.
func policy() Policy {
	p, _ := PolicyFor(&v1.FlinkClusterSpec{
		TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2},
		Job:         &v1.JobSpec{},
		Autoscaler:  &v1.AutoscalerSpec{MetricWindow: "5m", Interval: "15s"},
	})
	return p
}

// job is a linear chain of vertices, each with a capacity per subtask in
// records/s, run at one parallelism. It records what Flink would report
// each interval: a vertex busy in-rate/(capacity×parallelism) of its
// time, capped at 1000 ms/s; throughput bounded by the slowest vertex;
// the vertices upstream of it backpressured; the source's backlog growing
// by rate − throughput.
type job struct {
	caps        []float64
	parallelism int32
	skew        float64 // extra share of the load on the hottest subtask
	lag         float64
}

func (j *job) sample(at time.Time, rate float64, dt time.Duration) Sample {
	p := float64(j.parallelism)
	bottleneck, through := 0, math.Inf(1)
	for i, c := range j.caps {
		if c*p < through {
			bottleneck, through = i, c*p
		}
	}
	// With a backlog the source reads as fast as the job allows.
	if j.lag <= 0 && rate < through {
		through = rate
	}
	j.lag = math.Max(0, j.lag+(rate-through)*dt.Seconds())
	s := Sample{Time: at, JobID: "job-1"}
	for i, c := range j.caps {
		busy := math.Min(1000, through/(c*p)*1000)
		hot := math.Min(1000, busy*(1+j.skew*(p-1)))
		v := VertexSample{ID: string(rune('a' + i)), Name: []string{"Source: orders", "Enrich", "Sink: warehouse"}[i],
			Parallelism: j.parallelism, MaxParallelism: 128, BusyAvg: busy, BusyMax: hot,
			RecordsIn: through, RecordsOut: through}
		if i < bottleneck {
			v.BackPressured = 1000 - busy
		}
		if i == 0 {
			v.Source, v.Lag, v.LagKnown, v.Read, v.RecordsIn = true, j.lag, true, through, 0
		}
		s.Vertices = append(s.Vertices, v)
	}
	return s
}

// history runs the job for d at the given rate shape, every interval.
func (j *job) history(from time.Time, d, every time.Duration, rate func(time.Duration) float64) []Sample {
	var h []Sample
	for el := time.Duration(0); el <= d; el += every {
		h = Append(h, j.sample(from.Add(el), rate(el), every), 2*d)
	}
	return h
}

func constant(r float64) func(time.Duration) float64 { return func(time.Duration) float64 { return r } }

func TestEvaluateRecordedHistories(t *testing.T) {
	p := policy()
	for _, tc := range []struct {
		name     string
		job      job
		rate     func(time.Duration) float64
		want     Kind
		from, to int32
		message  string
	}{{
		// 4 subtasks of 500 records/s meet a rate ramping 1000 → 3000:
		// the enrich vertex saturates, the source is backpressured and the
		// backlog grows. Sized for arrival plus catch-up at 70%.
		name: "ramp", job: job{caps: []float64{2000, 500, 1500}, parallelism: 4},
		rate: func(el time.Duration) float64 { return 1000 + 2000*math.Min(1, el.Minutes()/3) },
		want: Up, from: 4, message: "the busiest vertex, Enrich, would be busy",
	}, {
		name: "drop", job: job{caps: []float64{2000, 500, 1500}, parallelism: 8}, rate: constant(600),
		want: Down, from: 8, to: 2, message: "outside the band 50–90%",
	}, {
		// 1100 to 1700 records/s on 2000 of capacity per vertex: 55%–85%
		// busy, averaging 70%, inside the band.
		name: "oscillation inside the band", job: job{caps: []float64{500, 500, 500}, parallelism: 4},
		rate: func(el time.Duration) float64 { return 1400 + 300*math.Sin(el.Seconds()/60*2*math.Pi) },
		want: Keep, from: 4, to: 4, message: "Within the band",
	}, {
		name: "skew", job: job{caps: []float64{500, 500, 500}, parallelism: 4, skew: 0.3}, rate: constant(1400),
		want: Skewed, from: 4, to: 4, message: "hottest subtask would be busy",
	}, {
		name: "idle", job: job{caps: []float64{4000, 500, 1500}, parallelism: 4}, rate: constant(0),
		want: Down, from: 4, to: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.job.history(t0, p.Window, p.Interval, tc.rate)
			now := h[len(h)-1].Time
			rec := Evaluate(h, p, t0, now)
			if rec.Kind != tc.want || rec.From != tc.from || (tc.to != 0 && rec.To != tc.to) {
				t.Fatalf("%s %d→%d, want %s %d→%d: %s", rec.Kind, rec.From, rec.To, tc.want, tc.from, tc.to, rec.Message)
			}
			if !strings.Contains(rec.Message, tc.message) {
				t.Errorf("message %q does not say %q", rec.Message, tc.message)
			}
			if rec.Inputs.Samples < 3 {
				t.Errorf("inputs %+v", rec.Inputs)
			}
		})
	}
}

// The ramp's scale-up is sized so that the enrich vertex, the
// bottleneck, can take the arrival rate plus the backlog's catch-up at
// the target utilization, no more than one subtask over.
func TestRampSizedForArrivalAndCatchUp(t *testing.T) {
	p := policy()
	j := job{caps: []float64{2000, 500, 1500}, parallelism: 4}
	h := j.history(t0, p.Window, p.Interval, constant(3000))
	rec := Evaluate(h, p, t0, h[len(h)-1].Time)
	in := rec.Inputs
	if in.Bottleneck != "Enrich" || in.BusyMsPerSecond != 1000 || in.SourceRate != 2000 {
		t.Fatalf("inputs %+v", in)
	}
	// The backlog grows by 1000 records/s: arrival is 3000.
	if in.ArrivalRate < 2990 || in.ArrivalRate > 3010 {
		t.Errorf("arrival %d, want 3000", in.ArrivalRate)
	}
	// Plus the backlog, and what arrives during a rescale's downtime,
	// drained over the catch-up duration.
	wantTarget := float64(in.ArrivalRate) + (float64(in.Lag)+float64(in.ArrivalRate)*p.RestartTime.Seconds())/p.CatchUp.Seconds()
	if math.Abs(float64(in.TargetRate)-wantTarget) > 1 {
		t.Errorf("target %d, want %.0f", in.TargetRate, wantTarget)
	}
	need := int32(math.Ceil(wantTarget / (500 * p.Target)))
	// Rounded up to a divisor of the max parallelism, 128.
	want := need
	for 128%want != 0 {
		want++
	}
	if rec.To != want {
		t.Errorf("to %d, want %d (target %d records/s at %.0f%% of 500 each: %d, to a divisor of 128)", rec.To, want, in.TargetRate, p.Target*100, need)
	}
}

// Before Flink 1.18.1 a submission cannot run a vertex at its own
// parallelism: the job is sized as a whole, every vertex at the highest
// need, and the rescale sets the job's parallelism alone.
func TestUniformBeforeFlink1181(t *testing.T) {
	j := job{caps: []float64{2000, 500, 1500}, parallelism: 4}
	for _, tc := range []struct {
		version string
		uniform bool
	}{{"1.17.2", true}, {"1.18.0", true}, {"1.18.1", false}, {"2.0.0", false}} {
		t.Run(tc.version, func(t *testing.T) {
			p, _ := PolicyFor(&v1.FlinkClusterSpec{Version: tc.version, TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2},
				Job: &v1.JobSpec{}, Autoscaler: &v1.AutoscalerSpec{MetricWindow: "5m", Interval: "15s"}})
			if p.Uniform != tc.uniform {
				t.Fatalf("uniform %v, want %v", p.Uniform, tc.uniform)
			}
			h := j.history(t0, p.Window, p.Interval, constant(3000))
			rec := Evaluate(h, p, t0, h[len(h)-1].Time)
			if rec.Kind != Up {
				t.Fatalf("%s: %s", rec.Kind, rec.Message)
			}
			tos := map[int32]bool{}
			for _, n := range rec.PerVertex {
				tos[n.To] = true
			}
			if tc.uniform != (len(tos) == 1) {
				t.Errorf("vertex targets %+v", rec.PerVertex)
			}
			o := decide(p, v1.AutoscalerStatus{}, rec, t0)
			if o.Apply != rec.To || tc.uniform != (len(o.Status.Vertices) == 0) {
				t.Errorf("applied %d of %d, vertices %+v", o.Apply, rec.To, o.Status.Vertices)
			}
		})
	}
}

// A KafkaSource registers pendingRecords only once its reader has
// fetched records: the samples before it carry no lag, and neither the
// backlog's growth nor its size is read from them as if it were zero.
func TestEvaluateTakesTheBacklogOnlyFromSamplesThatHaveIt(t *testing.T) {
	p := policy()
	j := job{caps: []float64{2000, 500, 1500}, parallelism: 4}
	h := j.history(t0, p.Window, p.Interval, constant(3000))
	for i := range 5 {
		src := &h[i].Vertices[0]
		src.Lag, src.LagKnown = 0, false
	}
	rec := Evaluate(h, p, t0, h[len(h)-1].Time)
	// The backlog grows by 1000 records/s: arrival is 3000.
	if in := rec.Inputs; in.ArrivalRate < 2990 || in.ArrivalRate > 3010 || rec.Kind != Up {
		t.Errorf("%s, arrival %d, want a scale-up for 3000: %s", rec.Kind, in.ArrivalRate, rec.Message)
	}
	if strings.Contains(rec.Message, "unknown") {
		t.Errorf("the backlog is known from the later samples: %s", rec.Message)
	}
}

func TestEvaluateWaitsForAFullWindow(t *testing.T) {
	p := policy()
	j := job{caps: []float64{2000, 500, 1500}, parallelism: 4}
	h := j.history(t0, p.Window, p.Interval, constant(3000))
	// The job started (or was rescaled) two minutes before the end.
	since := h[len(h)-1].Time.Add(-2 * time.Minute)
	rec := Evaluate(h, p, since, h[len(h)-1].Time)
	if rec.Kind != Collecting || !strings.Contains(rec.Message, "2m0s of the 5m0s window") {
		t.Fatalf("%s: %s", rec.Kind, rec.Message)
	}
}

// Samples come a little later than every interval under load, and the
// operator evaluates between them too (any reconcile): the window slides
// past its first sample a fraction of a second before the next is taken.
// A full window stays full; while it fills, the condition's summary does
// not move with the clock.
func TestEvaluateFullWindowStaysFullBetweenLateSamples(t *testing.T) {
	p := policy()
	j := job{caps: []float64{2000, 500, 1500}, parallelism: 4}
	late := p.Interval * 11 / 10
	h := j.history(t0, 2*p.Window, late, constant(1000))
	summaries := map[string]bool{}
	for i, s := range h {
		for _, at := range []time.Time{s.Time, s.Time.Add(late / 2)} {
			rec := Evaluate(h[:i+1], p, t0, at)
			if at.Sub(t0) >= p.Window+late {
				if rec.Kind == Collecting {
					t.Fatalf("at %s: %s", at.Sub(t0), rec.Message)
				}
				continue
			}
			if rec.Kind == Collecting {
				summaries[rec.Summary] = true
			}
		}
	}
	if len(summaries) != 1 {
		t.Errorf("while the window filled the summary changed: %v", summaries)
	}
}

// A gap in the samples (the job's metrics unavailable for most of the
// window) leaves too little to average: collecting again, and saying why.
func TestEvaluateWindowWithAGapIsNotFull(t *testing.T) {
	p := policy()
	j := job{caps: []float64{2000, 500, 1500}, parallelism: 4}
	h := j.history(t0, 2*p.Window, p.Interval, constant(1000))
	end := h[len(h)-1].Time
	var gapped []Sample
	for _, s := range h {
		if s.Time.Before(end.Add(-p.Window)) || !s.Time.Before(end.Add(-p.Window/3)) {
			gapped = append(gapped, s)
		}
	}
	rec := Evaluate(gapped, p, t0, end)
	if rec.Kind != Collecting || !strings.Contains(rec.Message, "less than half") {
		t.Fatalf("%s: %s", rec.Kind, rec.Message)
	}
	if rec := Evaluate(h, p, t0, end); rec.Kind == Collecting {
		t.Fatalf("without the gap: %s", rec.Message)
	}
}

// A sample of another parallelism (before a rescale) says nothing of the
// current one.
func TestEvaluateIgnoresSamplesOfAnotherParallelism(t *testing.T) {
	p := policy()
	old := job{caps: []float64{2000, 500, 1500}, parallelism: 2}
	h := old.history(t0, p.Window, p.Interval, constant(3000))
	cur := job{caps: []float64{2000, 500, 1500}, parallelism: 8}
	h = append(h, cur.sample(h[len(h)-1].Time.Add(p.Interval), 3000, p.Interval))
	rec := Evaluate(h, p, t0, h[len(h)-1].Time)
	if rec.Kind != Collecting || rec.From != 8 {
		t.Fatalf("%s from %d: %s", rec.Kind, rec.From, rec.Message)
	}
}

func decide(p Policy, st v1.AutoscalerStatus, rec Recommendation, now time.Time) Outcome {
	return Decide(Input{Policy: p, Now: now, Rec: rec, Status: st})
}

func up(from, to int32, source int64) Recommendation {
	return Recommendation{Kind: Up, From: from, To: to, Message: "busy", Inputs: v1.DecisionInputs{SourceRate: source, ArrivalRate: 3000, TargetRate: 3200}}
}

func down(from, to int32) Recommendation {
	return Recommendation{Kind: Down, From: from, To: to, Message: "idle", Inputs: v1.DecisionInputs{SourceRate: 600, ArrivalRate: 600, TargetRate: 600}}
}

func TestScaleUpAppliesAndWaitsForTheLifecycle(t *testing.T) {
	p := policy()
	o := decide(p, v1.AutoscalerStatus{}, up(4, 9, 2000), t0)
	if o.Apply != 9 || o.Status.Parallelism != 9 || o.Status.TaskManagers != 5 || o.Status.Pending == nil {
		t.Fatalf("outcome %+v", o)
	}
	if d := o.Status.Decisions[0]; d.From != 4 || d.To != 9 || d.Result != ResultApplied || d.FromTaskManagers != 2 || d.ToTaskManagers != 5 {
		t.Errorf("decision %+v", d)
	}
	// While it is in flight nothing else is decided.
	o2 := decide(p, o.Status, up(9, 12, 2000), t0.Add(time.Minute))
	if o2.Apply != 0 || o2.Condition.Reason != ReasonInFlight {
		t.Errorf("in flight: %+v", o2)
	}
	st := o.Status
	if ev := Settle(&st, p, t0.Add(2*time.Minute), Running{Parallelism: 9, Since: t0.Add(90 * time.Second)}, false, false, "", 0); ev == nil || st.Pending != nil || st.Decisions[0].Result != ResultSucceeded {
		t.Errorf("settle: %+v %+v", ev, st)
	}
}

func TestScaleDownOnlyAfterTheDelayMerged(t *testing.T) {
	p := policy()
	st := v1.AutoscalerStatus{Parallelism: 8, TaskManagers: 4}
	o := decide(p, st, down(8, 2), t0)
	if o.Apply != 0 || o.Status.PendingScaleDown == nil || o.Condition.Reason != ReasonPending {
		t.Fatalf("first: %+v", o)
	}
	o = decide(p, o.Status, down(8, 4), t0.Add(20*time.Minute))
	o = decide(p, o.Status, down(8, 3), t0.Add(40*time.Minute))
	if o.Apply != 0 || o.Status.PendingScaleDown.Parallelism != 4 {
		t.Fatalf("during the delay: apply %d, pending %+v", o.Apply, o.Status.PendingScaleDown)
	}
	o = decide(p, o.Status, down(8, 2), t0.Add(p.ScaleDownDelay))
	if o.Apply != 4 || !strings.Contains(o.Status.Decisions[0].Message, "merged to the highest, 4") {
		t.Fatalf("after the delay: apply %d, %+v", o.Apply, o.Status.Decisions)
	}
}

func TestScaleDownCancelledByAStableDecision(t *testing.T) {
	p := policy()
	o := decide(p, v1.AutoscalerStatus{Parallelism: 8}, down(8, 2), t0)
	o = decide(p, o.Status, Recommendation{Kind: Keep, From: 8, To: 8, Message: "fine"}, t0.Add(30*time.Minute))
	if o.Status.PendingScaleDown != nil || len(o.Events) != 1 || o.Events[0].Reason != "ScaleDownCancelled" {
		t.Fatalf("%+v", o)
	}
	o = decide(p, o.Status, down(8, 2), t0.Add(p.ScaleDownDelay+time.Minute))
	if o.Apply != 0 {
		t.Fatalf("a cancelled delay starts over: applied %d", o.Apply)
	}
}

func TestOscillationInsideTheBandRecordsNothing(t *testing.T) {
	p := policy()
	j := job{caps: []float64{500, 500, 500}, parallelism: 4}
	var h []Sample
	st := v1.AutoscalerStatus{}
	rate := func(el time.Duration) float64 { return 1400 + 300*math.Sin(el.Seconds()/90*2*math.Pi) }
	for el := time.Duration(0); el <= 2*time.Hour; el += p.Interval {
		now := t0.Add(el)
		h = Append(h, j.sample(now, rate(el), p.Interval), p.Window)
		o := decide(p, st, Evaluate(h, p, t0, now), now)
		if o.Apply != 0 || o.Recorded || o.Status.PendingScaleDown != nil {
			t.Fatalf("at %s: %+v", el, o)
		}
		st = o.Status
	}
}

func TestCapPerHour(t *testing.T) {
	p := policy()
	st := v1.AutoscalerStatus{Parallelism: 4}
	for i := range p.MaxPerHour {
		st.Decisions = append(st.Decisions, v1.AutoscalerDecision{Time: metav1.NewTime(t0.Add(-time.Duration(i+1) * 10 * time.Minute)), Result: ResultSucceeded, From: 2, To: 4})
	}
	o := decide(p, st, up(4, 8, 2000), t0)
	if o.Apply != 0 || o.Condition.Reason != ReasonCapReached || !o.Recorded {
		t.Fatalf("%+v", o)
	}
	// An hour later the oldest is out of the count.
	o = decide(p, st, up(4, 8, 2000), t0.Add(31*time.Minute))
	if o.Apply != 8 {
		t.Fatalf("after the hour: %+v", o.Condition)
	}
}

func TestUnschedulableTaskManagers(t *testing.T) {
	p := policy()
	st := v1.AutoscalerStatus{Parallelism: 4, TaskManagers: 2}
	o := Decide(Input{Policy: p, Now: t0, Rec: up(4, 10, 2000), Status: st, Capacity: &Capacity{Fit: 0, Why: "no node has 2 CPU free"}})
	if o.Apply != 0 || o.Condition.Reason != ReasonUnschedulable || !strings.Contains(o.Condition.Message, "no node has 2 CPU free") || !o.Events[0].Warning {
		t.Fatalf("%+v", o)
	}
	o = Decide(Input{Policy: p, Now: t0, Rec: up(4, 10, 2000), Status: st, Capacity: &Capacity{Fit: 1, Why: "one node has room"}})
	if o.Apply != 6 || !strings.Contains(o.Status.Decisions[0].Message, "only 1 of 3 more TaskManagers fit") {
		t.Fatalf("partial: apply %d %+v", o.Apply, o.Status.Decisions)
	}
}

func TestRecommendModeChangesOnlyStatus(t *testing.T) {
	p := policy()
	p.Mode = v1.AutoscalerRecommend
	o := decide(p, v1.AutoscalerStatus{}, up(4, 9, 2000), t0)
	if o.Apply != 0 || o.Status.Pending != nil || o.Status.Parallelism != 0 || o.Status.Decisions[0].Result != ResultRecommended {
		t.Fatalf("%+v", o)
	}
	// The same direction again, even to another target, is not recorded
	// again within the stabilization interval; after it, it is.
	o2 := decide(p, o.Status, up(4, 10, 2000), t0.Add(time.Minute))
	if o2.Recorded || len(o2.Status.Decisions) != 1 {
		t.Fatalf("%+v", o2.Status.Decisions)
	}
	if o3 := decide(p, o2.Status, up(4, 10, 2000), t0.Add(p.Stabilization)); !o3.Recorded {
		t.Fatalf("after the stabilization: %+v", o3.Status.Decisions)
	}
}

func TestPausedDuringUpgradeOrDegraded(t *testing.T) {
	o := Decide(Input{Policy: policy(), Now: t0, Rec: up(4, 9, 2000), Paused: "an upgrade is in flight"})
	if o.Apply != 0 || o.Condition.Reason != ReasonPaused || o.Recorded {
		t.Fatalf("%+v", o)
	}
}

// A scale-up after which the sources' rate did not follow is not repeated:
// the job runs 8 subtasks, a hot key or an external limit holds the
// source at 2050 records/s (2000 before), and the evaluation still asks
// for more.
func TestScaleUpThatDidNotHelpStops(t *testing.T) {
	p := policy()
	st := v1.AutoscalerStatus{Parallelism: 8, Decisions: []v1.AutoscalerDecision{{
		Time: metav1.NewTime(t0.Add(-20 * time.Minute)), From: 4, To: 8, Result: ResultSucceeded, Reason: "ScaleUp",
		Inputs: v1.DecisionInputs{SourceRate: 2000, ArrivalRate: 3000, TargetRate: 3500},
	}}}
	// Recorded: the enrich vertex stays saturated at 8 (a capacity that
	// did not scale), so the rate barely moved.
	j := job{caps: []float64{4000, 256.25, 1500}, parallelism: 8}
	h := j.history(t0.Add(-p.Window), p.Window, p.Interval, constant(3000))
	rec := Evaluate(h, p, t0.Add(-p.Window), t0)
	if rec.Kind != Up || rec.Inputs.SourceRate != 2050 {
		t.Fatalf("evaluation %s %+v", rec.Kind, rec.Inputs)
	}
	o := decide(p, st, rec, t0)
	if o.Apply != 0 || o.Condition.Reason != ReasonIneffective || o.Status.Blocked == nil || !strings.Contains(o.Condition.Message, "did not help") {
		t.Fatalf("%+v", o)
	}
	// The next evaluation still asks for more: blocked, and said once.
	o2 := decide(p, o.Status, rec, t0.Add(time.Minute))
	if o2.Apply != 0 || o2.Condition.Reason != ReasonBlocked || o2.Recorded {
		t.Fatalf("second: %+v", o2)
	}
	// An arrival rate 50% higher lifts the block.
	busier := rec
	busier.Inputs.ArrivalRate = 5000
	if o3 := decide(p, o.Status, busier, t0.Add(2*time.Minute)); o3.Apply == 0 {
		t.Fatalf("after the load moved: %+v", o3.Condition)
	}
}

func TestFailedRescaleIsRevertedAndBlocked(t *testing.T) {
	p := policy()
	o := decide(p, v1.AutoscalerStatus{}, up(4, 9, 2000), t0)
	st := o.Status
	ev := Settle(&st, p, t0.Add(time.Minute), Running{Parallelism: 4}, false, true, "the job failed: OutOfMemoryError", 4)
	if ev == nil || !ev.Warning || st.Parallelism != 4 || st.Pending != nil || st.Blocked == nil || st.Decisions[0].Result != ResultFailed {
		t.Fatalf("%+v %+v", ev, st)
	}
	o = decide(p, st, up(4, 9, 2000), t0.Add(2*time.Minute))
	if o.Apply != 0 || o.Condition.Reason != ReasonBlocked {
		t.Fatalf("repeat: %+v", o.Condition)
	}
	// A smaller step is allowed.
	if o = decide(p, st, up(4, 6, 2000), t0.Add(3*time.Minute)); o.Apply != 6 {
		t.Fatalf("smaller step: %+v", o.Condition)
	}
}

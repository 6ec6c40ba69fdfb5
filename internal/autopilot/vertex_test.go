package autopilot

import (
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// win is a vertex's window as windowOf gives it.
func win(id string, source bool, p int32, in, out, busy float64) vertexWindow {
	v := vertexWindow{VertexSample: VertexSample{ID: id, Name: id, Parallelism: p, MaxParallelism: 720, Source: source,
		RecordsIn: in, RecordsOut: out, BusyAvg: busy, BusyMax: busy}}
	if source {
		v.Read, v.RecordsIn = in, 0
	}
	return v
}

func TestSizeVertex(t *testing.T) {
	p := policy()
	p.MaxParallelism, p.MaxTMs, p.Slots = 64, 32, 2
	for _, tc := range []struct {
		name   string
		v      vertexWindow
		target float64
		to     int32
		bound  string
		capped bool
	}{
		// 4 subtasks take in 1000 records/s at 500 ms/s busy: 500 each at
		// full busy time. 3000 records/s at 70% needs 3000/350 = 8.6 → 9,
		// rounded to a divisor of 720: 9.
		{"scale up from the true rate", win("a", false, 4, 1000, 1000, 500), 3000, 9, "", false},
		// 11 is no divisor of 720: 12 is.
		{"up to a divisor of the max parallelism", win("a", false, 4, 1000, 1000, 500), 3700, 12, BoundKeyDivisor, false},
		{"within the band keeps it", win("a", false, 4, 1000, 1000, 500), 1400, 4, BoundBand, false},
		{"down", win("a", false, 8, 1000, 1000, 250), 1000, 3, "", false},
		{"never busy: one subtask", win("a", false, 8, 1000, 1000, 0), 1000, 1, "", false},
		{"capped by maxParallelism", win("a", false, 4, 1000, 1000, 500), 100000, 64, BoundMax, true},
		{"capped by its max parallelism", func() vertexWindow { v := win("a", false, 4, 1000, 1000, 500); v.MaxParallelism = 16; return v }(), 100000, 16, BoundKeyGroups, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := sizeVertex(tc.v, tc.target, tc.target, p)
			if n.To != tc.to || n.Bound != tc.bound || n.Capped != tc.capped {
				t.Fatalf("to %d (%q, capped %v), want %d (%q, capped %v): %+v", n.To, n.Bound, n.Capped, tc.to, tc.bound, tc.capped, n)
			}
		})
	}
}

func TestSizeVertexSkewedKeepsItsParallelism(t *testing.T) {
	v := win("a", false, 4, 1000, 1000, 500)
	v.BusyMax = 1000
	n := sizeVertex(v, 1400, 1400, policy())
	if !n.Skewed || n.To != 4 || n.Bound != BoundSkewed {
		t.Fatalf("%+v", n)
	}
}

func TestRoundUpToKafkaPartitions(t *testing.T) {
	p := policy()
	for _, tc := range []struct {
		partitions, need, want int32
	}{{12, 5, 6}, {12, 7, 12}, {0, 5, 5}, {7, 5, 7}, {64, 5, 8}} {
		v := win("s", true, 2, 100, 100, 500)
		v.Partitions = tc.partitions
		got, _ := roundUp(tc.need, "", p, v)
		if got != tc.want {
			t.Errorf("%d partitions, need %d: %d, want %d", tc.partitions, tc.need, got, tc.want)
		}
	}
	// No divisor within the bounds: the need itself.
	v := win("s", true, 2, 100, 100, 500)
	v.Partitions = 97
	if got, _ := roundUp(5, "", p, v); got != 5 {
		t.Errorf("97 partitions: %d", got)
	}
}

// Each vertex must take in its upstream's target output through the
// edge's measured selectivity: a filter passing half, then a flatMap
// doubling, with a side output taking a quarter of what Enrich emits.
func TestTargetRatesThroughSelectivity(t *testing.T) {
	vs := []vertexWindow{
		win("src", true, 2, 1000, 1000, 100),
		win("filter", false, 2, 1000, 500, 100),
		win("explode", false, 2, 500, 1000, 100),
		win("sink", false, 2, 750, 0, 100),
	}
	got := targetRates(vs, map[string]float64{"src": 3000})
	want := []float64{3000, 3000, 1500, 2250}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Errorf("%s: %.1f, want %.1f", vs[i].ID, got[i], want[i])
		}
	}
	// Two sources into one vertex: it takes both.
	two := []vertexWindow{win("a", true, 1, 100, 100, 100), win("b", true, 1, 300, 300, 100), win("join", false, 1, 400, 400, 100)}
	if r := targetRates(two, map[string]float64{"a": 200, "b": 300}); math.Abs(r[2]-500) > 1e-6 {
		t.Errorf("join %.1f, want 500", r[2])
	}
}

// A source needing 2 and an enrichment needing 12 run at their own
// parallelism; the job's is the highest, and the TaskManagers follow it.
func TestEvaluateSizesEachVertex(t *testing.T) {
	p := policy()
	p.MaxParallelism, p.MaxTMs = 32, 16
	j := job{caps: []float64{4000, 250, 8000}, parallelism: 4}
	h := j.history(t0, p.Window, p.Interval, constant(950))
	rec := Evaluate(h, p, t0, h[len(h)-1].Time)
	got := map[string]int32{}
	for _, n := range rec.PerVertex {
		got[n.Name] = n.To
	}
	// 950 records/s on 1000 of capacity: Enrich would be busy 95% at the
	// target rate (950 and a minute's arrivals over 15 minutes, 1013):
	// 1013/175 = 5.8 → 8 (a divisor of 128). The source and the sink,
	// at 6% and 3%, go to one subtask.
	if rec.Kind != Up || got["Enrich"] != 8 || got["Source: orders"] != 1 || got["Sink: warehouse"] != 1 || rec.To != 8 {
		t.Fatalf("%s to %d: %v: %s", rec.Kind, rec.To, got, rec.Message)
	}
	for _, d := range VertexDecisions(rec.PerVertex) {
		if d.Name == "Enrich" && (d.ProcessingRate != 250 || d.TargetRate != 1013 || d.BusyMsPerSecond != 950) {
			t.Errorf("Enrich's inputs %+v", d)
		}
	}
}

// No vertex gives up subtasks while the backlog is above a tenth of the
// catch-up duration's arrivals.
func TestNoScaleDownWhileTheBacklogDrains(t *testing.T) {
	p := policy()
	j := job{caps: []float64{4000, 500, 8000}, parallelism: 8, lag: 1e7}
	h := j.history(t0, p.Window, p.Interval, constant(1000))
	rec := Evaluate(h, p, t0, h[len(h)-1].Time)
	if len(rec.PerVertex) != 3 {
		t.Fatalf("%+v", rec)
	}
	for _, n := range rec.PerVertex {
		if n.To < n.From {
			t.Errorf("%s %d→%d with a backlog of %d", n.Name, n.From, n.To, rec.Inputs.Lag)
		}
	}
}

func needs(from ...int32) []VertexNeed {
	var out []VertexNeed
	for i := 0; i+1 < len(from); i += 2 {
		id := strings.Repeat(string(rune('a'+i/2)), 32)
		out = append(out, VertexNeed{ID: id, Name: "v" + string(rune('a'+i/2)), From: from[i], To: from[i+1], In: 100, Busy: 800, ProcessingRate: 100 / (float64(from[i]) * 0.8), TargetRate: 200})
	}
	return out
}

func recOf(kind Kind, ns []VertexNeed) Recommendation {
	k, from, to := jobOf(ns)
	if kind == "" {
		kind = k
	}
	return Recommendation{Kind: kind, From: from, To: to, PerVertex: ns, Message: "m", Inputs: v1.DecisionInputs{SourceRate: 100, ArrivalRate: 200, TargetRate: 200}}
}

func TestApplyPerVertex(t *testing.T) {
	p := policy()
	o := decide(p, v1.AutoscalerStatus{}, recOf("", needs(4, 2, 4, 12, 4, 1)), t0)
	if o.Apply != 12 || len(o.Status.Vertices) != 3 || o.Status.Vertices[0].Parallelism != 2 || o.Status.Vertices[1].Parallelism != 12 ||
		o.Status.TaskManagers != p.TaskManagers(12) || len(o.Status.Decisions[0].Vertices) != 3 {
		t.Fatalf("%+v", o.Status)
	}
	// Settled once every vertex runs at its own, with the downtime.
	st := o.Status
	run := Running{Parallelism: 12, Vertices: map[string]int32{needs(1, 1)[0].ID: 2, needs(1, 1, 1, 1)[1].ID: 12, needs(1, 1, 1, 1, 1, 1)[2].ID: 4}, Since: t0.Add(40 * time.Second)}
	if ev := Settle(&st, p, t0.Add(time.Minute), run, false, false, "", 0); ev != nil || st.Pending == nil {
		t.Fatalf("a vertex off its target settled: %+v", ev)
	}
	run.Vertices[needs(1, 1, 1, 1, 1, 1)[2].ID] = 1
	if ev := Settle(&st, p, t0.Add(time.Minute), run, false, false, "", 0); ev == nil || st.Pending != nil || st.Decisions[0].DowntimeSeconds != 40 {
		t.Fatalf("%+v %+v", ev, st.Decisions[0])
	}
	if got := RestartEstimate(st.Decisions, p.DefaultRestartTime()); got != 40*time.Second {
		t.Errorf("restart estimate %s", got)
	}
}

// A scale-down that changes no vertex's highest parallelism is still a
// scale-down, delayed and merged vertex by vertex.
func TestScaleDownPerVertexMerged(t *testing.T) {
	p := policy()
	o := decide(p, v1.AutoscalerStatus{}, recOf("", needs(12, 2, 12, 6)), t0)
	if o.Apply != 0 || o.Status.PendingScaleDown == nil {
		t.Fatalf("%+v", o.Condition)
	}
	o = decide(p, o.Status, recOf("", needs(12, 4, 12, 8)), t0.Add(30*time.Minute))
	o = decide(p, o.Status, recOf("", needs(12, 1, 12, 4)), t0.Add(p.ScaleDownDelay))
	if o.Apply != 8 || o.Status.Vertices[0].Parallelism != 4 || o.Status.Vertices[1].Parallelism != 8 || o.Status.Decisions[0].Reason != string(Down) {
		t.Fatalf("apply %d %+v %+v", o.Apply, o.Status.Vertices, o.Condition)
	}
}

// During the delay's first metric window a recommendation still
// averages samples from before it (here, a spike that has passed): the
// merge starts a window after the first recommendation, which is held
// until then without a change to the status.
func TestScaleDownMergesFromTheDelaysFirstFullWindow(t *testing.T) {
	p := policy()
	o := decide(p, v1.AutoscalerStatus{}, recOf("", needs(20, 15, 20, 15)), t0)
	first := o.Status.DeepCopy()
	o = decide(p, o.Status, recOf("", needs(20, 12, 20, 12)), t0.Add(p.Window/2))
	o = decide(p, o.Status, recOf("", needs(20, 8, 20, 8)), t0.Add(p.Window-time.Second))
	if !equality.Semantic.DeepEqual(o.Status, *first) {
		t.Fatalf("the status moved within the first window: %+v", o.Status.PendingScaleDown)
	}
	// From a window after the first on, the highest wins.
	o = decide(p, o.Status, recOf("", needs(20, 10, 20, 10)), t0.Add(p.Window))
	if ps := o.Status.PendingScaleDown; ps == nil || ps.Parallelism != 10 || ps.MergedFrom == nil || !ps.Since.Equal(&metav1.Time{Time: t0}) {
		t.Fatalf("pending %+v", ps)
	}
	o = decide(p, o.Status, recOf("", needs(20, 6, 20, 6)), t0.Add(2*p.Window))
	o = decide(p, o.Status, recOf("", needs(20, 6, 20, 6)), t0.Add(p.ScaleDownDelay))
	if o.Apply != 10 {
		t.Fatalf("apply %d %+v", o.Apply, o.Condition)
	}
}

func TestRecommendOnceUntilItChanges(t *testing.T) {
	p := policy()
	p.Mode = v1.AutoscalerRecommend
	st := v1.AutoscalerStatus{}
	recorded := 0
	// Two minutes of identical recommendations, then an hour: one entry.
	for el := time.Duration(0); el <= time.Hour; el += p.Interval {
		o := decide(p, st, recOf("", needs(4, 8, 4, 2)), t0.Add(el))
		if o.Recorded {
			recorded++
		}
		st = o.Status
	}
	if recorded != 1 || len(st.Decisions) != 1 {
		t.Fatalf("recorded %d times: %+v", recorded, st.Decisions)
	}
	// Another target is recorded, once the stabilization has passed.
	if o := decide(p, st, recOf("", needs(4, 12, 4, 2)), t0.Add(time.Hour+time.Minute)); !o.Recorded || o.Status.Decisions[0].To != 12 {
		t.Fatalf("a new target: %+v", o.Status.Decisions)
	}
}

func TestCappedRecommendationSaysCapReached(t *testing.T) {
	p := policy()
	p.Mode = v1.AutoscalerRecommend
	ns := needs(4, 32)
	ns[0].Capped, ns[0].Bound = true, BoundMax
	o := decide(p, v1.AutoscalerStatus{}, recOf("", ns), t0)
	if d := o.Status.Decisions[0]; d.Reason != ReasonCapReached || d.Result != ResultRecommended || !strings.Contains(d.Message, "out of reach") {
		t.Fatalf("%+v", d)
	}
	// Already at the cap: refused once as CapReached, not repeated.
	ns = needs(32, 32)
	ns[0].Capped, ns[0].Bound = true, BoundMax
	p.Mode = v1.AutoscalerApply
	o = decide(p, v1.AutoscalerStatus{}, recOf(Keep, ns), t0)
	if !o.Recorded || o.Status.Decisions[0].Reason != ReasonCapReached || o.Condition.Reason != ReasonCapReached {
		t.Fatalf("%+v %+v", o.Condition, o.Status.Decisions)
	}
	if o2 := decide(p, o.Status, recOf(Keep, ns), t0.Add(time.Minute)); o2.Recorded {
		t.Fatalf("recorded again: %+v", o2.Status.Decisions)
	}
}

// A vertex whose scale-up did not raise what it takes in is blocked; while
// it still wants more, no other vertex grows either (what they would pass
// on, it could not take). Once it wants no more, the others go on.
func TestIneffectivePerVertex(t *testing.T) {
	p := policy()
	a, b := needs(1, 1)[0].ID, needs(1, 1, 1, 1)[1].ID
	last := v1.AutoscalerDecision{Time: metav1.NewTime(t0.Add(-20 * time.Minute)), Result: ResultSucceeded, Reason: string(Up), From: 4, To: 8,
		Vertices: []v1.VertexDecision{{ID: a, Name: "va", From: 4, To: 8, BusyMsPerSecond: 1000, ProcessingRate: 100, TargetRate: 800}, {ID: b, Name: "vb", From: 2, To: 2}}}
	st := v1.AutoscalerStatus{Parallelism: 8, Decisions: []v1.AutoscalerDecision{last}}
	// va takes in 420 records/s as before (400), against 800 expected; vb
	// would want 4.
	ns := []VertexNeed{{ID: a, Name: "va", From: 8, To: 16, In: 420}, {ID: b, Name: "vb", From: 2, To: 4, In: 300}}
	o := decide(p, st, recOf("", ns), t0)
	if o.Status.Blocked == nil || len(o.Status.Blocked.Vertices) != 1 || o.Status.Blocked.Vertices[0].ID != a || o.Status.Blocked.Vertices[0].Parallelism != 8 {
		t.Fatalf("block %+v", o.Status.Blocked)
	}
	if o.Apply != 0 || o.Condition.Reason != ReasonIneffective || o.Status.Decisions[0].Reason != ReasonIneffective {
		t.Fatalf("apply %d %+v %+v", o.Apply, o.Condition, o.Status.Decisions)
	}
	// va within the band now: vb grows.
	ns = []VertexNeed{{ID: a, Name: "va", From: 8, To: 8, In: 420, InBand: true}, {ID: b, Name: "vb", From: 2, To: 4, In: 300}}
	o = decide(p, o.Status, recOf("", ns), t0.Add(time.Minute))
	if o.Apply != 8 || o.Status.Vertices[0].Parallelism != 8 || o.Status.Vertices[1].Parallelism != 4 {
		t.Fatalf("apply %d %+v %+v", o.Apply, o.Status.Vertices, o.Condition)
	}
}

func TestKafkaPartitionsFromTheListing(t *testing.T) {
	ids := []string{
		"Source__orders.KafkaSourceReader.topic.orders.partition.0.currentOffset",
		"Source__orders.KafkaSourceReader.topic.orders.partition.1.currentOffset",
		"Source__orders.KafkaSourceReader.topic.orders.partition.1.committedOffset",
		"Source__orders.KafkaSourceReader.topic.a.partition.b.partition.11.currentOffset",
		"Source__orders.KafkaSourceReader.topic.orders.partition.x.currentOffset",
		"Source__orders.pendingRecords",
	}
	if n := ListSourceNames(ids); n.Partitions != 3 || n.Pending == "" {
		t.Fatalf("%+v", n)
	}
}

// A scale-down is worth its restart when it frees at least
// boundary/target (2/7) of the TaskManagers; a job at its floor of
// TaskManagers, which can free none, when it frees that share of its
// subtasks.
func TestScaleDownWorthARestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor int32
		ns    []VertexNeed
		want  bool
	}{
		{"one subtask of sixteen, same TaskManagers", 1, needs(16, 15, 5, 5), false},
		{"one TaskManager of eight", 1, needs(16, 14, 5, 5), false},
		{"three TaskManagers of eight", 1, needs(16, 10, 5, 5), true},
		{"two TaskManagers of seven", 1, needs(14, 10, 5, 5), true},
		{"subtasks only, above the floor", 1, needs(16, 16, 8, 1), false},
		{"at the floor, 7 of 24 subtasks", 8, needs(16, 16, 8, 1), true},
		{"at the floor, 6 of 24 subtasks", 8, needs(16, 16, 8, 2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy() // two slots per TaskManager
			p.FloorTMs = tc.floor
			rec := recOf("", tc.ns)
			if _, ok := worthIt(p, rec, rec.To); ok != tc.want {
				t.Errorf("worth it %v, want %v", ok, tc.want)
			}
			st := v1.AutoscalerStatus{PendingScaleDown: &v1.PendingScaleDown{Since: metav1.NewTime(t0.Add(-p.ScaleDownDelay)), Parallelism: rec.To}}
			if o := decide(p, st, rec, t0); (o.Apply != 0) != tc.want {
				t.Errorf("applied %d: %+v", o.Apply, o.Condition)
			}
		})
	}
}

// Vertices within the band rescale alongside one above it (to their own
// need, up or down); alongside ones only below it, they may shrink only.
func TestAlongside(t *testing.T) {
	in := func(from, need int32) VertexNeed {
		return VertexNeed{From: from, To: from, Need: need, InBand: true, Bound: BoundBand}
	}
	out := func(from, to int32) VertexNeed { return VertexNeed{From: from, To: to, Need: to} }
	for _, tc := range []struct {
		name string
		ns   []VertexNeed
		want []int32
	}{
		{"one above the band", []VertexNeed{out(4, 8), in(4, 5), in(4, 3)}, []int32{8, 5, 3}},
		{"one below the band", []VertexNeed{out(8, 2), in(4, 5), in(4, 3)}, []int32{2, 4, 3}},
		{"all within", []VertexNeed{in(4, 5), in(4, 3)}, []int32{4, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alongside(tc.ns)
			for i, n := range tc.ns {
				if n.To != tc.want[i] {
					t.Errorf("vertex %d: %d, want %d", i, n.To, tc.want[i])
				}
			}
		})
	}
}

// A step from 1000 to 3000 records/s a minute before the end: the
// window's average arrival is far below it, the last sample's read plus
// the backlog gauge's growth is not; the scale-up is sized for 3000.
func TestScaleUpFollowsAStepAtOnce(t *testing.T) {
	p := policy()
	j := job{caps: []float64{8000, 500, 8000}, parallelism: 4}
	end := p.Window
	h := j.history(t0, end, p.Interval, func(el time.Duration) float64 {
		if el > end-time.Minute {
			return 3000
		}
		return 1000
	})
	rec := Evaluate(h, p, t0, h[len(h)-1].Time)
	if rec.Kind != Up || rec.Inputs.ArrivalRate < 2900 {
		t.Fatalf("%s, arrival %d: %s", rec.Kind, rec.Inputs.ArrivalRate, rec.Message)
	}
	for _, n := range rec.PerVertex {
		// 3000 (and the backlog) at 350 a subtask: at least 9.
		if n.Name == "Enrich" && n.To < 9 {
			t.Errorf("Enrich to %d for a step to 3000", n.To)
		}
	}
}

func TestMetricsFromWaitsForFlinksMeters(t *testing.T) {
	p := policy()
	if got := p.MetricsFrom(t0); got != t0.Add(p.Stabilization) {
		t.Errorf("default: %s", got.Sub(t0))
	}
	p.Stabilization = 30 * time.Second
	if got := p.MetricsFrom(t0); got != t0.Add(65*time.Second) {
		t.Errorf("a short stabilization: %s, want the meters' 65s", got.Sub(t0))
	}
	// The restart assumed before one is measured follows the catch-up.
	if p.CatchUp = time.Minute; p.DefaultRestartTime() != 4*time.Second {
		t.Errorf("restart %s", p.DefaultRestartTime())
	}
}

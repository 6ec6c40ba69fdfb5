package autopilot

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// points is a source's window of ten minutes, a point every 15 s, what it
// read following rate (no backlog).
func points(rate func(el time.Duration) float64) vertexWindow {
	v := vertexWindow{VertexSample: VertexSample{ID: "s", Source: true}}
	for el := time.Duration(0); el <= 10*time.Minute; el += 15 * time.Second {
		v.points = append(v.points, point{at: t0.Add(el), read: rate(el), lagKnown: true})
	}
	return v
}

func TestClimb(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate func(el time.Duration) float64
		want float64 // records/s per second
	}{
		{"a ramp of 1 record/s per second", func(el time.Duration) float64 { return 1000 + el.Seconds() }, 1},
		{"flat", constant(1000), 0},
		{"a step in the last minute", func(el time.Duration) float64 { return map[bool]float64{true: 3000, false: 1000}[el > 9*time.Minute] }, 0},
		{"a step halfway", func(el time.Duration) float64 { return map[bool]float64{true: 3000, false: 1000}[el > 5*time.Minute] }, 0},
		{"falling", func(el time.Duration) float64 { return 2000 - el.Seconds() }, 0},
		{"rising, then a dip", func(el time.Duration) float64 {
			if el > 8*time.Minute {
				return 900
			}
			return 1000 + el.Seconds()
		}, 0},
		// Climbing ever slower (a square root): taken at its slowest,
		// between the last two quarters (their middles at 375 and 525 s),
		// 20(√525−√375)/150 = 0.47 records/s per second.
		{"a climb that slows", func(el time.Duration) float64 { return 1000 + 20*math.Sqrt(el.Seconds()) }, 0.47},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := points(tc.rate).climb()
			if math.Abs(got-tc.want) > 0.05 {
				t.Errorf("climb %.3f, want %.3f", got, tc.want)
			}
		})
	}
}

// On a climb the scale-up is sized for where the climb takes the rate
// within the climb horizon (at most half again the rate now); whether to
// scale up is judged on the rate now, and without a horizon it is sized
// for the rate now.
func TestScaleUpOnAClimbIsSizedAhead(t *testing.T) {
	p := policy()
	// Enrich: 4 subtasks of 100 records/s at full busy time.
	caps := []float64{4000, 100, 8000}
	evaluate := func(p Policy, rate func(el time.Duration) float64) (Recommendation, VertexNeed) {
		j := job{caps: caps, parallelism: 4}
		h := j.history(t0, p.Window, p.Interval, rate)
		rec := Evaluate(h, p, t0, h[len(h)-1].Time)
		for _, n := range rec.PerVertex {
			if n.Name == "Enrich" {
				return rec, n
			}
		}
		t.Fatalf("no Enrich: %+v", rec.PerVertex)
		return rec, VertexNeed{}
	}

	// 315 records/s at the end, climbing 180 an hour: Enrich would be
	// busy 84% at the target rate, within the band: no scale-up for the
	// climb alone.
	if rec, n := evaluate(p, func(el time.Duration) float64 { return 300 + 0.05*el.Seconds() }); rec.Kind == Up || n.To != 4 {
		t.Fatalf("%s, Enrich to %d: %s", rec.Kind, n.To, rec.Message)
	}

	// 375 at the end: past the band's upper edge. Sized for where the
	// climb takes it in an hour, 555, plus the downtime's arrivals: 592
	// at 70 each, 8.5 → 16 (a divisor of 128), against 400/70 = 5.7 → 8
	// for the rate now.
	climb := func(el time.Duration) float64 { return 360 + 0.05*el.Seconds() }
	rec, n := evaluate(p, climb)
	if rec.Kind != Up || n.To != 16 {
		t.Fatalf("%s, Enrich to %d: %s", rec.Kind, n.To, rec.Message)
	}
	if in := rec.Inputs; in.ArrivalClimb < 170 || in.ArrivalClimb > 190 || in.AheadRate < 580 || in.AheadRate > 600 || !strings.Contains(rec.Message, "climbing") {
		t.Errorf("inputs %+v: %s", in, rec.Message)
	}
	flat := p
	flat.ClimbHorizon = 0
	if rec, n := evaluate(flat, climb); rec.Kind != Up || n.To != 8 || rec.Inputs.AheadRate != 0 {
		t.Errorf("without a horizon: %s, Enrich to %d, %+v", rec.Kind, n.To, rec.Inputs)
	}

	// A steep climb is taken to half again the rate now at most.
	rec, _ = evaluate(p, func(el time.Duration) float64 { return 300 + el.Seconds() })
	if in := rec.Inputs; rec.Kind != Up || in.AheadRate == 0 || float64(in.AheadRate) > 1.5*float64(in.TargetRate)+1 {
		t.Errorf("%s, %+v", rec.Kind, in)
	}
}

// A vertex below the band is sized for the rate now: a climb does not
// turn its scale-down into a scale-up. One above it is sized ahead.
func TestSizeVertexAhead(t *testing.T) {
	p := policy()
	low := win("a", false, 8, 1000, 1000, 250) // 500 each at full busy
	if n := sizeVertex(low, 1000, 3000, p); n.To >= 8 || n.To != 3 {
		t.Errorf("below the band: to %d (%+v)", n.To, n)
	}
	high := win("a", false, 4, 1000, 1000, 500)
	if n := sizeVertex(high, 2000, 3000, p); n.To != 9 { // 3000/350 = 8.6 → 9
		t.Errorf("above the band: to %d (%+v)", n.To, n)
	}
}

// The bound trims a size ahead of a climb without calling the target out
// of reach (CapReached): that is judged at the rate now.
func TestCapReachedIsJudgedAtTheRateNow(t *testing.T) {
	p := policy()
	p.MaxParallelism = 10
	v := win("a", false, 4, 1000, 1000, 500) // 500 each at full busy
	// Now 3000 needs 3000/350 = 8.6 → 9 (within 10); ahead 4500 needs 13.
	if n := sizeVertex(v, 3000, 4500, p); n.To != 10 || n.Capped || n.Bound != BoundMax {
		t.Errorf("reachable now: to %d, capped %v, bound %q; want 10, false, %q", n.To, n.Capped, n.Bound, BoundMax)
	}
	// Now 4000 needs 11.4 → 12: out of reach.
	if n := sizeVertex(v, 4000, 4500, p); n.To != 10 || !n.Capped {
		t.Errorf("out of reach now: to %d, capped %v; want 10, true", n.To, n.Capped)
	}
}

// A scale-down keeps the hottest subtask at the target utilization: a
// hot key's records stay on one subtask, the rest spread evenly, so
// fewer subtasks only make it hotter.
func TestScaleDownKeepsTheHotSubtaskAtTheTarget(t *testing.T) {
	p := policy()
	// 30 subtasks of 300 records/s at full busy take in 2500: 28% busy
	// on average, the hottest (a key with 5% of the records) 68%.
	v := win("enrich", false, 30, 2500, 2500, 2500.0/30/300*1000)
	hot := 2500 * (1.0/30 + 0.05*29/30) / 300 * 1000
	v.BusyMax = hot
	n := sizeVertex(v, 2500, 2500, p)
	if n.To != 30 || n.Bound != BoundHot {
		t.Errorf("a hot key at 68%%: to %d (%q), want 30 kept", n.To, n.Bound)
	}
	// Even, the same vertex goes to 2500/210 = 11.9 → 12.
	v.BusyMax = v.BusyAvg
	if n := sizeVertex(v, 2500, 2500, p); n.To != 12 {
		t.Errorf("even: to %d (%q)", n.To, n.Bound)
	}
	for _, tc := range []struct {
		name             string
		from             int32
		util, hot, floor float64
		want             int32
	}{
		{"even", 10, 0.3, 0.3, 0.7, 0},
		{"one subtask", 1, 0.3, 0.3, 0.7, 0},
		// total 3 subtasks' worth, the key 0.2·10/9 = 0.22: (3−0.22)/(0.7−0.22) = 5.8 → 6.
		{"a mild hot key", 10, 0.3, 0.5, 0.7, 6},
		{"a key past the target alone", 10, 0.3, 1.0, 0.7, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hotFloor(VertexNeed{From: tc.from, Util: tc.util, HotUtil: tc.hot}, tc.floor); got != tc.want {
				t.Errorf("%d, want %d", got, tc.want)
			}
		})
	}
}

// Rounding to a divisor never turns a scale-down into a scale-up: 7
// subtasks (no divisor of 720) held by their hottest one stay at 7.
func TestRoundingNeverTurnsAScaleDownUp(t *testing.T) {
	p := policy()
	v := win("a", false, 7, 700, 700, 200)
	v.BusyMax = 900
	if n := sizeVertex(v, 700, 700, p); n.To != 7 {
		t.Errorf("to %d (%q)", n.To, n.Bound)
	}
}

// A scale-up judged by its processing rate: after a step in the load a
// sink that more writers do not relieve takes in more (the demand rose)
// but processes no more at full busy time; it is blocked, and the block
// holds past six windows while neither the load nor its processing
// rate moves, and lifts once its processing rate rises by half.
func TestIneffectiveByProcessingRate(t *testing.T) {
	p := policy()
	sink := needs(1, 1)[0].ID
	// 2 writers took in 2500 records/s at 833 ms/s: 1500 each, 3000 in all.
	last := v1.AutoscalerDecision{Time: metav1.NewTime(t0.Add(-20 * time.Minute)), Result: ResultSucceeded, Reason: string(Up), From: 2, To: 3,
		Vertices: []v1.VertexDecision{{ID: sink, Name: "sink", From: 2, To: 3, BusyMsPerSecond: 833, ProcessingRate: 1500, TargetRate: 2750}}}
	st := v1.AutoscalerStatus{Parallelism: 3, Decisions: []v1.AutoscalerDecision{last}}
	// 3 writers take in 3000 at full busy time: 1000 each, 3000 in all.
	saturated := func(rate float64) Recommendation {
		return recOf("", []VertexNeed{{ID: sink, Name: "sink", From: 3, To: 6, In: 3000, Busy: 1000, ProcessingRate: rate}})
	}
	o := decide(p, st, saturated(1000), t0)
	if b := o.Status.Blocked; b == nil || b.Reason != ReasonIneffective || len(b.Vertices) != 1 || b.Vertices[0].Parallelism != 3 || b.Vertices[0].ProcessingRate != 3000 {
		t.Fatalf("block %+v: %+v", o.Status.Blocked, o.Condition)
	}
	if o.Apply != 0 || !strings.Contains(o.Status.Decisions[0].Message, "processes 3000 records/s at full busy time, against 3000 before and 4500 expected") {
		t.Fatalf("apply %d: %s", o.Apply, o.Status.Decisions[0].Message)
	}
	later := t0.Add(7 * p.Window)
	if o2 := decide(p, o.Status, saturated(1000), later); o2.Apply != 0 || o2.Status.Blocked == nil {
		t.Fatalf("lifted after seven windows: %+v", o2.Condition)
	}
	if o3 := decide(p, o.Status, saturated(1500), later); o3.Status.Blocked != nil || o3.Apply == 0 {
		t.Fatalf("a processing rate 50%% higher: %+v %+v", o3.Status.Blocked, o3.Condition)
	}

	// One whose processing rate followed is not blocked.
	if o := decide(p, st, saturated(1450), t0); o.Status.Blocked != nil || o.Apply == 0 {
		t.Fatalf("helped: %+v %+v", o.Status.Blocked, o.Condition)
	}
}

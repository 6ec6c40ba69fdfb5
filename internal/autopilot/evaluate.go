package autopilot

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Kind is what a recommendation says.
type Kind string

const (
	// Collecting: the window since the last rescale (or the job's start)
	// is not full yet.
	Collecting Kind = "CollectingMetrics"
	// Keep: the bottleneck is within the band around the target.
	Keep Kind = "Stable"
	// Up and Down: another parallelism.
	Up   Kind = "ScaleUp"
	Down Kind = "ScaleDown"
	// Skewed: the average is within the band but the hottest subtask is
	// not; more parallelism does not relieve a hot key.
	Skewed Kind = "Skewed"
	// NoThroughput: records wait but the sources emit nothing; no rate to
	// size from.
	NoThroughput Kind = "NoThroughput"
)

// Recommendation is the evaluation of a window of metrics.
type Recommendation struct {
	Kind     Kind
	From, To int32
	// PerVertex is each vertex's own need, for an in-place rescale.
	PerVertex map[string]int32
	Inputs    v1.DecisionInputs
	Message   string
	// Summary is Message without the numbers that move with every
	// sample, for the condition: a status that changes only when the
	// decision does costs no writes in between.
	Summary string
}

// vertexWindow is one vertex's averages over the window.
type vertexWindow struct {
	VertexSample
	samples int
	// firstLag and lastLag, with their times, give the backlog's growth,
	// from the samples whose lag was known (lagKnown: any was).
	firstLag, lastLag float64
	firstAt, lastAt   time.Time
	lagKnown          bool
	// startAt and spanAt are the first and last samples' times.
	startAt, spanAt time.Time
}

// Evaluate sizes the job from the samples taken since since (the job's
// start or the last rescale, plus the stabilization) and within the
// window before now. The model is Flink's own accounting: a vertex busy
// b ms per second at rate r handles r·1000/b at full busy time, so at
// the target rate R (arrival plus catch-up of the backlog) it would be
// busy b·R/r; it needs p·(b·R/r)/target subtasks. This needs no
// topology: each vertex's share of the sources' rate is what it was.
func Evaluate(h []Sample, p Policy, since, now time.Time) Recommendation {
	start := now.Add(-p.Window)
	if since.After(start) {
		start = since
	}
	vs := windowOf(h, start)
	if len(vs) == 0 {
		return Recommendation{Kind: Collecting, Message: "No samples of the running job yet"}
	}
	var sourceRate, lag, growth float64
	sources, span, samples := 0, time.Duration(-1), 0
	var unknown []string
	current := int32(0)
	for _, v := range vs {
		current = max(current, v.Parallelism)
		if !v.Source {
			continue
		}
		sources++
		sourceRate += v.Read
		if !v.lagKnown {
			unknown = append(unknown, v.Name)
		}
		lag += v.lastLag
		if d := v.lastAt.Sub(v.firstAt); d > 0 {
			growth += (v.lastLag - v.firstLag) / d.Seconds()
		}
		if d := v.spanAt.Sub(v.startAt); span < 0 || d < span {
			span = d
		}
		samples = max(samples, v.samples)
	}
	in := v1.DecisionInputs{SourceRate: round(sourceRate), Lag: round(lag), Samples: int32(samples)}
	if sources == 0 {
		return Recommendation{Kind: Collecting, From: current, To: current, Inputs: in,
			Message: "No source vertex reports metrics yet"}
	}
	rec := evaluate(vs, p, in, sourceRate, lag, growth, span, samples, current, start)
	if len(unknown) > 0 {
		// Sized from what the sources read alone: say so, rather than
		// report a backlog of zero as if it were measured.
		why := fmt.Sprintf("; the backlog of %s is unknown (no pendingRecords: a legacy SourceFunction, or a reader that has fetched nothing yet), so the arrival rate is taken as the read rate", strings.Join(unknown, ", "))
		rec.Message += why
		if rec.Summary != "" {
			rec.Summary += why
		}
	}
	return rec
}

// evaluate is Evaluate once the sources are known.
func evaluate(vs []vertexWindow, p Policy, in v1.DecisionInputs, sourceRate, lag, growth float64, span time.Duration, samples int, current int32, start time.Time) Recommendation {
	if need := p.Window - p.Interval; span < need || samples < 3 {
		return Recommendation{Kind: Collecting, From: current, To: current, Inputs: in,
			Message: fmt.Sprintf("Collecting metrics: %s of the %s window since %s (%d samples)", span.Round(time.Second), p.Window, start.UTC().Format(time.RFC3339), samples),
			Summary: fmt.Sprintf("Collecting metrics: the %s window from %s is full at %s", p.Window, start.UTC().Format(time.RFC3339), start.Add(p.Window).UTC().Format(time.RFC3339))}
	}
	arrival := math.Max(sourceRate+growth, 0)
	target := arrival + lag/p.CatchUp.Seconds()
	in.ArrivalRate, in.TargetRate = round(arrival), round(target)
	var k float64
	switch {
	case sourceRate >= 0.5:
		k = target / sourceRate
	case target >= 0.5:
		return Recommendation{Kind: NoThroughput, From: current, To: current, Inputs: in,
			Message: fmt.Sprintf("The sources emit nothing while %d records wait: no rate to size the job from (is it stuck? see JobsRunning)", in.Lag)}
	}
	lower, upper := p.Target-p.Boundary, p.Target+p.Boundary
	per := map[string]int32{}
	var bottleneck *vertexWindow
	var worst, hottest float64
	var hot *vertexWindow
	keyGroups := int32(math.MaxInt32)
	for i := range vs {
		v := &vs[i]
		u := v.BusyAvg / 1000 * k
		per[v.ID] = clamp(int32(math.Ceil(float64(v.Parallelism)*u/p.Target-1e-9)), p, v.MaxParallelism)
		if bottleneck == nil || u > worst {
			bottleneck, worst = v, u
		}
		if uh := v.BusyMax / 1000 * k; hot == nil || uh > hottest {
			hot, hottest = v, uh
		}
		if v.MaxParallelism > 0 {
			keyGroups = min(keyGroups, v.MaxParallelism)
		}
	}
	in.Bottleneck = bottleneck.Name
	in.BusyMsPerSecond = round(bottleneck.BusyAvg)
	in.MaxSubtaskBusyMsPerSecond = round(bottleneck.BusyMax)
	rates := fmt.Sprintf("target rate %d records/s (arrival %d, plus a backlog of %d over %s)", in.TargetRate, in.ArrivalRate, in.Lag, p.CatchUp)
	band := fmt.Sprintf("the band %.0f–%.0f%%", lower*100, upper*100)
	rec := Recommendation{From: current, To: current, PerVertex: per, Inputs: in}
	switch {
	case worst >= lower && worst <= upper && hottest > upper:
		in.Bottleneck, in.BusyMsPerSecond, in.MaxSubtaskBusyMsPerSecond = hot.Name, round(hot.BusyAvg), round(hot.BusyMax)
		rec.Inputs, rec.Kind = in, Skewed
		rec.Message = fmt.Sprintf("Vertex %s is skewed: at the %s its hottest subtask would be busy %.0f%% while the average is %.0f%%, within %s; more parallelism would not relieve a hot key",
			hot.Name, rates, hottest*100, hot.BusyAvg/1000*k*100, band)
		rec.Summary = fmt.Sprintf("Vertex %s is skewed: its hottest subtask is above %s while the average is within it; more parallelism would not relieve a hot key", hot.Name, band)
		return rec
	case worst >= lower && worst <= upper:
		rec.Kind = Keep
		rec.Message = fmt.Sprintf("Within %s: at the %s the busiest vertex, %s, would be busy %.0f%% at parallelism %d", band, rates, bottleneck.Name, worst*100, current)
		rec.Summary = fmt.Sprintf("Within %s at parallelism %d (busiest vertex %s)", band, current, bottleneck.Name)
		return rec
	}
	to := clamp(int32(math.Ceil(float64(bottleneck.Parallelism)*worst/p.Target-1e-9)), p, keyGroups)
	rec.To = to
	switch {
	case to > current:
		rec.Kind = Up
	case to < current:
		rec.Kind = Down
	default:
		rec.Kind = Keep
		rec.Message = fmt.Sprintf("Outside %s (vertex %s at %.0f%% for the %s), but parallelism %d is already the bound", band, bottleneck.Name, worst*100, rates, current)
		rec.Summary = fmt.Sprintf("Outside %s, but parallelism %d is already the bound (vertex %s)", band, current, bottleneck.Name)
		return rec
	}
	rec.Summary = fmt.Sprintf("Vertex %s is outside %s at parallelism %d", bottleneck.Name, band, current)
	rec.Message = fmt.Sprintf("Vertex %s would be busy %.0f%% at parallelism %d for the %s, outside %s: %d subtasks bring it to %.0f%% of the %.0f%% target",
		bottleneck.Name, worst*100, current, rates, band, to, worst*float64(bottleneck.Parallelism)/float64(to)*100, p.Target*100)
	return rec
}

// windowOf averages each vertex's samples taken at or after start; the
// parallelism is the latest sample's, and samples of another parallelism
// (before a rescale) are left out.
func windowOf(h []Sample, start time.Time) []vertexWindow {
	latest := map[string]int32{}
	for _, s := range h {
		for _, v := range s.Vertices {
			latest[v.ID] = v.Parallelism
		}
	}
	acc := map[string]*vertexWindow{}
	var order []string
	for _, s := range h {
		if s.Time.Before(start) {
			continue
		}
		for _, v := range s.Vertices {
			if v.Parallelism != latest[v.ID] {
				continue
			}
			w, ok := acc[v.ID]
			if !ok {
				w = &vertexWindow{VertexSample: VertexSample{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism, Source: v.Source},
					startAt: s.Time}
				acc[v.ID] = w
				order = append(order, v.ID)
			}
			if v.LagKnown {
				if !w.lagKnown {
					w.firstLag, w.firstAt, w.lagKnown = v.Lag, s.Time, true
				}
				w.lastLag, w.lastAt = v.Lag, s.Time
			}
			w.spanAt = s.Time
			w.samples++
			w.BusyAvg += v.BusyAvg
			w.BusyMax += v.BusyMax
			w.BackPressured += v.BackPressured
			w.RecordsIn += v.RecordsIn
			w.RecordsOut += v.RecordsOut
			w.Read += v.Read
			w.Source = w.Source || v.Source
		}
	}
	out := make([]vertexWindow, 0, len(order))
	for _, id := range order {
		w := acc[id]
		n := float64(w.samples)
		w.BusyAvg /= n
		w.BusyMax /= n
		w.BackPressured /= n
		w.RecordsIn /= n
		w.RecordsOut /= n
		w.Read /= n
		out = append(out, *w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Source && !out[j].Source })
	return out
}

// clamp bounds a parallelism by the policy and a vertex's key groups.
func clamp(v int32, p Policy, keyGroups int32) int32 {
	v = max(v, p.MinParallelism, 1)
	v = min(v, p.MaxParallelism, p.MaxTMs*p.Slots)
	if keyGroups > 0 {
		v = min(v, keyGroups)
	}
	return v
}

func round(f float64) int64 { return int64(math.Round(f)) }

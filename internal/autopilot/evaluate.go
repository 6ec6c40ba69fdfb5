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
	// PerVertex is each vertex's own need, in the order Flink lists the
	// vertices (sources first); From and To are their highest.
	PerVertex []VertexNeed
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
	// points are a source's samples (what it read, its lag when known),
	// for the arrival rate now and its trend.
	points []point
}

// point is one sample of a source.
type point struct {
	at        time.Time
	read, lag float64
	lagKnown  bool
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
	latest := latestParallelism(h)
	vs := windowOf(h, latest, start)
	collecting := collectingSince(h, latest, since)
	if len(vs) == 0 {
		return Recommendation{Kind: Collecting, Message: "No samples of the running job yet"}
	}
	var sourceRate, lag float64
	sources := 0
	cov := coverage{span: -1}
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
		if d := v.spanAt.Sub(v.startAt); cov.span < 0 || d < cov.span {
			cov.span = d
		}
		if f := collecting[v.ID]; f.After(cov.from) {
			cov.from = f
		}
		cov.samples = max(cov.samples, v.samples)
	}
	in := v1.DecisionInputs{SourceRate: round(sourceRate), Lag: round(lag), Samples: int32(cov.samples)}
	if sources == 0 {
		return Recommendation{Kind: Collecting, From: current, To: current, Inputs: in,
			Message: "No source vertex reports metrics yet"}
	}
	rec := evaluate(vs, p, in, sourceRate, lag, cov, current, now)
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

// evaluate is Evaluate once the sources are known: each vertex is sized
// on its own (see sizeVertex), the job's recommendation is theirs taken
// together (see jobOf).
func evaluate(vs []vertexWindow, p Policy, in v1.DecisionInputs, sourceRate, lag float64, cov coverage, current int32, now time.Time) Recommendation {
	if msg, summary := cov.lacking(p, now); msg != "" {
		return Recommendation{Kind: Collecting, From: current, To: current, Inputs: in, Message: msg, Summary: summary}
	}
	// A source's arrival rate is the window's, or the last minute's when
	// that is higher: a scale-up follows a step at once, a scale-down
	// waits for the window (and the scale-down delay).
	//
	// On a sustained climb each source is also sized ahead: for the rate
	// the climb reaches within the climb horizon (see sizeVertex).
	sources, ahead := map[string]float64{}, map[string]float64{}
	arrival, climb, gained := 0.0, 0.0, 0.0
	for _, v := range vs {
		if v.Source {
			a := math.Max(math.Max(v.Read+v.growth(), v.arrivalNow()), 0)
			// A climb seen through one window is taken to half again the
			// rate now at most: it says little of the hours after.
			c := v.climb()
			gain := math.Min(c*p.ClimbHorizon.Seconds(), a*maxClimb)
			sources[v.ID] = sourceTarget(a, v.lastLag, p)
			ahead[v.ID] = sourceTarget(a+gain, v.lastLag, p)
			arrival, climb, gained = arrival+a, climb+c, gained+gain
		}
	}
	target := sourceTarget(arrival, lag, p)
	in.ArrivalRate, in.TargetRate = round(arrival), round(target)
	in.RestartSeconds = int64(p.RestartTime.Seconds())
	if gained > 0 {
		in.ArrivalClimb, in.AheadRate = round(climb*3600), round(sourceTarget(arrival+gained, lag, p))
	}
	if sourceRate < 0.5 && target >= 0.5 {
		return Recommendation{Kind: NoThroughput, From: current, To: current, Inputs: in,
			Message: fmt.Sprintf("The sources emit nothing while %d records wait: no rate to size the job from (is it stuck? see JobsRunning)", in.Lag)}
	}
	targets, aheads := targetRates(vs, sources), targetRates(vs, ahead)
	needs := make([]VertexNeed, len(vs))
	for i, v := range vs {
		needs[i] = sizeVertex(v, targets[i], aheads[i], p)
	}
	alongside(needs)
	if backlogHigh(lag, arrival, p) {
		// No vertex gives up subtasks while the backlog drains.
		for i := range needs {
			if needs[i].To < needs[i].From {
				needs[i].To, needs[i].Bound = needs[i].From, BoundBacklog
			}
		}
	}
	if p.Uniform {
		uniform(needs)
	}
	kind, from, to := jobOf(needs)
	bottleneck, hot := &needs[0], &needs[0]
	for i := range needs {
		if needs[i].Util > bottleneck.Util {
			bottleneck = &needs[i]
		}
		if needs[i].Skewed && (!hot.Skewed || needs[i].HotUtil > hot.HotUtil) {
			hot = &needs[i]
		}
	}
	in.Bottleneck, in.BusyMsPerSecond = bottleneck.Name, round(bottleneck.Busy)
	in.MaxSubtaskBusyMsPerSecond = round(vs[indexOf(needs, bottleneck.ID)].BusyMax)
	rates := fmt.Sprintf("target rate %d records/s (arrival %d, plus a backlog of %d and %s of downtime's arrivals over %s)", in.TargetRate, in.ArrivalRate, in.Lag, p.RestartTime, p.CatchUp)
	if in.AheadRate > 0 {
		rates += fmt.Sprintf(", climbing %d records/s an hour (sized for %d, where the climb takes it in %s, at most half again the rate now)", in.ArrivalClimb, in.AheadRate, p.ClimbHorizon)
	}
	band := fmt.Sprintf("the band %.0f–%.0f%%", (p.Target-p.Boundary)*100, (p.Target+p.Boundary)*100)
	rec := Recommendation{Kind: kind, From: from, To: to, PerVertex: needs, Inputs: in}
	switch kind {
	case Skewed:
		in.Bottleneck, in.BusyMsPerSecond, in.MaxSubtaskBusyMsPerSecond = hot.Name, round(hot.Busy), round(vs[indexOf(needs, hot.ID)].BusyMax)
		rec.Inputs = in
		rec.Message = fmt.Sprintf("Vertex %s is skewed: at the %s its hottest subtask would be busy %.0f%% while the average is %.0f%%, within %s; more parallelism would not relieve a hot key",
			hot.Name, rates, hot.HotUtil*100, hot.Util*100, band)
		rec.Summary = fmt.Sprintf("Vertex %s is skewed: its hottest subtask is above %s while the average is within it; more parallelism would not relieve a hot key", hot.Name, band)
	case Keep:
		if capped := cappedNames(needs); capped != "" {
			rec.Message = fmt.Sprintf("Outside %s (vertex %s at %.0f%% for the %s), but %s already at its bound", band, bottleneck.Name, bottleneck.Util*100, rates, capped)
			rec.Summary = fmt.Sprintf("Outside %s, but %s already at its bound", band, capped)
			return rec
		}
		rec.Message = fmt.Sprintf("Within %s: at the %s the busiest vertex, %s, would be busy %.0f%% at parallelism %d", band, rates, bottleneck.Name, bottleneck.Util*100, bottleneck.From)
		rec.Summary = fmt.Sprintf("Within %s at parallelism %d (busiest vertex %s)", band, from, bottleneck.Name)
	default:
		rec.Summary = fmt.Sprintf("Outside %s: %s", band, changedNames(needs))
		rec.Message = fmt.Sprintf("At the %s, outside %s: %s; the busiest vertex, %s, would be busy %.0f%% at parallelism %d",
			rates, band, changes(needs), bottleneck.Name, bottleneck.Util*100, bottleneck.From)
	}
	return rec
}

// backlogHigh says the sources' backlog is above what a scale-down may
// leave: more than a tenth of the catch-up duration's arrivals.
func backlogHigh(lag, arrival float64, p Policy) bool {
	return lag > math.Max(arrival, 1)*p.CatchUp.Seconds()/10
}

// cappedNames names the vertices whose need is beyond their bound.
func cappedNames(needs []VertexNeed) string {
	var out []string
	for _, n := range needs {
		if n.Capped {
			out = append(out, fmt.Sprintf("vertex %s is at %d (%s)", n.Name, n.To, n.Bound))
		}
	}
	return strings.Join(out, ", ")
}

func indexOf(needs []VertexNeed, id string) int {
	for i, n := range needs {
		if n.ID == id {
			return i
		}
	}
	return 0
}

// arrivalNow is what arrives at a source now: what it read at the last
// sample (Flink's meter, a minute's average), plus its backlog's growth
// since the sample before (pendingRecords is a gauge: it has no minute to
// climb through).
func (v vertexWindow) arrivalNow() float64 {
	if len(v.points) == 0 {
		return 0
	}
	var known []point
	for _, q := range v.points {
		if q.lagKnown {
			known = append(known, q)
		}
	}
	a := v.points[len(v.points)-1].read
	if n := len(known); n >= 2 {
		if d := known[n-1].at.Sub(known[n-2].at).Seconds(); d > 0 {
			a += (known[n-1].lag - known[n-2].lag) / d
		}
	}
	return a
}

// maxClimb bounds what a climb adds to the rate a scale-up is sized
// for, as a share of the arrival rate now.
const maxClimb = 0.5

// climb is how fast a source's arrival rate climbs, in records/s per
// second, when it rose through the whole window: the window's samples in
// quarters, each quarter's mean arrival above the one before, and the
// climb is the slowest of the three steps (a step change rises in one
// quarter only and is no climb; a climb that slows is taken at its
// slowest). Zero otherwise.
func (v vertexWindow) climb() float64 {
	const parts = 4
	n := len(v.points)
	if n < 2*parts {
		return 0
	}
	var mean [parts]float64
	var mid [parts]time.Time
	for k := range parts {
		lo, hi := k*n/parts, (k+1)*n/parts
		for i := lo; i < hi; i++ {
			mean[k] += v.arrivalAt(i)
		}
		mean[k] /= float64(hi - lo)
		mid[k] = v.points[lo].at.Add(v.points[hi-1].at.Sub(v.points[lo].at) / 2)
	}
	slowest := math.Inf(1)
	for k := 1; k < parts; k++ {
		d := mid[k].Sub(mid[k-1]).Seconds()
		if d <= 0 || mean[k] <= mean[k-1] {
			return 0
		}
		slowest = math.Min(slowest, (mean[k]-mean[k-1])/d)
	}
	return slowest
}

// arrivalAt is what arrived at the source at its i-th point: what it
// read, plus its backlog's growth since the point before.
func (v vertexWindow) arrivalAt(i int) float64 {
	q := v.points[i]
	a := q.read
	if i > 0 && q.lagKnown && v.points[i-1].lagKnown {
		if d := q.at.Sub(v.points[i-1].at).Seconds(); d > 0 {
			a += (q.lag - v.points[i-1].lag) / d
		}
	}
	return a
}

// growth is the backlog's growth over the window, in records per second.
func (v vertexWindow) growth() float64 {
	if d := v.lastAt.Sub(v.firstAt); d > 0 {
		return (v.lastLag - v.firstLag) / d.Seconds()
	}
	return 0
}

// uniform sizes every vertex for the highest need: one parallelism for
// the whole job. A vertex that needs less says why it gets more.
func uniform(needs []VertexNeed) {
	to := int32(0)
	for _, n := range needs {
		to = max(to, n.To)
	}
	for i := range needs {
		if needs[i].To != to {
			needs[i].To, needs[i].Bound = to, BoundUniform
		}
	}
}

// coverage is how much of the window the sources' samples cover: from is
// when the latest-starting source was first sampled (since the job's
// start or rescale, at its parallelism now), span the shortest stretch
// of a source's samples inside the window, samples the most of them.
type coverage struct {
	from    time.Time
	span    time.Duration
	samples int
}

// lacking says why the window is not full yet, or "" when it is. Full is
// a history that reaches back to the window's start (within one
// interval: samples come every interval, late under load) and samples in
// the window that cover at least half of it (a gap, Flink unreachable,
// leaves too little to average). It is judged from the first sample, not
// the window's edges: a window that slides between two samples must not
// fall back to collecting (it did under load, with a 2 s interval the
// reconciles kept missing by a fraction of a second). The summary names
// a time that does not move with the clock: a status that changes only
// when the decision does costs no writes in between.
func (c coverage) lacking(p Policy, now time.Time) (msg, summary string) {
	covered := now.Sub(c.from)
	switch {
	case covered < p.Window-p.Interval || c.samples < 3:
		full := c.from.Add(p.Window - p.Interval).UTC().Format(time.RFC3339)
		return fmt.Sprintf("Collecting metrics: %s of the %s window since %s (%d samples)", min(covered, p.Window).Round(time.Second), p.Window, c.from.UTC().Format(time.RFC3339), c.samples),
			fmt.Sprintf("Collecting metrics: the %s window from %s is full at %s", p.Window, c.from.UTC().Format(time.RFC3339), full)
	case c.span < p.Window/2:
		m := fmt.Sprintf("Collecting metrics: the samples of the last %s cover %s of it, less than half (the job's metrics were unavailable in between)", p.Window, c.span.Round(time.Second))
		return m, fmt.Sprintf("Collecting metrics: the samples of the last %s cover less than half of it (the job's metrics were unavailable in between)", p.Window)
	}
	return "", ""
}

// collectingSince is when each vertex was first sampled at or after since
// at its latest parallelism: from then on its samples can fill a window.
func collectingSince(h []Sample, latest map[string]int32, since time.Time) map[string]time.Time {
	first := map[string]time.Time{}
	for _, s := range h {
		if s.Time.Before(since) {
			continue
		}
		for _, v := range s.Vertices {
			if _, ok := first[v.ID]; !ok && v.Parallelism == latest[v.ID] {
				first[v.ID] = s.Time
			}
		}
	}
	return first
}

// windowOf averages each vertex's samples taken at or after start; the
// parallelism is the latest sample's, and samples of another parallelism
// (before a rescale) are left out.
func windowOf(h []Sample, latest map[string]int32, start time.Time) []vertexWindow {
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
				w = &vertexWindow{VertexSample: VertexSample{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism, Source: v.Source, Partitions: v.Partitions},
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
			if v.Source {
				w.points = append(w.points, point{at: s.Time, read: v.Read, lag: v.Lag, lagKnown: v.LagKnown})
			}
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

// latestParallelism is each vertex's parallelism in its latest sample.
func latestParallelism(h []Sample) map[string]int32 {
	latest := map[string]int32{}
	for _, s := range h {
		for _, v := range s.Vertices {
			latest[v.ID] = v.Parallelism
		}
	}
	return latest
}

func round(f float64) int64 { return int64(math.Round(f)) }

package autopilot

import (
	"fmt"
	"math"
	"strings"
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// VertexNeed is one vertex's sizing: what it runs at, what it should run
// at, and the numbers in between (DS2's model, as the Apache autoscaler
// uses it: a vertex's true processing rate is what it takes in per unit
// of busy time, and the rate it must sustain is its upstream's target
// output through the edge).
type VertexNeed struct {
	ID, Name string
	Source   bool
	From, To int32
	// In is the records per second it takes in now (a source: reads).
	In float64
	// Busy is its subtasks' average busy time, in ms per second.
	Busy float64
	// ProcessingRate is the records per second one subtask processes at
	// full busy time; +Inf when it is never busy.
	ProcessingRate float64
	// TargetRate is the records per second it must take in at the job's
	// target rate; AheadRate at the target rate a climb reaches within
	// the climb horizon (TargetRate when the rate does not climb).
	TargetRate, AheadRate float64
	// Util and HotUtil are the share of time its average and hottest
	// subtask would be busy at the target rate at From.
	Util, HotUtil float64
	// Bound names what set To other than the need ("" for the need).
	Bound string
	// Need is the parallelism that keeps it at the target utilization,
	// bounded and rounded (NeedBound names how); To is Need only when it
	// leaves the band or rescales alongside another vertex.
	Need      int32
	NeedBound string
	// InBand: it would stay within the band at From.
	InBand bool
	// Capped: the need was above what the policy or the vertex allows.
	Capped bool
	// Skewed: the average is within the band, the hottest subtask above.
	Skewed bool
}

// Bounds of a vertex's To, as VertexNeed.Bound names them.
const (
	BoundBand       = "within the band"
	BoundSkewed     = "skewed: more subtasks would not relieve a hot key"
	BoundMin        = "spec.autoscaler.minParallelism"
	BoundMax        = "spec.autoscaler.maxParallelism"
	BoundSlots      = "spec.autoscaler.maxTaskManagers × slots"
	BoundKeyGroups  = "its max parallelism"
	BoundKeyDivisor = "a divisor of its max parallelism"
	BoundPartitions = "a divisor of its Kafka partitions"
	BoundBlocked    = "blocked"
	BoundBacklog    = "no scale-down while the backlog drains"
	BoundAlongside  = "within the band, resized with the rescale"
	BoundHot        = "its hottest subtask at the target utilization"
	BoundUniform    = "one parallelism for the whole job: Flink before 1.18.1 runs no vertex at its own from a submission"
)

// sourceTarget is the rate a source must read at: what arrives, plus
// the backlog and what arrives during a rescale's downtime, both drained
// within the catch-up duration (the Apache autoscaler adds the restart
// time's backlog the same way: job.autoscaler.restart.time).
func sourceTarget(arrival, lag float64, p Policy) float64 {
	return arrival + (lag+arrival*p.RestartTime.Seconds())/p.CatchUp.Seconds()
}

// upstreamOf is the vertices feeding vertex i, from the order Flink lists
// them in (JobDetailsInfo: topological): a non-source vertex takes the one
// before it, or all the sources when that one is a source. The job plan's
// edges are not read; a graph that is not a chain after its sources is
// sized as if it were one.
func upstreamOf(vs []vertexWindow, i int) []int {
	if vs[i].Source || i == 0 {
		return nil
	}
	if !vs[i-1].Source {
		return []int{i - 1}
	}
	var out []int
	for j := range i {
		if vs[j].Source {
			out = append(out, j)
		}
	}
	return out
}

// inRate is what a vertex takes in: a source what it reads.
func inRate(v vertexWindow) float64 {
	if v.Source {
		return v.Read
	}
	return v.RecordsIn
}

// targetRates propagates the sources' targets downstream: each vertex
// must take in its upstream's target output, which is the upstream's
// target input through its measured selectivity (records out over
// records in), shared by the edge as the records measured on it are.
func targetRates(vs []vertexWindow, sources map[string]float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		up := upstreamOf(vs, i)
		if up == nil {
			out[i] = sources[v.ID]
			continue
		}
		var targetOut, measuredOut float64
		for _, j := range up {
			u := vs[j]
			if in := inRate(u); in > 0 {
				targetOut += out[j] * u.RecordsOut / in
			}
			measuredOut += u.RecordsOut
		}
		share := 1.0
		if measuredOut > 0 {
			share = v.RecordsIn / measuredOut
		}
		out[i] = targetOut * share
	}
	return out
}

// sizeVertex is one vertex's need at its target rate: the subtasks that
// keep it at the target utilization, when it would leave the band
// otherwise; bounded by the policy and its max parallelism, and rounded
// up to a divisor of its Kafka partitions (a source) or of its max
// parallelism (so key groups, or partitions, spread evenly), where one
// lies within the bounds.
//
// Whether it leaves the band is judged at the target rate now; a need
// above what it runs is sized at the rate a climb reaches (ahead), so
// a scale-up on a climb lasts. A scale-down keeps its hottest subtask
// at the target utilization (see hotFloor).
func sizeVertex(v vertexWindow, target, ahead float64, p Policy) VertexNeed {
	n := VertexNeed{ID: v.ID, Name: v.Name, Source: v.Source, From: v.Parallelism, To: v.Parallelism,
		In: inRate(v), Busy: v.BusyAvg, TargetRate: target, AheadRate: max(ahead, target), ProcessingRate: math.Inf(1)}
	busy := v.BusyAvg / 1000
	if n.In > 0 && busy > 0 {
		n.ProcessingRate = n.In / (float64(v.Parallelism) * busy)
		n.Util = target / (n.ProcessingRate * float64(v.Parallelism))
		n.HotUtil = n.Util * v.BusyMax / v.BusyAvg
	}
	lower, upper := p.Target-p.Boundary, p.Target+p.Boundary
	rate := n.AheadRate
	if n.Util < lower {
		// A climb ahead does not turn a scale-down into a scale-up.
		rate = target
	}
	need, needNow, hot := int32(1), int32(1), int32(0)
	if !math.IsInf(n.ProcessingRate, 1) {
		subtasks := func(r float64) int32 {
			return int32(min(math.Ceil(r/(n.ProcessingRate*p.Target)-1e-9), math.MaxInt32/2))
		}
		need, needNow = subtasks(rate), subtasks(target)
		if need < n.From {
			hot = hotFloor(n, p.Target)
		}
	}
	n.Need, n.NeedBound, _ = bound(need, p, v.MaxParallelism)
	// Capped (CapReached) is the target now out of reach: a bound that
	// only trims the size ahead of a climb still reaches the target.
	_, _, n.Capped = bound(needNow, p, v.MaxParallelism)
	if hot > n.Need {
		n.Need, n.NeedBound, n.Capped = hot, BoundHot, false
	}
	n.Need, n.NeedBound = roundUp(n.Need, n.NeedBound, p, v)
	if hot > need {
		n.NeedBound = BoundHot
	}
	if need < n.From && n.Need > n.From {
		// Rounding never turns a scale-down into a scale-up.
		n.Need = n.From
	}
	switch {
	case n.Util >= lower && n.Util <= upper && n.HotUtil > upper:
		n.Skewed, n.Bound, n.Capped = true, BoundSkewed, false
	case n.Util >= lower && n.Util <= upper:
		n.InBand, n.Bound, n.Capped = true, BoundBand, false
	default:
		n.To, n.Bound = n.Need, n.NeedBound
	}
	return n
}

// hotFloor is the fewest subtasks, at most what the vertex runs, at
// which its hottest subtask stays within target at the target rate. A
// hot key's records all go to one subtask whatever the parallelism,
// while the rest spread evenly: the hottest subtask's load is the key's
// share k plus an even share of the rest, k + (L−k)/p, so the key's
// share is what the hottest subtask has beyond an even share (measured
// at the parallelism it runs), and fewer subtasks only make it hotter.
// Zero when the subtasks are even.
func hotFloor(n VertexNeed, target float64) int32 {
	p := float64(n.From)
	if n.From < 2 || n.HotUtil <= n.Util {
		return 0
	}
	total := n.Util * p // in subtasks busy at full time
	key := (n.HotUtil - n.Util) * p / (p - 1)
	if key >= target {
		return n.From
	}
	return min(int32(math.Ceil((total-key)/(target-key)-1e-9)), n.From)
}

// alongside resizes the vertices within the band when another one
// rescales: the restart costs the same, and vertices left near the edge
// of the band would each ask for a restart of their own soon after. With
// a vertex above the band each goes to its need; with vertices only below
// it, one within it may shrink but not grow (that would make a scale-down
// a scale-up, past the scale-down delay).
func alongside(needs []VertexNeed) {
	up, down := false, false
	for _, n := range needs {
		up = up || (!n.InBand && !n.Skewed && n.To > n.From)
		down = down || (!n.InBand && !n.Skewed && n.To < n.From)
	}
	for i := range needs {
		n := &needs[i]
		if !n.InBand || n.Need == n.From || !(up || down && n.Need < n.From) {
			continue
		}
		n.To, n.Bound = n.Need, BoundAlongside
		if n.NeedBound != "" {
			n.Bound += "; " + n.NeedBound
		}
	}
}

// bound clamps a need by the policy and the vertex's max parallelism,
// and names the bound that applied.
func bound(need int32, p Policy, keyGroups int32) (int32, string, bool) {
	to, why := need, ""
	if lo := max(p.MinParallelism, 1); to < lo {
		to, why = lo, BoundMin
	}
	for _, b := range []struct {
		limit int32
		why   string
	}{{p.MaxParallelism, BoundMax}, {p.MaxTMs * p.Slots, BoundSlots}, {keyGroups, BoundKeyGroups}} {
		if b.limit > 0 && to > b.limit {
			to, why = b.limit, b.why
		}
	}
	return to, why, to < need
}

// upperOf is the highest parallelism a vertex may run at.
func upperOf(p Policy, keyGroups int32) int32 {
	to, _, _ := bound(math.MaxInt32, p, keyGroups)
	return to
}

// roundUp rounds to up to the smallest divisor of the source's
// partitions, or of a vertex's max parallelism, within its upper bound;
// unchanged when none is.
func roundUp(to int32, why string, p Policy, v vertexWindow) (int32, string) {
	n, named := v.MaxParallelism, BoundKeyDivisor
	if v.Source {
		n, named = v.Partitions, BoundPartitions
	}
	if n <= 0 || n%to == 0 {
		return to, why
	}
	for d := to + 1; d <= upperOf(p, v.MaxParallelism); d++ {
		if n%d == 0 {
			return d, named
		}
	}
	return to, why
}

// jobOf is the job's recommendation from its vertices' needs: up when any
// vertex grows (the others change in the same restart), down when none
// grows and one shrinks, else Skewed or Stable.
func jobOf(needs []VertexNeed) (Kind, int32, int32) {
	kind, from, to := Keep, int32(0), int32(0)
	grows, shrinks, skewed := false, false, false
	for _, n := range needs {
		from, to = max(from, n.From), max(to, n.To)
		grows = grows || n.To > n.From
		shrinks = shrinks || n.To < n.From
		skewed = skewed || n.Skewed
	}
	switch {
	case grows:
		kind = Up
	case shrinks:
		kind = Down
	case skewed:
		kind = Skewed
	}
	return kind, from, to
}

// VertexDecisions are the needs as a decision records them.
func VertexDecisions(needs []VertexNeed) []v1.VertexDecision {
	out := make([]v1.VertexDecision, 0, len(needs))
	for _, n := range needs {
		rate := int64(0)
		if !math.IsInf(n.ProcessingRate, 1) {
			rate = round(n.ProcessingRate)
		}
		out = append(out, v1.VertexDecision{ID: n.ID, Name: n.Name, From: n.From, To: n.To, BusyMsPerSecond: round(n.Busy),
			ProcessingRate: rate, TargetRate: round(n.TargetRate), Bound: n.Bound})
	}
	return out
}

// Parallelisms are the needs' targets, as status.autoscaler.vertices.
func Parallelisms(needs []VertexNeed) []v1.VertexParallelism {
	out := make([]v1.VertexParallelism, 0, len(needs))
	for _, n := range needs {
		out = append(out, v1.VertexParallelism{ID: n.ID, Name: n.Name, Parallelism: n.To})
	}
	return out
}

// changes lists the vertices whose parallelism changes, for messages.
func changes(needs []VertexNeed) string {
	var parts []string
	for _, n := range needs {
		if n.To != n.From {
			s := fmt.Sprintf("%s %d→%d", n.Name, n.From, n.To)
			if n.Bound != "" {
				s += " (" + n.Bound + ")"
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "no vertex changes"
	}
	return strings.Join(parts, ", ")
}

// changedNames names the vertices whose parallelism changes, without
// the numbers that move with every sample.
func changedNames(needs []VertexNeed) string {
	var parts []string
	for _, n := range needs {
		if n.To > n.From {
			parts = append(parts, n.Name+" up")
		} else if n.To < n.From {
			parts = append(parts, n.Name+" down")
		}
	}
	return strings.Join(parts, ", ")
}

// DefaultRestartTime is the downtime a rescale is assumed to cost until
// one has been measured: a fifteenth of the catch-up duration, a minute
// with the default 15 minutes (the Apache autoscaler assumes 5 minutes,
// job.autoscaler.restart.time, against its 30 of catch-up; a savepoint
// and resubmission takes well under a minute here). Proportional, so that
// a short catch-up duration is not swamped by a restart it never sees.
func (p Policy) DefaultRestartTime() time.Duration { return p.CatchUp / 15 }

// RestartEstimate is the downtime of the last rescales that settled (at
// most three, their mean), else def.
func RestartEstimate(ds []v1.AutoscalerDecision, def time.Duration) time.Duration {
	var sum int64
	n := 0
	for _, d := range ds {
		if d.Result == ResultSucceeded && d.DowntimeSeconds > 0 {
			sum += d.DowntimeSeconds
			if n++; n == 3 {
				break
			}
		}
	}
	if n == 0 {
		return def
	}
	return time.Duration(sum/int64(n)) * time.Second
}

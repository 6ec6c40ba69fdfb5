package main

import (
	"math"
	"time"
)

// apache is the Apache Flink Kubernetes operator's autoscaler, release
// 1.15.0 (flink-autoscaler module), written from its sources and
// documentation (no code copied) with its defaults:
//
//   - job.autoscaler.target.utilization 0.7, and
//     job.autoscaler.target.utilization.boundary 0.3 (AutoScalerOptions:
//     its default in 1.7–1.15, since FLINK-33526 lowered it from 0.4): no
//     rescale while every vertex is within utilization 0.4–1.0;
//   - job.autoscaler.backlog-processing.lag-threshold 5 min: while a
//     source's lag is more than 5 minutes of its input, the band is 0–1.0,
//     so no vertex is out of band below (on by default since 1.5.0);
//   - job.autoscaler.metrics.window 15 min, job.autoscaler.stabilization.
//     interval 5 min: after a rescale, 5 minutes of no metrics, then a full
//     window before the next evaluation; the operator evaluates once a
//     reconcile, every minute;
//   - job.autoscaler.catch-up.duration 30 min and job.autoscaler.restart.
//     time 5 min: a vertex is sized for its catch-up rate (a source's lag
//     over the catch-up duration), plus what arrives during the restart
//     over the catch-up duration, plus its input rate over the target
//     utilization (AutoScalerUtils#getTargetProcessingCapacity);
//   - job.autoscaler.scale-down.interval 1 h: every scale-down
//     recommendation is recorded, in the band or not; a vertex's
//     scale-down waits an hour from its first, then goes to the highest
//     recommended in the last hour, and a rescale clears every delayed
//     one; job.autoscaler.scale-down.max-factor 0.6: no vertex loses more
//     than 60% of its subtasks at once;
//   - job.autoscaler.metrics.busy-time.aggregator MAX: a vertex's true
//     processing rate is its records in over its busiest subtask's busy
//     time;
//   - DS2: each vertex's target is its upstream's target output through
//     the edge's measured output ratio, its new parallelism the one at
//     which it would be 70% busy, rounded up to a divisor of the Kafka
//     partitions (a source) or of the max parallelism (the others).
//
// Not modelled: the effectiveness detection (off by default), the memory
// tuning, the scale-up max factor (unbounded by default), the observed
// scalability (off by default) and the restart time observed from the
// history (off by default: the configured 5 min is used).
type apache struct {
	// down is each vertex's delayed scale-down (DelayedScaleDown).
	down map[int]*delayedDown
}

// delayedDown is one vertex's delayed scale-down
// (DelayedScaleDown.VertexDelayedScaleDownInfo): its first trigger, and
// the recommendations of the last interval, kept decreasing in
// parallelism so that the first is the window's highest.
type delayedDown struct {
	first float64
	recs  []recommendation
}

type recommendation struct {
	at      float64
	par     int
	outside bool
}

// record adds a recommendation, dropping the earlier ones it is at least
// (VertexDelayedScaleDownInfo#recordRecommendedParallelism: they can no
// longer be the window's highest).
func (d *delayedDown) record(at float64, par int, outside bool) {
	for len(d.recs) > 0 && d.recs[len(d.recs)-1].par <= par {
		d.recs = d.recs[:len(d.recs)-1]
	}
	d.recs = append(d.recs, recommendation{at: at, par: par, outside: outside})
}

// highest is the highest recommendation since from, the window's start
// (VertexDelayedScaleDownInfo#getMaxRecommendedParallelism, L108-123):
// older ones are dropped.
func (d *delayedDown) highest(from float64) recommendation {
	for len(d.recs) > 1 && d.recs[0].at < from {
		d.recs = d.recs[1:]
	}
	return d.recs[0]
}

const (
	apacheTarget        = 0.7
	apacheBoundary      = 0.3
	apacheWindow        = 15 * 60
	apacheStabilization = 5 * 60
	apacheDownInterval  = 3600
	apacheCatchUp       = 30 * 60
	apacheDownFactor    = 0.6
	apacheRestart       = 5 * 60
	apacheBacklogLag    = 5 * 60
)

func newApache() *apache { return &apache{down: map[int]*delayedDown{}} }

func (a *apache) name() string        { return "Apache autoscaler (1.15 defaults)" }
func (a *apache) every() int          { return 60 }
func (a *apache) restarted(*jobState) {}

// windowAverage is each vertex's records in and out and busiest subtask's
// busy time over the samples since from, with the source's lag growth.
type windowAverage struct {
	in, out, busyMax []float64
	read, growth     float64
	lag              float64
}

func averages(j *jobState, from time.Time) (windowAverage, bool) {
	n := len(j.models)
	w := windowAverage{in: make([]float64, n), out: make([]float64, n), busyMax: make([]float64, n)}
	count := 0
	var first, last *float64
	var firstAt, lastAt time.Time
	for _, s := range j.history {
		if s.Time.Before(from) || len(s.Vertices) != n {
			continue
		}
		count++
		for i, v := range s.Vertices {
			in := v.RecordsIn
			if v.Source {
				in = v.Read
			}
			w.in[i] += in
			w.out[i] += v.RecordsOut
			w.busyMax[i] += v.BusyMax
		}
		lag := s.Vertices[0].Lag
		if first == nil {
			first, firstAt = &lag, s.Time
		}
		last, lastAt = &lag, s.Time
	}
	if count < 3 {
		return w, false
	}
	for i := range n {
		w.in[i] /= float64(count)
		w.out[i] /= float64(count)
		w.busyMax[i] /= float64(count)
	}
	w.read, w.lag = w.in[0], *last
	if d := lastAt.Sub(firstAt).Seconds(); d > 0 {
		w.growth = (*last - *first) / d
	}
	return w, true
}

// targetCapacity is the processing rate a vertex needs at a utilization
// (AutoScalerUtils#getTargetProcessingCapacity): the catch-up rate, plus,
// with the restart, what arrives during job.autoscaler.restart.time over
// the catch-up duration, plus the input rate over the utilization, the
// utilization clamped to [0, 1] (L62-63) and 0 needing an infinite
// capacity; rounded to a whole rate.
func targetCapacity(catchUp, input, util float64, restart bool) float64 {
	util = math.Min(math.Max(util, 0), 1)
	if util == 0 {
		return math.Inf(1)
	}
	c := catchUp + input/util
	if restart {
		c += input * apacheRestart / apacheCatchUp
	}
	return math.Round(c)
}

// processingBacklog says a source's lag is more than
// job.autoscaler.backlog-processing.lag-threshold of its input
// (ScalingMetricEvaluator#isProcessingBacklog: the last lag over the
// window's average input rate).
func processingBacklog(lag, input float64) bool {
	return lag/input > apacheBacklogLag
}

// band is the utilizations outside of which a vertex is out of band
// (ScalingMetricEvaluator#computeProcessingRateThresholds, L295-299):
// target ± boundary, or up to 1.0 and down to 0 while a backlog is
// processed, so that none is out of band below.
func band(backlog bool) (upper, lower float64) {
	if backlog {
		return 1, 0
	}
	return apacheTarget + apacheBoundary, apacheTarget - apacheBoundary
}

// vertexPlan is what the evaluation recommends for a vertex: known is
// false without a true processing rate (JobVertexScaler#
// computeScaleTargetParallelism's no change, which keeps a delayed
// scale-down).
type vertexPlan struct {
	need    int
	outside bool
	known   bool
}

func (a *apache) decide(j *jobState) []int {
	ready := j.runningAt + apacheStabilization
	if j.now < ready+apacheWindow {
		return nil
	}
	w, ok := averages(j, j.at(math.Max(ready, j.now-apacheWindow)))
	if !ok {
		return nil
	}
	// Each vertex's target data rate (the source's: its input rate plus
	// its lag's growth) and catch-up rate (the source's: its lag over the
	// catch-up duration), through each edge's output ratio.
	input, catchUp := make([]float64, len(j.models)), make([]float64, len(j.models))
	input[0], catchUp[0] = math.Max(w.read+w.growth, 0), w.lag/apacheCatchUp
	for i := 1; i < len(input); i++ {
		if w.in[i-1] > 0 {
			ratio := w.out[i-1] / w.in[i-1]
			input[i], catchUp[i] = input[i-1]*ratio, catchUp[i-1]*ratio
		}
	}
	upper, lower := band(processingBacklog(w.lag, w.read))
	plans := make([]vertexPlan, len(j.par))
	for i, p := range j.par {
		plans[i].need = p
		busy := w.busyMax[i] / 1000
		if w.in[i] <= 0 || busy <= 0 {
			continue
		}
		// The true processing rate of all its subtasks; outside the band
		// when below the capacity needed at the upper utilization (no
		// restart) or above the one at the lower (with it)
		// (JobVertexScaler#outsideUtilizationBound).
		tpr := w.in[i] / busy
		plans[i].known = true
		plans[i].outside = tpr < targetCapacity(catchUp[i], input[i], upper, false) || tpr > targetCapacity(catchUp[i], input[i], lower, true)
		factor := math.Max(targetCapacity(catchUp[i], input[i], apacheTarget, true)/tpr, 1-apacheDownFactor)
		n := int(math.Ceil(factor * float64(p)))
		n = min(max(n, 1), maxParallelism)
		keys := maxKeys
		if i == 0 {
			keys = partitions
		}
		// Up to a divisor, a scale-down no further than what it runs
		// (JobVertexScaler#scale).
		upper := maxParallelism
		if n < p {
			upper = p
		}
		for q := n; q <= upper; q++ {
			if keys%q == 0 {
				n = q
				break
			}
		}
		plans[i].need = n
	}
	return a.apply(j.now, j.par, plans)
}

// apply turns the recommendations into a rescale, or nil. Every
// scale-down recommendation is recorded first, in the band or not
// (JobVertexScaler#computeScaleTargetParallelism → applyScaleDownInterval
// → DelayedScaleDown#triggerScaleDown, L422-461; JobAutoScalerImpl stores
// the delayed scale-downs even when nothing rescales). Only the vertices
// that change count for the band, a due scale-down with the flag saved
// with the recommendation it goes to (ScalingExecutor#
// computeScalingSummary, L220-225 and L235-239).
func (a *apache) apply(now float64, par []int, plans []vertexPlan) []int {
	next := append([]int(nil), par...)
	outside := false
	for i, pl := range plans {
		switch {
		case !pl.known:
		case pl.need == par[i]:
			delete(a.down, i)
		case pl.need > par[i]:
			delete(a.down, i)
			next[i], outside = pl.need, outside || pl.outside
		default:
			d, ok := a.down[i]
			if !ok {
				d = &delayedDown{first: now}
				a.down[i] = d
			}
			d.record(now, pl.need, pl.outside)
			// Never within the interval from the first trigger; then the
			// highest of the last interval.
			if now-apacheDownInterval < d.first {
				continue
			}
			r := d.highest(now - apacheDownInterval)
			next[i], outside = r.par, outside || r.outside
		}
	}
	if !outside || equal(next, par) {
		return nil
	}
	// A rescale clears every delayed scale-down (ScalingExecutor#
	// scaleResource: DelayedScaleDown#clearAll).
	a.down = map[int]*delayedDown{}
	return next
}

package main

import (
	"math"
	"time"
)

// apache is the Apache Flink Kubernetes operator's autoscaler, written
// from its documentation (no code copied) with the defaults it documents:
//
//   - job.autoscaler.target.utilization 0.7, and
//     job.autoscaler.target.utilization.boundary 0.4 (the boundary's
//     default since flink-kubernetes-operator PR #586; the list
//     names none): no rescale while every vertex is within 0.3–1.1;
//   - job.autoscaler.metrics.window 15 min, job.autoscaler.stabilization.
//     interval 5 min: after a rescale, 5 minutes of no metrics, then a full
//     window before the next evaluation; the operator evaluates once a
//     reconcile, every minute;
//   - job.autoscaler.catch-up.duration 30 min and job.autoscaler.restart.
//     time 5 min: a vertex is sized for its catch-up rate (a source's lag
//     over the catch-up duration), plus what arrives during the restart
//     over the catch-up duration, plus its input rate over the target
//     utilization (AutoScalerUtils#getTargetProcessingCapacity);
//   - job.autoscaler.scale-down.interval 1 h: a vertex's scale-down waits
//     an hour from its first recommendation, then goes to the highest
//     recommended meanwhile, and a rescale clears every delayed one;
//     job.autoscaler.scale-down.max-factor 0.6: no vertex loses more
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
// tuning, the scale-up max factor (unbounded by default), the restart
// time observed from the history (off by default: the configured 5 min
// is used) and the wider band of later releases while a backlog is
// processed.
type apache struct {
	// down is each vertex's pending scale-down: first seen, and the
	// highest recommended since.
	down map[int]pendingDown
}

type pendingDown struct {
	since float64
	to    int
}

const (
	apacheTarget        = 0.7
	apacheBoundary      = 0.4
	apacheWindow        = 15 * 60
	apacheStabilization = 5 * 60
	apacheDownInterval  = 3600
	apacheCatchUp       = 30 * 60
	apacheDownFactor    = 0.6
	apacheRestart       = 5 * 60
)

func newApache() *apache { return &apache{down: map[int]pendingDown{}} }

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
	// The capacity a vertex needs at a utilization
	// (AutoScalerUtils#getTargetProcessingCapacity): the catch-up rate,
	// plus, with the restart, what arrives during job.autoscaler.
	// restart.time over the catch-up duration, plus the input rate over
	// the utilization.
	capacity := func(i int, util float64, restart bool) float64 {
		c := catchUp[i] + input[i]/util
		if restart {
			c += input[i] * apacheRestart / apacheCatchUp
		}
		return c
	}
	outside := false
	need := make([]int, len(j.par))
	for i, p := range j.par {
		need[i] = p
		busy := w.busyMax[i] / 1000
		if w.in[i] <= 0 || busy <= 0 {
			continue
		}
		// The true processing rate of all its subtasks; outside the band
		// when below the capacity needed at the upper utilization (no
		// restart) or above the one at the lower (with it)
		// (ScalingMetricEvaluator#computeProcessingRateThresholds).
		tpr := w.in[i] / busy
		outside = outside || tpr < capacity(i, apacheTarget+apacheBoundary, false) || tpr > capacity(i, apacheTarget-apacheBoundary, true)
		factor := math.Max(capacity(i, apacheTarget, true)/tpr, 1-apacheDownFactor)
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
		need[i] = n
	}
	if !outside {
		return nil
	}
	next := append([]int(nil), j.par...)
	change := false
	for i, n := range need {
		switch {
		case n > next[i]:
			next[i], change = n, true
			delete(a.down, i)
		case n < next[i]:
			pd, ok := a.down[i]
			if !ok {
				a.down[i] = pendingDown{since: j.now, to: n}
				continue
			}
			pd.to = max(pd.to, n)
			a.down[i] = pd
			if j.now-pd.since >= apacheDownInterval {
				next[i], change = pd.to, true
				delete(a.down, i)
			}
		default:
			delete(a.down, i)
		}
	}
	if !change {
		return nil
	}
	// A rescale clears every delayed scale-down (ScalingExecutor: "clear
	// all delayed scale down requests after scaling").
	a.down = map[int]pendingDown{}
	return next
}

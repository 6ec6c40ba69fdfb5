// Package autopilot decides, without side effects, how a Flink job is
// sized and healed from its own metrics: a metric history goes in, a
// recommendation with its reason and numbers comes out, and the gates
// that keep it from churning (band, stabilization, scale-down delay, cap
// per hour, blocks on rescales that did not help) are applied to it. The
// controller samples the metrics and performs what it returns.
package autopilot

import (
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	clusterpolicy "github.com/datapilot/datapilot/internal/policy"
)

// Policy is spec.autoscaler resolved, with the API's defaults for objects
// stored before the API server defaulted them.
type Policy struct {
	Mode           v1.AutoscalerMode
	Target         float64 // share of time busy each vertex is sized for
	Boundary       float64
	MinParallelism int32
	MaxParallelism int32
	MaxTMs         int32
	Slots          int32
	// FloorTMs is spec.taskManager.replicas: the cluster never runs fewer.
	FloorTMs       int32
	Interval       time.Duration
	Window         time.Duration
	Stabilization  time.Duration
	ScaleDownDelay time.Duration
	CatchUp        time.Duration
	MaxPerHour     int
	// RestartTime is the downtime a rescale is expected to cost (see
	// RestartEstimate); the backlog it builds is in the target rate.
	RestartTime time.Duration
	// ClimbHorizon is how far ahead a scale-up on a sustained climb is
	// sized; zero for the rate now.
	ClimbHorizon time.Duration
	// Uniform: the job is sized as a whole, every vertex at the highest
	// need, because its Flink cannot run vertices at their own
	// parallelism from a run request (before 1.18.1, see
	// flink.Version.ReadsRequestOverrides).
	Uniform bool
}

// Defaults of spec.autoscaler (see its field documentation).
const (
	DefaultTarget         = 70
	DefaultBoundary       = 20
	DefaultMaxParallelism = 32
	DefaultMaxTMs         = 16
	DefaultInterval       = 15 * time.Second
	DefaultWindow         = 10 * time.Minute
	DefaultStabilization  = 5 * time.Minute
	DefaultScaleDownDelay = time.Hour
	DefaultCatchUp        = 15 * time.Minute
	DefaultMaxPerHour     = 3
	DefaultClimbHorizon   = time.Hour
)

// PolicyFor resolves spec.autoscaler; ok is false when it is absent.
func PolicyFor(spec *v1.FlinkClusterSpec) (Policy, bool) {
	a := spec.Autoscaler
	if a == nil || spec.Job == nil {
		return Policy{}, false
	}
	p := Policy{
		Mode:           a.Mode,
		Target:         float64(orInt(a.TargetUtilizationPercent, DefaultTarget)) / 100,
		Boundary:       float64(orInt(a.UtilizationBoundaryPercent, DefaultBoundary)) / 100,
		MinParallelism: orInt(a.MinParallelism, 1),
		MaxParallelism: orInt(a.MaxParallelism, DefaultMaxParallelism),
		MaxTMs:         orInt(a.MaxTaskManagers, DefaultMaxTMs),
		Slots:          max(spec.TaskManager.Slots, 1),
		FloorTMs:       spec.TaskManager.Replicas,
		Interval:       clusterpolicy.Duration(a.Interval, DefaultInterval),
		Window:         clusterpolicy.Duration(a.MetricWindow, DefaultWindow),
		Stabilization:  clusterpolicy.Duration(a.Stabilization, DefaultStabilization),
		ScaleDownDelay: clusterpolicy.Duration(a.ScaleDownDelay, DefaultScaleDownDelay),
		CatchUp:        clusterpolicy.Duration(a.CatchUpDuration, DefaultCatchUp),
		MaxPerHour:     int(orInt(a.MaxRescalesPerHour, DefaultMaxPerHour)),
		ClimbHorizon:   horizon(a.ClimbHorizon),
	}
	if p.Mode == "" {
		p.Mode = v1.AutoscalerApply
	}
	if v, err := flink.ParseVersion(spec.Version); err == nil && !v.ReadsRequestOverrides() {
		p.Uniform = true
	}
	p.RestartTime = p.DefaultRestartTime()
	return p, true
}

// TaskManagers is what a job parallelism needs: with one slot-sharing
// group (Flink's default) a job takes as many slots as its highest vertex
// parallelism, and the cluster never runs below its floor.
func (p Policy) TaskManagers(parallelism int32) int32 {
	need := (parallelism + p.Slots - 1) / p.Slots
	return max(need, p.FloorTMs)
}

// meterSpan is how long after its tasks start Flink's rate metrics
// measure a full span: a MeterView averages 60 s
// (MeterView.DEFAULT_TIME_SPAN_IN_SECONDS), counting nothing before its
// task started, and is refreshed every 5 s (View.UPDATE_INTERVAL_SECONDS).
// Before that a rate reads low while busy time (a TimerGauge over the
// seconds run) does not, and a vertex's processing rate would read low.
const meterSpan = 65 * time.Second

// MetricsFrom is when the samples of a job that turned RUNNING at since
// start to count: after the stabilization, and never before Flink's rate
// meters span a full minute of the new tasks.
func (p Policy) MetricsFrom(since time.Time) time.Time {
	return since.Add(max(p.Stabilization, meterSpan))
}

// HistoryKeep is how long samples are kept: the window, and before it as
// long as MetricsFrom waits after a start, so the history reaches back
// past the window's start however late the samples come (a window is
// judged full from its first sample, see coverage).
func (p Policy) HistoryKeep() time.Duration {
	return p.Window + max(p.Stabilization, meterSpan)
}

// blockFor is how long a block on a rescale that failed lasts when the
// load does not move: six metric windows (an hour with the default
// window).
func (p Policy) blockFor() time.Duration { return 6 * p.Window }

// ineffectiveFor is how long a block on vertices whose scale-up did not
// help lasts when neither the load nor their processing rate moves: a
// day with the default window. Trying again sooner costs a restart and
// the same answer (the Apache autoscaler's block lasts as long as the
// scaling history that shows it, job.autoscaler.history.max.age: a day);
// what would change the answer lifts it at once.
func (p Policy) ineffectiveFor() time.Duration { return 144 * p.Window }

// horizon is spec.autoscaler.climbHorizon: its default when unset or
// invalid, and zero when set to zero.
func horizon(v string) time.Duration {
	if v == "" {
		return DefaultClimbHorizon
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return DefaultClimbHorizon
	}
	return d
}

func orInt(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

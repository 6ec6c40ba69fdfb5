package autopilot

import (
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// VertexSample is one job vertex's metrics at one moment, aggregated over
// its subtasks by Flink (AggregatingSubtasksMetricsHandler).
type VertexSample struct {
	ID          string
	Name        string
	Parallelism int32
	// MaxParallelism is the vertex's key-group count: no parallelism
	// beyond it is possible.
	MaxParallelism int32
	// BusyAvg and BusyMax are busyTimeMsPerSecond, averaged over the
	// subtasks and of the hottest one.
	BusyAvg, BusyMax float64
	// BackPressured is backPressuredTimeMsPerSecond, the subtasks' average.
	BackPressured float64
	// RecordsIn and RecordsOut are numRecordsIn/OutPerSecond summed over
	// the subtasks.
	RecordsIn, RecordsOut float64
	// Source: the vertex reads from outside (it has a pendingRecords
	// metric); Lag is that metric summed over the subtasks.
	Source bool
	Lag    float64
}

// Sample is one poll of one job.
type Sample struct {
	Time  time.Time
	JobID string
	// Vertices polled this time; a large job's vertices are polled in
	// turns (the sources every time), so a sample may hold some only.
	Vertices []VertexSample
}

// Append adds s to the history (oldest first) and keeps what a decision
// can use: samples of the same job, within keep of s.
func Append(h []Sample, s Sample, keep time.Duration) []Sample {
	out := make([]Sample, 0, len(h)+1)
	for _, old := range h {
		if old.JobID == s.JobID && s.Time.Sub(old.Time) <= keep {
			out = append(out, old)
		}
	}
	return append(out, s)
}

// VertexFromMetrics reads one vertex's sample from Flink's aggregated
// subtask metrics (max, avg and sum of busyTimeMsPerSecond,
// backPressuredTimeMsPerSecond, numRecordsIn/OutPerSecond, and the
// source's pendingRecords, named pending); false when Flink had none.
func VertexFromMetrics(v flink.JobDetailsVertex, ms []flink.AggregatedMetric, pending string) (VertexSample, bool) {
	vs := VertexSample{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism, Source: pending != ""}
	if len(ms) == 0 {
		// The JobManager's MetricFetcher has nothing yet (its first
		// answer after a start, or a metric not reported yet): no
		// reading, rather than a reading of zeros.
		return vs, false
	}
	for _, m := range ms {
		switch {
		case m.ID == flink.MetricBusyTime:
			vs.BusyAvg, vs.BusyMax = val(m.Avg), val(m.Max)
		case m.ID == flink.MetricBackPressuredTime:
			vs.BackPressured = val(m.Avg)
		case m.ID == flink.MetricRecordsIn:
			vs.RecordsIn = val(m.Sum)
		case m.ID == flink.MetricRecordsOut:
			vs.RecordsOut = val(m.Sum)
		case pending != "" && m.ID == pending:
			vs.Lag = val(m.Sum)
		}
	}
	return vs, true
}

// MetricNames are what a sample asks Flink for, the source's
// pendingRecords when pending names it.
func MetricNames(pending string) []string {
	names := []string{flink.MetricBusyTime, flink.MetricBackPressuredTime, flink.MetricRecordsIn, flink.MetricRecordsOut}
	if pending != "" {
		names = append(names, pending)
	}
	return names
}

// Aggregations are what a sample asks Flink to compute over the subtasks.
var Aggregations = []string{flink.AggMax, flink.AggAvg, flink.AggSum}

func val(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

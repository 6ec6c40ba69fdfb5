package autopilot

import "time"

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

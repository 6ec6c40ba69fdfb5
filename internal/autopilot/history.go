package autopilot

import (
	"strings"
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
	// Source: the vertex reads from outside. Read is what it reads per
	// second (see readRate). Lag is its pendingRecords summed over the
	// subtasks when LagKnown: a legacy SourceFunction has none, and a
	// KafkaSource registers it only once its reader has fetched records
	// (KafkaSourceReaderMetrics#maybeAddRecordsLagMetric).
	Source   bool
	Read     float64
	Lag      float64
	LagKnown bool
	// Partitions is the Kafka partitions a KafkaSource reads, counted from
	// its per-partition metrics; zero when unknown.
	Partitions int32
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

// SourceNames are the metric names a listing of a source vertex's
// aggregated subtask metrics offers for what the source reads.
type SourceNames struct {
	// Pending is the reader's pendingRecords (FLIP-33); "" while the
	// source has not registered it.
	Pending string
	// In and Out are the source operator's own numRecordsIn/OutPerSecond,
	// named after it ("Source__orders.numRecordsOutPerSecond").
	In, Out string
	// Partitions is how many Kafka partitions its reader reports: a
	// KafkaSourceReader registers a currentOffset gauge per partition
	// assigned to it (KafkaSourceReaderMetrics#registerTopicPartition,
	// "KafkaSourceReader.topic.<topic>.partition.<n>.currentOffset"), as
	// the Apache autoscaler counts them; zero for another source.
	Partitions int32
}

// ListSourceNames finds a source's names in a listing of its vertex's
// metrics. Flink prefixes an operator's metrics with its name, filtered
// ("Source: orders" gives "Source__orders."); like the
// flink-kubernetes-operator's FlinkMetric, only a "Source__" prefix is
// taken for the source operator.
func ListSourceNames(ids []string) SourceNames {
	var n SourceNames
	partitions := map[string]bool{}
	for _, id := range ids {
		if tp, ok := kafkaPartition(id); ok {
			partitions[tp] = true
		}
		switch {
		case strings.HasSuffix(id, flink.MetricPendingRecordsSuffix):
			n.Pending = id
		case strings.HasPrefix(id, sourceOperatorPrefix) && strings.HasSuffix(id, "."+flink.MetricRecordsIn):
			n.In = id
		case strings.HasPrefix(id, sourceOperatorPrefix) && strings.HasSuffix(id, "."+flink.MetricRecordsOut):
			n.Out = id
		}
	}
	n.Partitions = int32(len(partitions))
	return n
}

// kafkaPartition is the "<topic>.partition.<n>" of a KafkaSourceReader's
// per-partition currentOffset metric.
func kafkaPartition(id string) (string, bool) {
	const reader, suffix = ".KafkaSourceReader.topic.", ".currentOffset"
	i := strings.Index(id, reader)
	if i < 0 || !strings.HasSuffix(id, suffix) {
		return "", false
	}
	tp := strings.TrimSuffix(id[i+len(reader):], suffix)
	j := strings.LastIndex(tp, ".partition.")
	if j <= 0 || strings.Trim(tp[j+len(".partition."):], "0123456789") != "" || len(tp) == j+len(".partition.") {
		return "", false
	}
	return tp, true
}

const sourceOperatorPrefix = "Source__"

// VertexFromMetrics reads one vertex's sample from Flink's aggregated
// subtask metrics (max, avg and sum of busyTimeMsPerSecond,
// backPressuredTimeMsPerSecond, numRecordsIn/OutPerSecond, and for a
// source, src, the names it listed); false when Flink had none.
func VertexFromMetrics(v flink.JobDetailsVertex, ms []flink.AggregatedMetric, src *SourceNames) (VertexSample, bool) {
	vs := VertexSample{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism, Source: src != nil}
	if len(ms) == 0 {
		// The JobManager's MetricFetcher has nothing yet (its first
		// answer after a start, or a metric not reported yet): no
		// reading, rather than a reading of zeros.
		return vs, false
	}
	var opIn, opOut float64
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
		case src == nil:
		case src.Pending != "" && m.ID == src.Pending:
			vs.Lag, vs.LagKnown = val(m.Sum), m.Sum != nil
		case src.In != "" && m.ID == src.In:
			opIn = val(m.Sum)
		case src.Out != "" && m.ID == src.Out:
			opOut = val(m.Sum)
		}
	}
	if src != nil {
		vs.Read = readRate(opIn, opOut, vs.RecordsIn, vs.RecordsOut)
		vs.Partitions = src.Partitions
	}
	return vs, true
}

// readRate is what a source reads per second: its operator's records in
// (a FLIP-27 SourceOperator counts what its reader emits), else its
// operator's records out (a legacy SourceFunction counts no records in:
// StreamSource has no input), as the flink-kubernetes-operator's
// ScalingMetrics does; else, for a source whose operator is not named
// "Source: ...", the task's records in, then out.
func readRate(opIn, opOut, taskIn, taskOut float64) float64 {
	for _, r := range []float64{opIn, opOut, taskIn} {
		if r > 0 {
			return r
		}
	}
	return taskOut
}

// MetricNames are what a sample asks Flink for, with a source's own
// names when src is one.
func MetricNames(src *SourceNames) []string {
	names := []string{flink.MetricBusyTime, flink.MetricBackPressuredTime, flink.MetricRecordsIn, flink.MetricRecordsOut}
	if src != nil {
		for _, n := range []string{src.Pending, src.In, src.Out} {
			if n != "" {
				names = append(names, n)
			}
		}
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

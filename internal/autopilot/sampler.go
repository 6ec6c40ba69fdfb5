package autopilot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// VertexRequests bounds the vertex metric requests of one sample: the
// sources every time, the other vertices in turns. With the job's own
// GET /jobs/{jobid} (read by the lifecycle anyway) and numRestarts, a
// sample costs at most VertexRequests+1 requests whatever the job's size,
// plus the listings of the sources' metric names (see relistGapMax).
const VertexRequests = 4

// relistGapMax bounds the samples between two listings of a source that
// lacked pendingRecords: a KafkaSource registers it only once its reader
// has fetched records (KafkaSourceReaderMetrics#maybeAddRecordsLagMetric),
// so it is listed again after 1, 2, 4, then every 8 samples; a legacy
// SourceFunction, which never has it, costs one request in 8 samples.
// A listing that has it is final for the job.
const relistGapMax = 8

// MetricsReader is the Flink REST a sample reads (flink.Client).
type MetricsReader interface {
	SubtaskMetricIDs(ctx context.Context, jobID, vertexID string) ([]string, error)
	SubtaskMetrics(ctx context.Context, jobID, vertexID string, names, aggs []string) ([]flink.AggregatedMetric, error)
}

// Sampler samples one job's vertices; its zero value starts a job.
type Sampler struct {
	// sources are the source vertices listed so far, by vertex ID.
	sources map[string]*listing
	polls   int
	cursor  int
}

// listing is what a source's last listing found, and when to list again.
type listing struct {
	names SourceNames
	// next is the poll at which to list again; gap the samples to it.
	next, gap int
}

// due says whether the source is listed at poll: never listed, or listed
// without pendingRecords and its gap has passed.
func (l *listing) due(poll int) bool {
	return l == nil || (l.names.Pending == "" && poll >= l.next)
}

// listed records a listing's names at poll and schedules the next one.
func listed(prev *listing, names SourceNames, poll int) *listing {
	l := &listing{names: names}
	if names.Pending == "" {
		l.gap = 1
		if prev != nil {
			l.gap = min(2*prev.gap, relistGapMax)
		}
		l.next = poll + l.gap
	}
	return l
}

// Sample reads the sources and, in turns, the other vertices: busy and
// backpressured time, record rates, and the sources' pending records,
// aggregated by Flink over the subtasks. It returns the requests it sent.
func (sm *Sampler) Sample(ctx context.Context, c MetricsReader, jobID string, vertices []flink.JobDetailsVertex, now time.Time) (Sample, int, error) {
	s := Sample{Time: now, JobID: jobID}
	if len(vertices) == 0 {
		return s, 0, fmt.Errorf("job %s lists no vertices", jobID)
	}
	if sm.sources == nil {
		sm.sources = map[string]*listing{}
	}
	poll := sm.polls
	sm.polls++
	requests := 0
	for _, v := range sourceCandidates(vertices) {
		prev := sm.sources[v.ID]
		if !prev.due(poll) {
			continue
		}
		ids, err := c.SubtaskMetricIDs(ctx, jobID, v.ID)
		requests++
		if err != nil {
			return s, requests, err
		}
		if len(ids) == 0 {
			// The JobManager's MetricFetcher has not fetched yet (its
			// first answer is empty): nothing new of this vertex.
			continue
		}
		sm.sources[v.ID] = listed(prev, ListSourceNames(ids), poll)
	}
	var pick []flink.JobDetailsVertex
	var others []flink.JobDetailsVertex
	for _, v := range vertices {
		if _, ok := sm.sources[v.ID]; ok {
			pick = append(pick, v)
		} else {
			others = append(others, v)
		}
	}
	turn := min(max(VertexRequests-len(pick), 0), len(others))
	for i := range turn {
		pick = append(pick, others[(sm.cursor+i)%len(others)])
	}
	if len(others) > 0 {
		sm.cursor = (sm.cursor + turn) % len(others)
	}
	for _, v := range pick {
		var src *SourceNames
		if l, ok := sm.sources[v.ID]; ok {
			src = &l.names
		}
		ms, err := c.SubtaskMetrics(ctx, jobID, v.ID, MetricNames(src), Aggregations)
		requests++
		if err != nil {
			return s, requests, err
		}
		if vs, ok := VertexFromMetrics(v, ms, src); ok {
			s.Vertices = append(s.Vertices, vs)
		}
	}
	return s, requests, nil
}

// sourceCandidates are the vertices that may be sources: those Flink
// names "Source: ..." (its default for a source's name), else the first
// (JobDetailsInfo lists vertices in topological order).
func sourceCandidates(vs []flink.JobDetailsVertex) []flink.JobDetailsVertex {
	var out []flink.JobDetailsVertex
	for _, v := range vs {
		if strings.HasPrefix(v.Name, "Source") {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = vs[:1]
	}
	return out
}

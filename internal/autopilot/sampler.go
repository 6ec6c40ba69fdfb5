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
// sample costs at most VertexRequests+1 requests whatever the job's size
// (plus, once per job, one listing of each source's metric names).
const VertexRequests = 4

// MetricsReader is the Flink REST a sample reads (flink.Client).
type MetricsReader interface {
	SubtaskMetricIDs(ctx context.Context, jobID, vertexID string) ([]string, error)
	SubtaskMetrics(ctx context.Context, jobID, vertexID string, names, aggs []string) ([]flink.AggregatedMetric, error)
}

// Sampler samples one job's vertices; its zero value starts a job.
type Sampler struct {
	// pending is each source vertex's pendingRecords metric name, found
	// once per job; "" for a vertex that has none.
	pending map[string]string
	cursor  int
}

// Sample reads the sources and, in turns, the other vertices: busy and
// backpressured time, record rates, and the sources' pending records,
// aggregated by Flink over the subtasks. It returns the requests it sent.
func (sm *Sampler) Sample(ctx context.Context, c MetricsReader, jobID string, vertices []flink.JobDetailsVertex, now time.Time) (Sample, int, error) {
	s := Sample{Time: now, JobID: jobID}
	requests := 0
	if len(vertices) == 0 {
		return s, 0, fmt.Errorf("job %s lists no vertices", jobID)
	}
	if sm.pending == nil {
		sm.pending = map[string]string{}
		for _, v := range sourceCandidates(vertices) {
			ids, err := c.SubtaskMetricIDs(ctx, jobID, v.ID)
			requests++
			if err != nil {
				sm.pending = nil
				return s, requests, err
			}
			if len(ids) == 0 {
				// The JobManager's MetricFetcher has not fetched yet (its
				// first answer is empty): nothing is known of this vertex.
				continue
			}
			sm.pending[v.ID] = ""
			for _, id := range ids {
				if strings.HasSuffix(id, flink.MetricPendingRecordsSuffix) {
					sm.pending[v.ID] = id
				}
			}
		}
		if len(sm.pending) == 0 {
			// List again at the next sample, not never.
			sm.pending = nil
		}
	}
	var pick []flink.JobDetailsVertex
	var others []flink.JobDetailsVertex
	for _, v := range vertices {
		if id, ok := sm.pending[v.ID]; ok && id != "" {
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
		pending := sm.pending[v.ID]
		ms, err := c.SubtaskMetrics(ctx, jobID, v.ID, MetricNames(pending), Aggregations)
		requests++
		if err != nil {
			return s, requests, err
		}
		if vs, ok := VertexFromMetrics(v, ms, pending); ok {
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

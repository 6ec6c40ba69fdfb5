package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Metric names as Flink's MetricStore serves them for a task (one subtask
// of a vertex; TaskIOMetricGroup) and for a job (JobManagerJobMetricGroup).
const (
	MetricBusyTime          = "busyTimeMsPerSecond"
	MetricBackPressuredTime = "backPressuredTimeMsPerSecond"
	MetricIdleTime          = "idleTimeMsPerSecond"
	MetricRecordsIn         = "numRecordsInPerSecond"
	MetricRecordsOut        = "numRecordsOutPerSecond"
	// MetricPendingRecordsSuffix ends a source operator's backlog metric,
	// <operator>.pendingRecords (FLIP-33's standard source metric; the
	// operator part is the operator's name as the MetricStore keys it).
	MetricPendingRecordsSuffix = ".pendingRecords"
	// MetricNumRestarts is the job's restart count.
	MetricNumRestarts = "numRestarts"
)

// Metric is the schema's Metric: Flink serves every value as a string.
type Metric struct {
	ID    string `json:"id"`
	Value string `json:"value,omitempty"`
}

// Float is the metric's value as a number; false when it is not one.
func (m Metric) Float() (float64, bool) {
	f, err := strconv.ParseFloat(m.Value, 64)
	return f, err == nil
}

// AggregatedMetric is one entry of AggregatedMetricsResponseBody: each
// aggregation that was asked for (agg=min,max,avg,sum) and could be
// computed.
type AggregatedMetric struct {
	ID  string   `json:"id"`
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	Avg *float64 `json:"avg,omitempty"`
	Sum *float64 `json:"sum,omitempty"`
}

// Aggregations of AggregatedSubtaskMetrics, as the agg parameter names them.
const (
	AggMin = "min"
	AggMax = "max"
	AggAvg = "avg"
	AggSum = "sum"
)

// decodeMetricList reads a metric list. Flink's MetricCollectionResponseBody
// and AggregatedMetricsResponseBody have custom Jackson serializers that
// write a bare JSON array; the schema generator describes the Java class
// instead (an object with a metrics property), so that shape is read too.
func decodeMetricList[T any](data []byte, out *[]T) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var wrapped struct {
			Metrics []T `json:"metrics"`
		}
		if err := json.Unmarshal(data, &wrapped); err != nil {
			return err
		}
		*out = wrapped.Metrics
		return nil
	}
	return json.Unmarshal(data, out)
}

type metricList[T any] []T

func (l *metricList[T]) UnmarshalJSON(b []byte) error {
	var out []T
	if err := decodeMetricList(b, &out); err != nil {
		return err
	}
	*l = out
	return nil
}

// JobMetrics is GET /jobs/{jobid}/metrics: without names, the list of the
// job's metric IDs; with names, their values.
func (c *Client) JobMetrics(ctx context.Context, jobID string, names ...string) ([]Metric, error) {
	var out metricList[Metric]
	err := c.getQuery(ctx, "/jobs/{jobid}/metrics", "/jobs/"+url.PathEscape(jobID)+"/metrics", metricsQuery(names, nil), &out)
	return out, err
}

// VertexMetrics is GET /jobs/{jobid}/vertices/{vertexid}/metrics: the
// vertex's metrics per subtask, as <subtask>.<name>.
func (c *Client) VertexMetrics(ctx context.Context, jobID, vertexID string, names ...string) ([]Metric, error) {
	var out metricList[Metric]
	err := c.getQuery(ctx, "/jobs/{jobid}/vertices/{vertexid}/metrics",
		"/jobs/"+url.PathEscape(jobID)+"/vertices/"+url.PathEscape(vertexID)+"/metrics", metricsQuery(names, nil), &out)
	return out, err
}

// SubtaskMetricIDs lists the metric IDs every subtask of a vertex has
// (GET .../subtasks/metrics without get): where a source's
// <operator>.pendingRecords is found.
func (c *Client) SubtaskMetricIDs(ctx context.Context, jobID, vertexID string) ([]string, error) {
	var out metricList[AggregatedMetric]
	if err := c.getQuery(ctx, "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics",
		"/jobs/"+url.PathEscape(jobID)+"/vertices/"+url.PathEscape(vertexID)+"/subtasks/metrics", nil, &out); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(out))
	for _, m := range out {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// SubtaskMetrics is GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics
// with get and agg: the named metrics aggregated over the vertex's
// subtasks (AggregatingSubtasksMetricsHandler).
func (c *Client) SubtaskMetrics(ctx context.Context, jobID, vertexID string, names, aggs []string) ([]AggregatedMetric, error) {
	var out metricList[AggregatedMetric]
	err := c.getQuery(ctx, "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics",
		"/jobs/"+url.PathEscape(jobID)+"/vertices/"+url.PathEscape(vertexID)+"/subtasks/metrics", metricsQuery(names, aggs), &out)
	return out, err
}

func metricsQuery(names, aggs []string) url.Values {
	q := url.Values{}
	if len(names) > 0 {
		q.Set("get", strings.Join(names, ","))
	}
	if len(aggs) > 0 {
		q.Set("agg", strings.Join(aggs, ","))
	}
	return q
}

// Parallelism is the schema's Parallelism: the bounds the adaptive
// scheduler keeps a vertex within.
type Parallelism struct {
	LowerBound int32 `json:"lowerBound"`
	UpperBound int32 `json:"upperBound"`
}

// VertexResourceRequirements is the schema's JobVertexResourceRequirements.
type VertexResourceRequirements struct {
	Parallelism Parallelism `json:"parallelism"`
}

// ResourceRequirements is the schema's JobResourceRequirementsBody, by
// job vertex ID.
type ResourceRequirements map[string]VertexResourceRequirements

// ResourceRequirements is GET /jobs/{jobid}/resource-requirements (Flink
// 1.18+).
func (c *Client) ResourceRequirements(ctx context.Context, jobID string) (ResourceRequirements, error) {
	out := ResourceRequirements{}
	return out, c.get(ctx, "/jobs/{jobid}/resource-requirements", "/jobs/"+url.PathEscape(jobID)+"/resource-requirements", &out)
}

// SetResourceRequirements is PUT /jobs/{jobid}/resource-requirements: the
// adaptive scheduler rescales the job in place to the new bounds (it
// restarts from its latest checkpoint). Flink refuses it for a job that
// another scheduler runs. Sent once, never retried: it is idempotent, but
// a rescale the caller did not see land is decided again next time.
func (c *Client) SetResourceRequirements(ctx context.Context, jobID string, req ResourceRequirements) error {
	return c.once(ctx, http.MethodPut, "/jobs/{jobid}/resource-requirements", "/jobs/"+url.PathEscape(jobID)+"/resource-requirements", nil, req, nil)
}

// getQuery is get with query parameters.
func (c *Client) getQuery(ctx context.Context, endpoint, p string, q url.Values, out any) error {
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return c.get(ctx, endpoint, p, out)
}

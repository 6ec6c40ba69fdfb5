package flink_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

func f64(v float64) *float64 { return &v }

// TestMetricsAndResourceRequirementsAgainstSchema sends the autopilot's
// requests to a server that checks each against the official schema of
// every minor that has the operation, and answers in Flink's wire format:
// the metric bodies are bare JSON arrays (the custom serializers of
// MetricCollectionResponseBody and AggregatedMetricsResponseBody), which
// the schema, generated from the Java classes, does not describe.
func TestMetricsAndResourceRequirementsAgainstSchema(t *testing.T) {
	schemas, err := flinkschema.All()
	if err != nil {
		t.Fatal(err)
	}
	agg := []flink.AggregatedMetric{
		{ID: flink.MetricBusyTime, Min: f64(100), Max: f64(900), Avg: f64(400), Sum: f64(1600)},
		{ID: "Source__orders.pendingRecords", Sum: f64(12345)},
	}
	reqs := flink.ResourceRequirements{vertexID: {Parallelism: flink.Parallelism{LowerBound: 1, UpperBound: 6}}}
	for _, schema := range schemas {
		t.Run(schema.Minor, func(t *testing.T) {
			hasRequirements := schema.Properties("JobVertexResourceRequirements")["parallelism"]
			var gotPut flink.ResourceRequirements
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := schema.ValidateRequest(oneAggregation(t, r), body); err != nil {
					t.Errorf("request does not follow the schema: %v", err)
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				_, op, _, _ := schema.Operation(r.Method, r.URL.Path)
				var out any
				switch op.OperationID {
				case "getJobMetrics":
					if r.URL.Query().Get("get") != flink.MetricNumRestarts {
						t.Errorf("job metrics get = %q", r.URL.Query().Get("get"))
					}
					out = []flink.Metric{{ID: flink.MetricNumRestarts, Value: "3"}}
				case "getJobVertexMetrics":
					out = []flink.Metric{{ID: "0.numRecordsInPerSecond", Value: "10.5"}}
				case "getAggregatedSubtaskMetrics":
					if r.URL.Query().Get("get") == "" {
						out = []flink.AggregatedMetric{{ID: flink.MetricBusyTime}, {ID: "Source__orders.pendingRecords"}}
						break
					}
					if r.URL.Query().Get("agg") != "max,avg,sum" {
						t.Errorf("agg = %q", r.URL.Query().Get("agg"))
					}
					out = agg
				case "getJobResourceRequirements":
					out = reqs
				case "updateJobResourceRequirements":
					_ = json.Unmarshal(body, &gotPut)
					w.WriteHeader(http.StatusOK)
					return
				default:
					t.Errorf("unexpected operation %s", op.OperationID)
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(out)
			}))
			defer srv.Close()
			c := flink.NewClient(srv.URL, srv.Client())
			ctx := context.Background()

			m, err := c.JobMetrics(ctx, jobID, flink.MetricNumRestarts)
			if err != nil || len(m) != 1 {
				t.Fatalf("JobMetrics = %v, %v", m, err)
			}
			if v, ok := m[0].Float(); !ok || v != 3 {
				t.Errorf("numRestarts = %v", m[0])
			}
			vm, err := c.VertexMetrics(ctx, jobID, vertexID, flink.MetricRecordsIn)
			if err != nil || len(vm) != 1 || vm[0].Value != "10.5" {
				t.Errorf("VertexMetrics = %v, %v", vm, err)
			}
			ids, err := c.SubtaskMetricIDs(ctx, jobID, vertexID)
			if err != nil || !reflect.DeepEqual(ids, []string{flink.MetricBusyTime, "Source__orders.pendingRecords"}) {
				t.Errorf("SubtaskMetricIDs = %v, %v", ids, err)
			}
			got, err := c.SubtaskMetrics(ctx, jobID, vertexID, []string{flink.MetricBusyTime, "Source__orders.pendingRecords"}, []string{flink.AggMax, flink.AggAvg, flink.AggSum})
			if err != nil || !reflect.DeepEqual(got, agg) {
				t.Errorf("SubtaskMetrics = %+v, %v", got, err)
			}
			if !hasRequirements {
				return // resource requirements came with 1.18
			}
			rr, err := c.ResourceRequirements(ctx, jobID)
			if err != nil || !reflect.DeepEqual(rr, reqs) {
				t.Errorf("ResourceRequirements = %+v, %v", rr, err)
			}
			if err := schema.ValidateValue("JobResourceRequirementsBody", reqs); err != nil {
				t.Error(err)
			}
			assertKnownNames(t, schema, "JobVertexResourceRequirements", reqs[vertexID])
			assertKnownNames(t, schema, "Parallelism", reqs[vertexID].Parallelism)
			if err := c.SetResourceRequirements(ctx, jobID, reqs); err != nil || !reflect.DeepEqual(gotPut, reqs) {
				t.Errorf("SetResourceRequirements sent %+v: %v", gotPut, err)
			}
		})
	}
}

// oneAggregation checks each element of a comma-separated agg against the
// schema's AggregationMode enum, as Flink's MessageQueryParameter splits
// the list and MetricsAggregationParameter upper-cases each element; the
// schema describes one element. It returns the request with the first
// element alone, for the schema's own check.
func oneAggregation(t *testing.T, r *http.Request) *http.Request {
	q := r.URL.Query()
	agg := q.Get("agg")
	if agg == "" {
		return r
	}
	modes := strings.Split(agg, ",")
	for _, m := range modes {
		switch strings.ToUpper(m) {
		case "MIN", "MAX", "SUM", "AVG":
		default:
			t.Errorf("agg element %q is no AggregationMode", m)
		}
	}
	q.Set("agg", strings.ToUpper(modes[0]))
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	return r2
}

// TestMetricListDecodesBothShapes: Flink's wire format (an array) and the
// schema's description of the Java class (an object with metrics).
func TestMetricListDecodesBothShapes(t *testing.T) {
	for name, body := range map[string]string{
		"array":  `[{"id":"numRestarts","value":"2"}]`,
		"object": `{"metrics":[{"id":"numRestarts","value":"2"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, body)
			}))
			defer srv.Close()
			m, err := flink.NewClient(srv.URL, srv.Client()).JobMetrics(context.Background(), jobID)
			if err != nil || len(m) != 1 || m[0].ID != "numRestarts" || m[0].Value != "2" {
				t.Errorf("decoded %+v, %v", m, err)
			}
		})
	}
}

package flink

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestRESTMetricsCountEachAttemptByEndpointAndCode: a GET retried after a
// 503 counts twice, a savepoint trigger's 404 once, under the schema's
// endpoint and not the URL; a refused connection counts as unreachable.
// Each attempt is timed under its endpoint.
func TestRESTMetricsCountAndTimeEachAttemptByEndpoint(t *testing.T) {
	var overviews int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/overview":
			if overviews++; overviews == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte(`{"taskmanagers":1}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	m := NewRESTMetrics(nil)
	hc := &http.Client{Transport: m.Transport(nil)}
	c := NewClient(srv.URL, hc)
	c.RetryBackoff = 0
	ctx := context.Background()
	if _, err := c.Overview(ctx); err != nil {
		t.Fatalf("Overview: %v", err)
	}
	if _, err := c.TriggerSavepoint(ctx, testJobID, SavepointTriggerRequest{}); !IsNotFound(err) {
		t.Fatalf("TriggerSavepoint: want a 404, got %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	down := NewClient(refused, hc)
	down.MaxRetries = 0
	if _, err := down.Jobs(ctx); !IsUnavailable(err) {
		t.Fatalf("Jobs: want unreachable, got %v", err)
	}

	for _, tc := range []struct {
		endpoint, code string
		want           float64
	}{
		{"GET /overview", "503", 1},
		{"GET /overview", "200", 1},
		{"POST /jobs/{jobid}/savepoints", "404", 1},
		{"GET /jobs", "unreachable", 1},
	} {
		if got := counterValue(t, m.Requests.WithLabelValues(tc.endpoint, tc.code)); got != tc.want {
			t.Errorf("requests{endpoint=%q, code=%q} = %v, want %v", tc.endpoint, tc.code, got, tc.want)
		}
	}
	for endpoint, want := range map[string]uint64{"GET /overview": 2, "POST /jobs/{jobid}/savepoints": 1, "GET /jobs": 1} {
		var h dto.Metric
		if err := m.Duration.WithLabelValues(endpoint).(prometheus.Histogram).Write(&h); err != nil {
			t.Fatal(err)
		}
		if got := h.GetHistogram().GetSampleCount(); got != want {
			t.Errorf("duration{endpoint=%q}: %d samples, want %d (one per attempt)", endpoint, got, want)
		}
		if h.GetHistogram().GetSampleSum() <= 0 {
			t.Errorf("duration{endpoint=%q}: sum %v, want the time taken", endpoint, h.GetHistogram().GetSampleSum())
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Requests, m.Duration)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if want := map[string]int{"datapilot_flink_rest_requests_total": 4, "datapilot_flink_rest_request_duration_seconds": 3}[f.GetName()]; len(f.GetMetric()) != want {
			t.Errorf("%s: %d series, want %d (no URL-labelled ones)", f.GetName(), len(f.GetMetric()), want)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

package flink

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// endpointKey carries a request's endpoint class (method and schema path,
// such as "POST /jobs/{jobid}/savepoints") to the transport, which sees
// only the concrete URL.
type endpointKey struct{}

func withEndpoint(ctx context.Context, method, endpoint string) context.Context {
	return context.WithValue(ctx, endpointKey{}, method+" "+endpoint)
}

// EndpointOf is the endpoint class of a request the Client sent, or
// "other" for a request it did not.
func EndpointOf(req *http.Request) string {
	if e, ok := req.Context().Value(endpointKey{}).(string); ok {
		return e
	}
	return "other"
}

// RESTMetrics count the Flink REST requests sent through an instrumented
// transport, by endpoint class and HTTP status code ("unreachable" when no
// response arrived: refused, timed out, cancelled), and time them, by
// endpoint class: a reconcile waits for some of them, and how long is part
// of how soon a cluster's status tells the truth. Labels are the schema's
// endpoints, never URLs, so their number is bounded by the API.
type RESTMetrics struct {
	Requests *prometheus.CounterVec
	// Duration is the time to the response's headers (or the error).
	Duration *prometheus.HistogramVec
}

// NewRESTMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewRESTMetrics(reg prometheus.Registerer) *RESTMetrics {
	m := &RESTMetrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_flink_rest_requests_total",
			Help: "Flink REST requests, by endpoint (method and schema path) and code (HTTP status, or unreachable).",
		}, []string{"endpoint", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "datapilot_flink_rest_request_duration_seconds",
			Help:    "Time from sending a Flink REST request to its response's headers or its failure, by endpoint (method and schema path).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
	}
	if reg != nil {
		reg.MustRegister(m.Requests, m.Duration)
	}
	return m
}

// Transport wraps next (http.DefaultTransport when nil) so every request
// is counted and timed once per attempt, retries included.
func (m *RESTMetrics) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(req)
		endpoint := EndpointOf(req)
		m.Duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
		code := "unreachable"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.Requests.WithLabelValues(endpoint, code).Inc()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

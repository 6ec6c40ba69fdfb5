package flink

import (
	"context"
	"net/http"
	"strconv"

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
// response arrived: refused, timed out, cancelled). Labels are the schema's
// endpoints, never URLs, so their number is bounded by the API.
type RESTMetrics struct {
	Requests *prometheus.CounterVec
}

// NewRESTMetrics creates the counter and registers it with reg (nil: not
// registered).
func NewRESTMetrics(reg prometheus.Registerer) *RESTMetrics {
	m := &RESTMetrics{Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "datapilot_flink_rest_requests_total",
		Help: "Flink REST requests, by endpoint (method and schema path) and code (HTTP status, or unreachable).",
	}, []string{"endpoint", "code"})}
	if reg != nil {
		reg.MustRegister(m.Requests)
	}
	return m
}

// Transport wraps next (http.DefaultTransport when nil) so every request
// is counted once per attempt, retries included.
func (m *RESTMetrics) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		code := "unreachable"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.Requests.WithLabelValues(EndpointOf(req), code).Inc()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

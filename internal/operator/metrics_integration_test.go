package operator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/datapilot/datapilot/internal/platform"
)

// testSecureMetrics (run by TestConversionWebhook) scrapes the manager's
// metrics endpoint as Prometheus would, and as others would: over HTTPS
// only, a client without a token is refused (401), one whose account may
// not get /metrics too (403), the reader with that grant gets the metrics,
// and pprof is not served there.
func testSecureMetrics(t *testing.T, ce *conversionEnv) {
	ctx := context.Background()
	url := "https://" + ce.metricsAddr + "/metrics"
	reader, err := platform.MetricsClientFor(ctx, ce.cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := kubernetes.NewForConfigOrDie(ce.cfg)
	stranger := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: "default"}}
	if _, err := k.CoreV1().ServiceAccounts("default").Create(ctx, stranger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := k.CoreV1().ServiceAccounts("default").CreateToken(ctx, "stranger", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
		want   int
	}{
		{"no token", platform.TokenClient(""), url, http.StatusUnauthorized},
		{"a forged token", platform.TokenClient("not-a-token"), url, http.StatusUnauthorized},
		{"an account without get on /metrics", platform.TokenClient(tok.Status.Token), url, http.StatusForbidden},
		{"the metrics reader", reader, url, http.StatusOK},
		{"pprof on the metrics port", reader, "https://" + ce.metricsAddr + "/debug/pprof/", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.client.Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("GET %s: %s, want %d", tc.url, resp.Status, tc.want)
			}
			if tc.want == http.StatusOK && !strings.Contains(string(body), "controller_runtime_reconcile_total{controller=\"flinkcluster\"") {
				t.Errorf("The metrics lack the operator's own: %.200s", body)
			}
		})
	}
	// Plain HTTP gets no metrics.
	if resp, err := http.Get("http://" + ce.metricsAddr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("The metrics answer plain HTTP")
		}
	}
}

package operator

import (
	"net/http"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/webhookcert"
)

// writeCounter counts the requests through it that are not reads.
type writeCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (w writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		w.n.Add(1)
	}
	return w.next.RoundTrip(r)
}

// TestInjectorIsIdleOnceInjected: the Injector checks every minute on
// every replica; once the CRD and the webhook configurations trust its CA,
// a check sends nothing. The API server defaults fields of a webhook the
// operator leaves unset (the selectors among them): a webhook built
// without them differed from what the server returns at every check and
// was patched, to no effect, once a minute. Real API server, both ways of
// reaching the webhook.
func TestInjectorIsIdleOnceInjected(t *testing.T) {
	_, admin := testenv.Start(t)
	var writes atomic.Int64
	cfg := rest.CopyConfig(admin)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return writeCounter{next: rt, n: &writes} }
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	crds, err := webhookcert.CRDClient(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(*Options)
	}{
		{"service", func(o *Options) { o.WebhookService = "ops/datapilot-webhook" }},
		{"url", func(o *Options) { o.WebhookURL = "https://127.0.0.1:9443/convert" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Defaults()
			if err != nil {
				t.Fatal(err)
			}
			o.WebhookCertMode = WebhookCertSelfSigned
			tc.set(&o)
			io, err := injectorOptions(o, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			io.CRDs, io.Reader, io.Writer, io.Log = crds, c, c, zap.New()
			in, err := webhookcert.New(io)
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Inject(t.Context()); err != nil {
				t.Fatal(err)
			}
			if writes.Load() == 0 {
				t.Fatal("the first injection wrote nothing: it has a new CA to add")
			}
			writes.Store(0)
			if err := in.Inject(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := writes.Load(); n != 0 {
				t.Errorf("a check after the injection sent %d writes, want none", n)
			}
		})
	}
}

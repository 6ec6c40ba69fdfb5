package webhookcert

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;patch,resourceNames=flinkclusters.data.example.com

// Options configure an Injector.
type Options struct {
	// CRDName is the CustomResourceDefinition whose conversion is managed.
	CRDName string
	// Service or URL is where the API server sends ConversionReviews;
	// exactly one is set. The caBundle is filled in by the Injector.
	Service *apiextensionsv1.ServiceReference
	URL     string
	// Hosts the serving certificate is valid for.
	Hosts []string
	// CertDir receives tls.crt and tls.key.
	CertDir string
	// Validating and Mutating, when set, are kept trusting the same CA.
	Validating *Validating
	Mutating   *Mutating
	// CRDs is a REST client of apiextensions.k8s.io/v1 (see CRDClient)
	// that reads and patches the CRD.
	CRDs rest.Interface
	// Reader (uncached) and Writer read and write the webhook
	// configurations.
	Reader client.Reader
	Writer client.Writer
	// Interval between checks that the CRD still trusts this replica;
	// default one minute.
	Interval time.Duration
	Log      logr.Logger
}

// Injector generates the webhook's certificate and keeps the CRD's
// conversion stanza pointing at the webhook and trusting the certificate's
// CA. It is a manager Runnable that runs on every replica, leader or not:
// each serves the webhook.
type Injector struct {
	o Options

	mu   sync.Mutex
	pair *Pair
	// injected is set once the CRD trusts the current CA.
	injected atomic.Bool
	now      func() time.Time
	// grace is how long a renewal serves the old certificate after the
	// CRD trusts the new CA.
	grace time.Duration
}

// RenewalGrace is the default grace between trusting a renewed CA and
// serving the certificate it signed.
const RenewalGrace = 5 * time.Second

// New generates the CA and serving certificate and writes them to the cert
// dir, so the webhook server finds them when it starts.
func New(o Options) (*Injector, error) {
	if (o.Service == nil) == (o.URL == "") {
		return nil, errors.New("webhook certificate injector: set exactly one of Service and URL")
	}
	if o.Interval == 0 {
		o.Interval = time.Minute
	}
	in := &Injector{o: o, now: time.Now, grace: RenewalGrace}
	pair, err := Generate(o.Hosts, in.now())
	if err != nil {
		return nil, err
	}
	if err := pair.Write(o.CertDir); err != nil {
		return nil, err
	}
	in.pair = pair
	return in, nil
}

// NeedLeaderElection is false: every replica serves the webhook and must be
// trusted.
func (in *Injector) NeedLeaderElection() bool { return false }

// Start injects the CA, then checks every interval that it is still there
// (another replica, or a `kubectl apply` of the CRD, may have rewritten the
// stanza) and renews the certificates before they expire.
func (in *Injector) Start(ctx context.Context) error {
	log := in.o.Log
	for {
		wait := in.o.Interval
		if err := in.renewIfDue(ctx); err != nil {
			log.Error(err, "Renewing the webhook certificate")
			wait = 5 * time.Second
		}
		if err := in.Inject(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Injecting the webhook CA into the CRD", "crd", in.o.CRDName)
			wait = 5 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// renewIfDue replaces the certificates when less than RenewBefore is left:
// the new CA joins the bundle before the new certificate is served, and the
// old CA stays in it until it expires.
func (in *Injector) renewIfDue(ctx context.Context) error {
	in.mu.Lock()
	due := in.pair.NotAfter.Sub(in.now()) < RenewBefore
	in.mu.Unlock()
	if !due {
		return nil
	}
	pair, err := Generate(in.o.Hosts, in.now())
	if err != nil {
		return err
	}
	in.mu.Lock()
	old := in.pair
	in.pair = pair
	in.mu.Unlock()
	// Inject trusts both CAs; then serve the new certificate.
	if err := in.Inject(ctx); err != nil {
		in.mu.Lock()
		in.pair = old
		in.mu.Unlock()
		return err
	}
	// The API server picks the new caBundle up from its CRD informer, a
	// moment after the patch; until then it trusts only the old CA. The
	// old certificate has RenewBefore left, so serving it a little longer
	// costs nothing, while serving the new one too early fails conversions.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(in.grace):
	}
	in.o.Log.Info("Renewed the webhook certificate", "notAfter", pair.NotAfter)
	return pair.Write(in.o.CertDir)
}

// Inject makes the CRD's spec.conversion a webhook conversion to this
// operator whose caBundle holds the current CA, and the validating and
// mutating webhook configurations, when there are, likewise. It writes only when
// something differs.
func (in *Injector) Inject(ctx context.Context) error {
	in.mu.Lock()
	ca := in.pair.CAPEM
	in.mu.Unlock()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := readConversion(ctx, in.o.CRDs, in.o.CRDName)
		if err != nil {
			return fmt.Errorf("reading CRD %s: %w", in.o.CRDName, err)
		}
		var bundle []byte
		if c := cur.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
			bundle = c.Webhook.ClientConfig.CABundle
		}
		want := &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{
					Service:  in.o.Service.DeepCopy(),
					CABundle: mergeBundle(bundle, ca, in.now(), MaxOtherCAs),
				},
				ConversionReviewVersions: []string{"v1"},
			},
		}
		if in.o.URL != "" {
			u := in.o.URL
			want.Webhook.ClientConfig.URL = &u
		}
		if equality.Semantic.DeepEqual(cur.Spec.Conversion, want) {
			return nil
		}
		if err := patchConversion(ctx, in.o.CRDs, in.o.CRDName, cur, want); err != nil {
			return err
		}
		in.o.Log.Info("Pointed the CRD's conversion webhook at this operator", "crd", in.o.CRDName, "caBundleCertificates", countCerts(want.Webhook.ClientConfig.CABundle))
		return nil
	})
	if err == nil && in.o.Validating != nil {
		err = in.injectValidating(ctx, ca)
	}
	if err == nil && in.o.Mutating != nil {
		err = in.injectMutating(ctx, ca)
	}
	if err != nil {
		in.injected.Store(false)
		return err
	}
	in.injected.Store(true)
	return nil
}

// Checker is a readiness check: ready once the CRD (and the webhook
// configurations) trust this replica's CA,
// so the webhook Service sends conversions only to replicas the API server
// can verify.
func (in *Injector) Checker(_ *http.Request) error {
	if !in.injected.Load() {
		return fmt.Errorf("the CA is not yet in CRD %s", in.o.CRDName)
	}
	return nil
}

func countCerts(bundle []byte) int {
	n := 0
	for b, rest := pem.Decode(bundle); b != nil; b, rest = pem.Decode(rest) {
		n++
	}
	return n
}

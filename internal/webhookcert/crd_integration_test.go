package webhookcert

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/testenv"
)

// startAPIServer starts a real API server with the project's CRDs and
// returns a client of the types the tests read and the Injector's CRD
// client.
func startAPIServer(t *testing.T) (client.Client, rest.Interface) {
	t.Helper()
	_, cfg := testenv.Start(t)
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	crds, err := CRDClient(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, crds
}

// TestInjectPatchesOnlyTheConversion: the Injector reads the CRD raw and
// sends a merge patch of spec.conversion alone. A conversion another
// install left (a Service reference with a stale bundle) is replaced, not
// merged into; the rest of the CRD is untouched; an unchanged injection
// writes nothing; a patch against a stale resourceVersion is a conflict,
// which Inject's retry reads again.
func TestInjectPatchesOnlyTheConversion(t *testing.T) {
	c, crds := startAPIServer(t)
	ctx := context.Background()
	const name = "flinkclusters.data.example.com"
	get := func() *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		return crd
	}
	// As the kustomize install ships it: a Service, a path, no CA.
	before := get()
	shipped := before.DeepCopy()
	shipped.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: "ops", Name: "datapilot-webhook", Path: ptr.To("/convert"), Port: ptr.To(int32(443))}},
			ConversionReviewVersions: []string{"v1", "v1beta1"},
		},
	}
	if err := c.Update(ctx, shipped); err != nil {
		t.Fatal(err)
	}

	url := "https://127.0.0.1:9443/convert"
	in, err := New(Options{CRDName: name, URL: url, Hosts: []string{"127.0.0.1"}, CertDir: t.TempDir(),
		CRDs: crds, Reader: c, Writer: c, Log: zap.New()})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	got := get()
	cc := got.Spec.Conversion.Webhook.ClientConfig
	if cc.Service != nil || cc.URL == nil || *cc.URL != url {
		t.Errorf("clientConfig after Inject: service %+v, url %v; want the URL alone", cc.Service, cc.URL)
	}
	if n := countCerts(cc.CABundle); n != 1 {
		t.Errorf("caBundle holds %d certificates, want this replica's CA", n)
	}
	if v := got.Spec.Conversion.Webhook.ConversionReviewVersions; len(v) != 1 || v[0] != "v1" {
		t.Errorf("conversionReviewVersions %v, want [v1]", v)
	}
	if len(got.Spec.Versions) != len(before.Spec.Versions) || got.Spec.Versions[0].Schema == nil {
		t.Errorf("the versions changed: %d before, %d after", len(before.Spec.Versions), len(got.Spec.Versions))
	}

	if err := in.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if rv := get().ResourceVersion; rv != got.ResourceVersion {
		t.Errorf("an unchanged injection wrote the CRD (resourceVersion %s -> %s)", got.ResourceVersion, rv)
	}

	cur, err := readConversion(ctx, crds, name)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Metadata.ResourceVersion != got.ResourceVersion {
		t.Fatalf("readConversion read resourceVersion %s, the CRD has %s", cur.Metadata.ResourceVersion, got.ResourceVersion)
	}
	// Another writer moves the CRD on: the patch from the old read conflicts.
	moved := get()
	moved.Annotations = map[string]string{"moved": time.Now().String()}
	if err := c.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	want := cur.Spec.Conversion.DeepCopy()
	want.Webhook.ConversionReviewVersions = []string{"v1", "v1beta1"}
	if err := patchConversion(ctx, crds, name, cur, want); !apierrors.IsConflict(err) {
		t.Errorf("a patch from a stale read returned %v, want a conflict", err)
	}
}

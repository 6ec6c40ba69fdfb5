package webhookcert

import (
	"context"
	"encoding/json"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The CRD carries the OpenAPI schema of every version, most of a megabyte
// of JSON. Decoded into CustomResourceDefinition (and deep-copied for a
// patch) it made the Injector the largest allocation of an idle operator,
// once a minute on every replica; so the CRD is read raw and only what the
// Injector keeps is decoded.

// crdConversion is the part of a CustomResourceDefinition the Injector
// reads: json.Unmarshal skips the rest.
type crdConversion struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		Conversion *apiextensionsv1.CustomResourceConversion `json:"conversion,omitempty"`
	} `json:"spec"`
}

// CRDClient is the REST client of apiextensions.k8s.io/v1 that
// Options.CRDs wants, over the given config and HTTP client (nil: one of
// its own).
func CRDClient(cfg *rest.Config, hc *http.Client) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/apis"
	c.GroupVersion = &apiextensionsv1.SchemeGroupVersion
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	// readConversion decodes the raw body as JSON, whatever the config
	// asks of other clients.
	c.ContentType, c.AcceptContentTypes = "application/json", "application/json"
	if hc == nil {
		return rest.RESTClientFor(c)
	}
	return rest.RESTClientForConfigAndClient(c, hc)
}

func readConversion(ctx context.Context, crds rest.Interface, name string) (*crdConversion, error) {
	raw, err := crds.Get().Resource("customresourcedefinitions").Name(name).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	cur := &crdConversion{}
	return cur, json.Unmarshal(raw, cur)
}

// patchConversion sends the JSON merge patch from cur's conversion to want,
// with cur's resourceVersion: a concurrent write by another replica is a
// conflict, retried with its bundle. The response, the whole CRD, is not
// decoded.
func patchConversion(ctx context.Context, crds rest.Interface, name string, cur *crdConversion, want *apiextensionsv1.CustomResourceConversion) error {
	from, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": cur.Spec.Conversion}})
	if err != nil {
		return err
	}
	to, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": want}})
	if err != nil {
		return err
	}
	diff, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return err
	}
	patch := map[string]any{}
	if err := json.Unmarshal(diff, &patch); err != nil {
		return err
	}
	patch["metadata"] = map[string]any{"resourceVersion": cur.Metadata.ResourceVersion}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return crds.Patch(types.MergePatchType).Resource("customresourcedefinitions").Name(name).Body(body).Do(ctx).Error()
}

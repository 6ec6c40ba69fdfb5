// Package convert converts FlinkCluster manifests between the served API
// versions offline, through the very handler the operator serves as its
// conversion webhook (controller-runtime's, over api/v1alpha1's
// ConvertTo/ConvertFrom): a file converted here is what the API server
// would store for it.
package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
)

// Group is the API group whose objects are converted; objects of any other
// group pass through unchanged.
const Group = "data.example.com"

// Kinds are the kinds of Group that have more than one version.
var Kinds = map[string]bool{"FlinkCluster": true}

// Converter converts objects as the webhook does.
type Converter struct {
	handler http.Handler
}

// New builds a Converter over the webhook handler with v1 and v1alpha1.
func New() *Converter {
	s := runtime.NewScheme()
	utilruntime.Must(v1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return &Converter{handler: conversion.NewWebhookHandler(s, conversion.NewRegistry())}
}

// Versions are the API versions Convert can write.
var Versions = []string{v1.GroupVersion.String(), v1alpha1.GroupVersion.String()}

// Convert returns objs with every object of Group in outputVersion (such as
// data.example.com/v1). Objects already in it, and objects of other groups,
// are returned as they are. A kind of Group with no conversion is an error.
func (c *Converter) Convert(objs []*unstructured.Unstructured, outputVersion string) ([]*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(outputVersion)
	if err != nil || gv.Group != Group || !knownVersion(outputVersion) {
		return nil, fmt.Errorf("--output-version %q: want one of %v", outputVersion, Versions)
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		ogv, err := schema.ParseGroupVersion(o.GetAPIVersion())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describe(o), err)
		}
		if ogv.Group != Group || o.GetAPIVersion() == outputVersion {
			out[i] = o
			continue
		}
		if !Kinds[o.GetKind()] {
			return nil, fmt.Errorf("%s: kind %s of %s has no conversion", describe(o), o.GetKind(), Group)
		}
		if out[i], err = c.convertOne(o, outputVersion); err != nil {
			return nil, fmt.Errorf("%s: %w", describe(o), err)
		}
	}
	return out, nil
}

// convertOne sends one object through the webhook handler in a
// ConversionReview, as the API server would.
func (c *Converter) convertOne(o *unstructured.Unstructured, outputVersion string) (*unstructured.Unstructured, error) {
	raw, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	review := apix.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apix.ConversionRequest{
			UID:               types.UID("datapilot-convert"),
			DesiredAPIVersion: outputVersion,
			Objects:           []runtime.RawExtension{{Raw: raw}},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	req := httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	c.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("conversion failed with HTTP %d", rec.Code)
	}
	var resp apix.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("reading the conversion response: %w", err)
	}
	if resp.Response == nil {
		return nil, fmt.Errorf("the conversion response is empty")
	}
	if resp.Response.Result.Status != "Success" {
		return nil, fmt.Errorf("conversion failed: %s", resp.Response.Result.Message)
	}
	if len(resp.Response.ConvertedObjects) != 1 {
		return nil, fmt.Errorf("conversion returned %d objects for 1", len(resp.Response.ConvertedObjects))
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(resp.Response.ConvertedObjects[0].Raw); err != nil {
		return nil, fmt.Errorf("reading the converted object: %w", err)
	}
	// The typed round trip writes creationTimestamp: null and an empty
	// status; a manifest had neither.
	if o.Object["metadata"] != nil {
		if _, had := o.Object["metadata"].(map[string]any)["creationTimestamp"]; !had {
			unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		}
	}
	if _, had := o.Object["status"]; !had {
		unstructured.RemoveNestedField(u.Object, "status")
	}
	return u, nil
}

func knownVersion(v string) bool {
	for _, k := range Versions {
		if k == v {
			return true
		}
	}
	return false
}

func describe(o *unstructured.Unstructured) string {
	name := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s (%s)", o.GetKind(), name, o.GetAPIVersion())
}

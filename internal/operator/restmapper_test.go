package operator

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper maps the kinds it holds and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	kinds map[schema.GroupKind]meta.RESTMapping
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	m, ok := c.kinds[gk]
	if !ok {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return &m, nil
}

func TestFoundMappingsAreRemembered(t *testing.T) {
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	fc := schema.GroupKind{Group: "data.example.com", Kind: "FlinkCluster"}
	inner := &countingMapper{kinds: map[schema.GroupKind]meta.RESTMapping{sts: {
		Resource:         schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		GroupVersionKind: sts.WithVersion("v1"),
		Scope:            meta.RESTScopeNamespace,
	}}}
	m := &foundMappings{RESTMapper: inner}

	for range 3 {
		got, err := m.RESTMapping(sts, "v1")
		if err != nil || got.Resource.Resource != "statefulsets" || got.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("RESTMapping(%s) = %+v, %v", sts, got, err)
		}
		// A caller that changes its answer changes no one else's.
		got.Resource.Resource = "changed"
	}
	if inner.asked != 1 {
		t.Errorf("the mapper was asked %d times for one mapping, want 1", inner.asked)
	}
	if _, err := m.RESTMapping(sts, "v1beta2"); err != nil || inner.asked != 2 {
		t.Errorf("another version: %v, asked %d times, want 2 (versions are part of the question)", err, inner.asked)
	}

	// A kind not found yet (its CRD not installed) is asked again, and
	// remembered once found.
	if _, err := m.RESTMapping(fc, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("unknown kind: %v, want no match", err)
	}
	inner.kinds[fc] = meta.RESTMapping{GroupVersionKind: fc.WithVersion("v1"), Scope: meta.RESTScopeNamespace}
	for range 2 {
		if _, err := m.RESTMapping(fc, "v1"); err != nil {
			t.Fatalf("kind installed since: %v", err)
		}
	}
	if inner.asked != 4 {
		t.Errorf("asked %d times, want 4 (the miss, then one find)", inner.asked)
	}
}

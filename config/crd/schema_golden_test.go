package crd

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/schemas/ from the generated CRD")

// TestServedSchemasGolden compares each served version's schema, printer
// columns and subresources with testdata/schemas/<version>.yaml, so any
// change to a served API shows in review as a diff of its own. v1alpha1 is
// frozen: its fields never change; its golden changed once since, for the
// rule refusing the keys that decide what a job restores from (a v1alpha1
// client could otherwise hand Flink a CLAIM and lose a recorded savepoint;
// validation runs against the version a request is made in, before the
// conversion to v1). After an intended change to v1,
// run `go test ./config/crd -run TestServedSchemasGolden -update` and commit.
func TestServedSchemasGolden(t *testing.T) {
	raw, err := Bases.ReadFile("bases/data.example.com_flinkclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		seen[v.Name+".yaml"] = true
		got, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "schemas", v.Name+".yaml")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("served version %s has no golden schema (%v): run go test ./config/crd -run TestServedSchemasGolden -update", v.Name, err)
		}
		if string(want) != string(got) {
			t.Errorf("the served schema of %s differs from %s. v1alpha1 is frozen; for an intended change to another version run go test ./config/crd -run TestServedSchemasGolden -update and review the diff", v.Name, path)
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "schemas", "*.yaml"))
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s is the golden of a version the CRD no longer serves", f)
		}
	}
}

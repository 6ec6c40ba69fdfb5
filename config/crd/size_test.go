package crd

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The API server stores a CRD in etcd, whose requests are limited to
// 1.5 MiB; the pod templates' embedded Kubernetes types are most of this
// CRD. hack/crdtrim drops their descriptions (make generate runs it):
// without it the CRD is over 2 MB and cannot be created.
const maxCRDJSON = 512 << 10

func TestFlinkClusterCRDFitsTheAPIServer(t *testing.T) {
	raw, err := Bases.ReadFile("bases/data.example.com_flinkclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(&crd)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) > maxCRDJSON {
		t.Errorf("the FlinkCluster CRD is %d bytes of JSON, over the %d budget: run go run ./hack/crdtrim (make generate does)", len(js), maxCRDJSON)
	}
	for _, v := range crd.Spec.Versions {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		for _, component := range []string{"jobManager", "taskManager"} {
			tmpl, ok := spec.Properties[component].Properties["podTemplate"]
			if !ok {
				t.Fatalf("%s: spec.%s.podTemplate is missing", v.Name, component)
			}
			if tmpl.Description == "" {
				t.Errorf("%s: spec.%s.podTemplate lost its own description", v.Name, component)
			}
			for field, s := range tmpl.Properties["spec"].Properties {
				if s.Description == "" {
					t.Errorf("%s: spec.%s.podTemplate.spec.%s lost its own description", v.Name, component, field)
				}
				if n := descriptionsBelow(s); n > 0 {
					t.Errorf("%s: spec.%s.podTemplate.spec.%s still has %d embedded descriptions: run go run ./hack/crdtrim", v.Name, component, field, n)
				}
			}
		}
	}
	if !strings.HasPrefix(string(raw), "---\n") {
		t.Error("the CRD file lost controller-gen's layout")
	}
}

func descriptionsBelow(s apiextensionsv1.JSONSchemaProps) int {
	n := 0
	count := func(c apiextensionsv1.JSONSchemaProps) {
		if c.Description != "" {
			n++
		}
		n += descriptionsBelow(c)
	}
	if s.Items != nil && s.Items.Schema != nil {
		count(*s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		count(*s.AdditionalProperties.Schema)
	}
	for _, p := range s.Properties {
		count(p)
	}
	return n
}

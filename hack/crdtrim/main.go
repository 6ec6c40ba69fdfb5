// Command crdtrim drops, from CRDs that controller-gen wrote, the
// descriptions that controller-gen copies from the Kubernetes API types a
// pod template embeds (containers, volumes, affinity, ...): with them the
// FlinkCluster CRD is over 2 MB, beyond what the API server stores, and
// they repeat what `kubectl explain pod.spec` says. Every field Datapilot
// declares keeps its description, down to each field of a podTemplate's
// spec; only the schemas under those fields lose theirs.
//
//	go run ./hack/crdtrim config/crd/bases/data.example.com_flinkclusters.yaml
//
// The file is rewritten in place in controller-gen's own layout; running it
// twice changes nothing. `make generate` runs it after controller-gen.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Field is the name of the properties whose spec's fields embed
// Kubernetes types.
const Field = "podTemplate"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := trimFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdtrim: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trimFile(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := Trim(raw)
	if err != nil {
		return err
	}
	if bytes.Equal(out, raw) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

// Trim returns the CRD with the embedded types' descriptions dropped, in
// the layout controller-gen writes (a leading document marker, keys sorted,
// no status).
func Trim(raw []byte) ([]byte, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		return nil, err
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			walk(s.OpenAPIV3Schema)
		}
	}
	// Through a map, so that the status controller-gen leaves out stays out.
	js, err := json.Marshal(&crd)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// walk finds every podTemplate property and strips the descriptions below
// each field of its spec.
func walk(s *apiextensionsv1.JSONSchemaProps) {
	for name, p := range s.Properties {
		if name == Field {
			if spec, ok := p.Properties["spec"]; ok {
				for f, fs := range spec.Properties {
					stripBelow(&fs)
					spec.Properties[f] = fs
				}
				p.Properties["spec"] = spec
			}
		} else {
			walk(&p)
		}
		s.Properties[name] = p
	}
}

// stripBelow removes the descriptions of every schema under s, keeping s's.
func stripBelow(s *apiextensionsv1.JSONSchemaProps) {
	if s.Items != nil && s.Items.Schema != nil {
		strip(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		strip(s.AdditionalProperties.Schema)
	}
	for name, p := range s.Properties {
		strip(&p)
		s.Properties[name] = p
	}
}

func strip(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	stripBelow(s)
}

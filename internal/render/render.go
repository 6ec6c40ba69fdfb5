// Package render prints, without a cluster, the objects the operator would
// create for a FlinkCluster: the API server's defaults from the CRD schema
// applied first, then the same builders the controller applies
// (internal/resources), the rendered Flink configuration included.
package render

import (
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/config/crd"
	"github.com/datapilot/datapilot/internal/resources"
)

// Renderer holds the CRD's v1 schema, for defaulting.
type Renderer struct {
	schema *apiextensionsv1.JSONSchemaProps
}

// New reads the embedded CRD (what make generate produced) for its v1 schema.
func New() (*Renderer, error) {
	raw, err := crd.Bases.ReadFile("bases/data.example.com_flinkclusters.yaml")
	if err != nil {
		return nil, err
	}
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("reading the FlinkCluster CRD: %w", err)
	}
	for _, v := range c.Spec.Versions {
		if v.Name != v1.GroupVersion.Version || v.Schema == nil {
			continue
		}
		return &Renderer{schema: v.Schema.OpenAPIV3Schema}, nil
	}
	return nil, fmt.Errorf("the FlinkCluster CRD has no %s schema", v1.GroupVersion.Version)
}

// FlinkCluster decodes a data.example.com/v1 FlinkCluster as the API server
// would store it: defaults from the schema applied, unknown fields refused,
// the namespace set to namespace when the object names none.
func (r *Renderer) FlinkCluster(u *unstructured.Unstructured, namespace string) (*v1.FlinkCluster, error) {
	if u.GroupVersionKind() != v1.GroupVersion.WithKind("FlinkCluster") {
		return nil, fmt.Errorf("%s %s: not a %s FlinkCluster", u.GetAPIVersion(), u.GetKind(), v1.GroupVersion)
	}
	obj := u.DeepCopy().Object
	if err := applyDefaults(obj, r.schema); err != nil {
		return nil, fmt.Errorf("FlinkCluster %s: %w", u.GetName(), err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	fc := &v1.FlinkCluster{}
	if err := dec.Decode(fc); err != nil {
		return nil, fmt.Errorf("FlinkCluster %s: %w", u.GetName(), err)
	}
	if fc.Name == "" {
		return nil, fmt.Errorf("a FlinkCluster has no metadata.name")
	}
	if fc.Namespace == "" {
		fc.Namespace = namespace
	}
	return fc, nil
}

// Objects are the children the operator applies for fc on platform p, in
// the order it applies them, as plain objects.
func Objects(fc *v1.FlinkCluster, p resources.Platform) ([]map[string]any, error) {
	d, err := resources.Build(fc, p)
	if err != nil {
		return nil, fmt.Errorf("FlinkCluster %s/%s: %w", fc.Namespace, fc.Name, err)
	}
	children := []any{d.ConfigMap, d.JobManagerService, d.JobManager, d.TaskManager, d.TaskManagerBudget}
	if a := d.HAAccess; a != nil {
		children = append([]any{a.ServiceAccount, a.RoleBinding}, children...)
	}
	out := make([]map[string]any, 0, len(children))
	for _, c := range children {
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// applyDefaults sets every schema default the object lacks, as the API
// server does on create: an absent property with a default takes it, then
// each present object property, map value and list item is defaulted in
// turn (so a defaulted {} gets its own properties' defaults). It is the
// documented behaviour of structural schema defaulting, written here over
// the v1 schema type so the production binary does not link the API
// server's CEL machinery.
func applyDefaults(x any, s *apiextensionsv1.JSONSchemaProps) error {
	if s == nil {
		return nil
	}
	switch x := x.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, ok := x[name]; !ok && prop.Default != nil {
				var v any
				if err := json.Unmarshal(prop.Default.Raw, &v); err != nil {
					return fmt.Errorf("default of %s: %w", name, err)
				}
				x[name] = v
			}
		}
		for name, v := range x {
			if prop, ok := s.Properties[name]; ok {
				if err := applyDefaults(v, &prop); err != nil {
					return err
				}
			} else if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
				if err := applyDefaults(v, ap.Schema); err != nil {
					return err
				}
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, v := range x {
				if err := applyDefaults(v, s.Items.Schema); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

package render

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestApplyDefaults follows structural defaulting: an absent property takes
// its default, a defaulted object gets its own properties' defaults, map
// values and list items are defaulted, a present value is left alone.
func TestApplyDefaults(t *testing.T) {
	def := func(v string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(v)} }
	tier := apiextensionsv1.JSONSchemaProps{Type: "object", Default: def(`{}`), Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer", Default: def(`1`)},
		"spread":   {Type: "string", Default: def(`"preferred"`)},
	}}
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"jobManager": tier,
		"job":        {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"state": {Type: "string", Default: def(`"running"`)}}},
		"pools":      {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &tier}},
		"byName":     {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &tier}},
	}}
	for _, tc := range []struct{ name, in, want string }{
		{"absent object takes {} and its defaults; one without a default stays absent", `{}`, `{"jobManager":{"replicas":1,"spread":"preferred"}}`},
		{"present values stay", `{"jobManager":{"replicas":3}}`, `{"jobManager":{"replicas":3,"spread":"preferred"}}`},
		{"present optional object is defaulted", `{"job":{}}`, `{"job":{"state":"running"},"jobManager":{"replicas":1,"spread":"preferred"}}`},
		{"list items", `{"pools":[{},{"replicas":2}]}`, `{"jobManager":{"replicas":1,"spread":"preferred"},"pools":[{"replicas":1,"spread":"preferred"},{"replicas":2,"spread":"preferred"}]}`},
		{"map values", `{"byName":{"a":{"spread":"none"}}}`, `{"byName":{"a":{"replicas":1,"spread":"none"}},"jobManager":{"replicas":1,"spread":"preferred"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := json.Unmarshal([]byte(tc.in), &obj); err != nil {
				t.Fatal(err)
			}
			if err := applyDefaults(obj, schema); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(obj)
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

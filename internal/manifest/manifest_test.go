package manifest

import (
	"bytes"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // kind/name of each object, in order
		err      string
	}{
		{name: "one object", in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", want: []string{"ConfigMap/a"}},
		{name: "documents, empty ones skipped", in: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# only a comment\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n", want: []string{"ConfigMap/a", "Secret/b"}},
		{name: "a List's items", in: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: data.example.com/v1alpha1, kind: FlinkCluster, metadata: {name: b}}\n", want: []string{"ConfigMap/a", "FlinkCluster/b"}},
		{name: "a typed list", in: "apiVersion: data.example.com/v1\nkind: FlinkClusterList\nitems:\n- {apiVersion: data.example.com/v1, kind: FlinkCluster, metadata: {name: a}}\n", want: []string{"FlinkCluster/a"}},
		{name: "JSON", in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, want: []string{"ConfigMap/a"}},
		{name: "no kind", in: "apiVersion: v1\nmetadata: {name: a}\n", err: "document 1: apiVersion and kind are required"},
		{name: "list item without kind", in: "apiVersion: v1\nkind: List\nitems:\n- {metadata: {name: a}}\n", err: "a list item has no apiVersion or kind"},
		{name: "not YAML", in: "apiVersion: v1\nkind: [\n", err: "document 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Read(strings.NewReader(tc.in), "in.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "in.yaml") {
					t.Fatalf("err = %v, want one naming in.yaml and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWriteReadsBack(t *testing.T) {
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "b"}},
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"yaml": func(b *bytes.Buffer) error { return Write(b, objs) },
		"json": func(b *bytes.Buffer) error { return WriteJSON(b, objs) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&b, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != 2 || back[0].GetName() != "a" || back[1].GetKind() != "Secret" {
			t.Errorf("%s: read back %v", name, back)
		}
	}
}

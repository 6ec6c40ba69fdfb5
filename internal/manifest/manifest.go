// Package manifest reads and writes Kubernetes manifests offline: files of
// one or more YAML (or JSON) documents, each an object or a List. It backs
// `datapilot convert` and `datapilot render`, which run without a cluster.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Read splits r into objects: each document of a multi-document stream, and
// each item of a List (kind List or any *List with items), in order. Empty
// documents are skipped; name says where an error was in the message.
func Read(r io.Reader, name string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion and kind are required", name, doc)
		}
		if !u.IsList() {
			out = append(out, u)
			continue
		}
		err := u.EachListItem(func(o runtime.Object) error {
			item := o.(*unstructured.Unstructured)
			if item.GetAPIVersion() == "" || item.GetKind() == "" {
				return fmt.Errorf("%s: document %d: a list item has no apiVersion or kind", name, doc)
			}
			out = append(out, item)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
}

// Write prints objs as one multi-document YAML stream.
func Write(w io.Writer, objs []map[string]any) error {
	var b bytes.Buffer
	for i, o := range objs {
		raw, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(raw)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteJSON prints objs as one v1 List in JSON, for tools that read one
// document.
func WriteJSON(w io.Writer, objs []map[string]any) error {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// Files is path itself, or for a directory its .yaml, .yml and .json files
// (not recursing), in name order.
func Files(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				out = append(out, filepath.Join(path, e.Name()))
			}
		}
	}
	return out, nil
}

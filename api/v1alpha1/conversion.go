package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// v1alpha1 is a frozen spoke of the v1 hub. The shapes differed in one
// place when it was frozen:
//
//	v1alpha1  spec.kafka.bootstrapServers: "a:9092,b:9092"
//	v1        spec.kafka.bootstrap.servers: "a:9092,b:9092"
//
// Everything else has the same JSON in both, so the conversion goes through
// JSON rather than field by field: a field v1 gains later needs no code here.
// What v1alpha1 cannot express (such a field, in spec or status) is kept on
// the v1alpha1 object in the FieldsAnnotation and put back by ConvertTo, so
// a round trip in either order gives back the object it started from.

// FieldsAnnotation holds, as JSON, the parts of the v1 object that
// v1alpha1 cannot express: {"fields": {...}, "replaced": {...}}. fields is
// a tree of v1 values (under "spec" and "status"); replaced holds, for a
// value v1alpha1 has but cannot hold exactly (a list whose items gained a
// field), what v1alpha1 had, so that ConvertTo restores the v1 value only
// while the v1alpha1 one is unchanged, and an edit made through v1alpha1
// wins. It exists only on v1alpha1 objects; v1 never carries it.
const FieldsAnnotation = "data.example.com/v1-fields"

var _ conversion.Convertible = &FlinkCluster{}

// carried is the content of FieldsAnnotation.
type carried struct {
	Fields   map[string]any `json:"fields"`
	Replaced map[string]any `json:"replaced,omitempty"`
}

// ConvertTo converts this v1alpha1 FlinkCluster to the v1 hub.
func (src *FlinkCluster) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*v1.FlinkCluster)
	if !ok {
		return fmt.Errorf("converting FlinkCluster v1alpha1 to %T: want *v1.FlinkCluster", dstRaw)
	}
	meta := src.ObjectMeta.DeepCopy()
	kept, hasKept := meta.Annotations[FieldsAnnotation]
	if hasKept {
		delete(meta.Annotations, FieldsAnnotation)
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
	}
	body, err := toMap(struct {
		Spec   FlinkClusterSpec   `json:"spec"`
		Status FlinkClusterStatus `json:"status"`
	}{src.Spec, src.Status})
	if err != nil {
		return err
	}
	// v1alpha1's schema is frozen, without v1's patterns on the strings
	// that reach a rendered file: the conversion refuses a control
	// character in them (a line break would inject keys into
	// flink-conf.yaml), naming the v1alpha1 field.
	if spec, ok := body["spec"].(map[string]any); ok {
		if err := refuseControl(renderedStrings(spec), "spec"); err != nil {
			return fmt.Errorf("converting FlinkCluster %s/%s to v1: %w", src.Namespace, src.Name, err)
		}
	}
	renameKafka(body, []string{"bootstrapServers"}, []string{"bootstrap", "servers"})
	var c carried
	if hasKept {
		if err := decode([]byte(kept), &c, false); err != nil {
			return fmt.Errorf("annotation %s: %w", FieldsAnnotation, err)
		}
		// The annotation is not checked by the v1 schema: a string with a
		// control character restored from it could reach a rendered file.
		if err := refuseControl(c.Fields["spec"], "spec"); err != nil {
			return fmt.Errorf("annotation %s: %w", FieldsAnnotation, err)
		}
		restore(body, c.Fields, c.Replaced)
	}
	var out struct {
		Spec   v1.FlinkClusterSpec   `json:"spec"`
		Status v1.FlinkClusterStatus `json:"status"`
	}
	if err := fromMap(body, &out, true); err != nil {
		return fmt.Errorf("converting FlinkCluster %s/%s to v1: %w", src.Namespace, src.Name, err)
	}
	if _, restored := c.Fields["status"]; !restored {
		// Status needs no renaming: straight from JSON to JSON keeps the
		// raw specs it holds (deployedSpec, lastStableSpec) byte for byte.
		if err := convertJSON(src.Status, &out.Status, true); err != nil {
			return fmt.Errorf("converting FlinkCluster %s/%s status to v1: %w", src.Namespace, src.Name, err)
		}
	}
	dst.ObjectMeta = *meta
	dst.Spec, dst.Status = out.Spec, out.Status
	return nil
}

// ConvertFrom converts the v1 hub to this v1alpha1 FlinkCluster.
func (dst *FlinkCluster) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*v1.FlinkCluster)
	if !ok {
		return fmt.Errorf("converting %T to FlinkCluster v1alpha1: want *v1.FlinkCluster", srcRaw)
	}
	type hubBody struct {
		Spec   v1.FlinkClusterSpec   `json:"spec"`
		Status v1.FlinkClusterStatus `json:"status"`
	}
	hub, err := toMap(hubBody{src.Spec, src.Status})
	if err != nil {
		return err
	}
	// One decode normalises what JSON cannot tell apart (a set pointer to
	// nothing is null, and null is no pointer), so only real loss counts.
	var norm hubBody
	if err := fromMap(hub, &norm, true); err != nil {
		return err
	}
	if hub, err = toMap(norm); err != nil {
		return err
	}
	down, err := toMap(hub)
	if err != nil {
		return err
	}
	renameKafka(down, []string{"bootstrap", "servers"}, []string{"bootstrapServers"})
	// Unknown fields are what v1alpha1 cannot express: dropped here, kept
	// in the annotation below.
	var out struct {
		Spec   FlinkClusterSpec   `json:"spec"`
		Status FlinkClusterStatus `json:"status"`
	}
	if err := fromMap(down, &out, false); err != nil {
		return fmt.Errorf("converting FlinkCluster %s/%s to v1alpha1: %w", src.Namespace, src.Name, err)
	}
	var status FlinkClusterStatus
	if err := convertJSON(src.Status, &status, false); err != nil {
		return fmt.Errorf("converting FlinkCluster %s/%s status to v1alpha1: %w", src.Namespace, src.Name, err)
	}
	// What comes back up from v1alpha1, compared with the hub, is the loss.
	back, err := toMap(out)
	if err != nil {
		return err
	}
	renameKafka(back, []string{"bootstrapServers"}, []string{"bootstrap", "servers"})
	c := carried{Fields: map[string]any{}, Replaced: map[string]any{}}
	lost(hub, back, c.Fields, c.Replaced)

	meta := src.ObjectMeta.DeepCopy()
	if meta.Annotations != nil {
		delete(meta.Annotations, FieldsAnnotation)
	}
	if len(c.Fields) > 0 {
		if len(c.Replaced) == 0 {
			c.Replaced = nil
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[FieldsAnnotation] = string(raw)
	}
	dst.ObjectMeta = *meta
	dst.Spec, dst.Status = out.Spec, status
	return nil
}

// lost records in fields every value of hub that back lacks or holds
// differently, at its path; for a value back holds differently, replaced
// gets back's value at the same path.
func lost(hub, back, fields, replaced map[string]any) {
	for k, hv := range hub {
		bv, ok := back[k]
		if !ok {
			fields[k] = hv
			continue
		}
		hm, hIsMap := hv.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if hIsMap && bIsMap {
			f, r := map[string]any{}, map[string]any{}
			lost(hm, bm, f, r)
			if len(f) > 0 {
				fields[k] = f
			}
			if len(r) > 0 {
				replaced[k] = r
			}
			continue
		}
		if !reflect.DeepEqual(hv, bv) {
			fields[k] = hv
			replaced[k] = bv
		}
	}
}

// restore puts the carried fields back into body: a path body lacks takes
// the kept value; a replaced value takes it only if body still holds what
// v1alpha1 had when the annotation was written.
func restore(body, fields, replaced map[string]any) {
	for k, fv := range fields {
		bv, ok := body[k]
		if !ok {
			body[k] = fv
			continue
		}
		fm, fIsMap := fv.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if fIsMap && bIsMap {
			rm, _ := replaced[k].(map[string]any)
			restore(bm, fm, rm)
			continue
		}
		if rv, ok := replaced[k]; ok && reflect.DeepEqual(rv, bv) {
			body[k] = fv
		}
	}
}

// renderedStrings is spec without what never reaches a rendered file and
// may hold control characters: the pod templates (Kubernetes validates
// them as pods) and the program arguments (sent to Flink as JSON).
func renderedStrings(spec map[string]any) map[string]any {
	out := make(map[string]any, len(spec))
	for k, v := range spec {
		out[k] = v
	}
	for _, tier := range []string{"jobManager", "taskManager"} {
		if m, ok := spec[tier].(map[string]any); ok {
			c := make(map[string]any, len(m))
			for k, v := range m {
				if k != "podTemplate" {
					c[k] = v
				}
			}
			out[tier] = c
		}
	}
	if job, ok := spec["job"].(map[string]any); ok {
		c := make(map[string]any, len(job))
		for k, v := range job {
			if k != "args" {
				c[k] = v
			}
		}
		out["job"] = c
	}
	return out
}

// refuseControl finds a string with a control character (U+0000 to U+001F,
// U+007F) in v, a decoded JSON value, and names its path.
func refuseControl(v any, path string) error {
	switch v := v.(type) {
	case string:
		if i := strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
			return fmt.Errorf("%s must not contain a control character (%q at byte %d)", path, v[i], i)
		}
	case map[string]any:
		for k, item := range v {
			if err := refuseControl(k, path+" key"); err != nil {
				return err
			}
			if err := refuseControl(item, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := refuseControl(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// renameKafka moves spec.kafka's value at path from to path to, the one
// difference between the shapes.
func renameKafka(body map[string]any, from, to []string) {
	spec, _ := body["spec"].(map[string]any)
	kafka, _ := spec["kafka"].(map[string]any)
	if kafka == nil {
		return
	}
	parent, leaf := kafka, from[len(from)-1]
	for _, p := range from[:len(from)-1] {
		if parent, _ = parent[p].(map[string]any); parent == nil {
			return
		}
	}
	v, ok := parent[leaf]
	if !ok {
		return
	}
	delete(parent, leaf)
	if len(from) > 1 && len(parent) == 0 {
		delete(kafka, from[0])
	}
	target := kafka
	for _, p := range to[:len(to)-1] {
		next, _ := target[p].(map[string]any)
		if next == nil {
			next = map[string]any{}
			target[p] = next
		}
		target = next
	}
	target[to[len(to)-1]] = v
}

// toMap turns v into its JSON object, numbers kept exact.
func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, decode(raw, &m, false)
}

func fromMap(m map[string]any, v any, strict bool) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return decode(raw, v, strict)
}

// convertJSON decodes from's JSON into to.
func convertJSON(from, to any, strict bool) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return decode(raw, to, strict)
}

func decode(raw []byte, v any, strict bool) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if strict {
		d.DisallowUnknownFields()
	}
	return d.Decode(v)
}

// Package flinkschema checks HTTP traffic against the official Flink REST
// OpenAPI description of each supported Flink minor, embedded from
// <minor>/rest_v1_dispatcher.yml. The client tests, the simulator tests and
// the simulator itself use it, so all agree with Flink, not just with each
// other.
package flinkschema

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

//go:embed */rest_v1_dispatcher.yml
var files embed.FS

// dirs maps each Flink minor to the directory holding its schema; minors
// that ship the same bytes share one (README.md).
var dirs = map[string]string{
	"1.17": "1.17", "1.18": "1.18", "1.19": "1.19", "1.20": "1.20",
	"2.0": "2.0", "2.1": "2.1", "2.2": "2.1",
}

// Minors are the Flink minors whose schema is embedded, oldest first.
var Minors = []string{"1.17", "1.18", "1.19", "1.20", "2.0", "2.1", "2.2"}

// Schema is the loaded and validated description of one Flink minor.
type Schema struct {
	// Minor is the Flink minor it describes, such as "1.20".
	Minor string
	Doc   *openapi3.T
	// prefix is the version segment a request path may start with: /v1
	// for the JobManager's API, /v<N> for a SQL Gateway API version.
	prefix string
}

var (
	mu     sync.Mutex
	loaded = map[string]*Schema{}
)

// ForMinor parses the embedded description of a Flink minor such as
// "1.20", once.
func ForMinor(minor string) (*Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s := loaded[minor]; s != nil {
		return s, nil
	}
	dir, ok := dirs[minor]
	if !ok {
		return nil, fmt.Errorf("no Flink REST schema for Flink %s (have %s)", minor, strings.Join(Minors, ", "))
	}
	raw, err := files.ReadFile(dir + "/rest_v1_dispatcher.yml")
	if err != nil {
		return nil, err
	}
	doc, err := loadDoc(raw)
	if err != nil {
		return nil, fmt.Errorf("loading the Flink %s REST schema: %w", minor, err)
	}
	s := &Schema{Minor: minor, Doc: doc, prefix: "/v1"}
	loaded[minor] = s
	return s, nil
}

// loadDoc parses and validates an OpenAPI document.
func loadDoc(raw []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validating: %w", err)
	}
	return doc, nil
}

// All loads the schema of every embedded minor, oldest first.
func All() ([]*Schema, error) {
	out := make([]*Schema, 0, len(Minors))
	for _, m := range Minors {
		s, err := ForMinor(m)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Operation finds the schema's operation for a concrete request path (with
// or without the /v1 prefix). It returns the path template, such as
// /jobs/{jobid}, and the path parameters.
func (s *Schema) Operation(method, urlPath string) (string, *openapi3.Operation, map[string]string, error) {
	p := strings.TrimPrefix(urlPath, s.prefix)
	segs := strings.Split(strings.Trim(p, "/"), "/")
	best, bestScore := "", -1
	var bestParams map[string]string
	for tmpl := range s.Doc.Paths.Map() {
		ts := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		score, params := 0, map[string]string{}
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
				params[t[1:len(t)-1]] = segs[i]
			case t == segs[i]:
				score++
			default:
				score = -1
			}
			if score < 0 {
				break
			}
		}
		// A literal segment beats a parameter: /jobs/overview is not /jobs/{jobid}.
		if score > bestScore {
			best, bestScore, bestParams = tmpl, score, params
		}
	}
	if best == "" {
		return "", nil, nil, fmt.Errorf("%s %s: no such path in the %s", method, urlPath, s.Doc.Info.Title)
	}
	op := s.Doc.Paths.Value(best).GetOperation(method)
	if op == nil {
		return best, nil, nil, fmt.Errorf("%s %s: the Flink REST schema has no %s on %s", method, urlPath, method, best)
	}
	return best, op, bestParams, nil
}

// ValidateRequest checks a request's path, method, query parameters and
// JSON body. The body of /jars/upload is skipped: the schema declares a raw
// application/x-java-archive body, but Flink (and its own docs, in the same
// operation's description) take a multipart form.
func (s *Schema) ValidateRequest(r *http.Request, body []byte) error {
	tmpl, op, params, err := s.Operation(r.Method, r.URL.Path)
	if err != nil {
		return err
	}
	r = r.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: params,
		Route: &routers.Route{
			Spec: s.Doc, Path: tmpl, PathItem: s.Doc.Paths.Value(tmpl),
			Method: r.Method, Operation: op,
		},
		Options: &openapi3filter.Options{
			ExcludeRequestBody: op.OperationID == "uploadJar",
			MultiError:         true,
		},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return fmt.Errorf("%s %s (%s): %w", r.Method, tmpl, op.OperationID, err)
	}
	return nil
}

// ValidateResponse checks that status is one the operation declares and
// that body matches its JSON schema.
func (s *Schema) ValidateResponse(method, urlPath string, status int, body []byte) error {
	tmpl, op, _, err := s.Operation(method, urlPath)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("%s %s (%s) HTTP %d", method, tmpl, op.OperationID, status)
	ref := op.Responses.Value(fmt.Sprint(status))
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("%s: status not declared by the schema", where)
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		if len(bytes.TrimSpace(body)) > 0 && !bytes.Equal(bytes.TrimSpace(body), []byte("{}")) {
			return fmt.Errorf("%s: schema declares no body, got %s", where, body)
		}
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s: body is not JSON: %w", where, err)
	}
	if err := s.visit(op.OperationID, mt.Schema, v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// ValidateValue checks a value (marshalled to JSON first) against the named
// component schema, such as SavepointTriggerRequestBody.
func (s *Schema) ValidateValue(component string, value any) error {
	ref := s.Doc.Components.Schemas[component]
	if ref == nil {
		return fmt.Errorf("no component schema %q", component)
	}
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("%s: %w", component, err)
	}
	return nil
}

// asyncOperationBranch picks the branch of AsynchronousOperationResult's
// operation oneOf per operation. The schema's three branches are open
// objects with only optional properties, so any body matches all three and
// a literal oneOf check can never pass; Flink means "the one that belongs
// to this endpoint".
var asyncOperationBranch = map[string]string{
	"getSavepointStatus":         "SavepointInfo",
	"getCheckpointStatus":        "CheckpointInfo",
	"getSavepointDisposalStatus": "AsynchronousOperationInfo",
}

// arrayBodies are response bodies whose Java class has a custom Jackson
// serializer that writes a bare JSON array, which the generated schema
// cannot show (it describes the class's fields): MetricCollectionResponseBody
// writes its metrics, each a Metric; AggregatedMetricsResponseBody its
// AggregatedMetrics, which the schema leaves out (an id and the numbers
// asked for).
var arrayBodies = map[string]string{
	"MetricCollectionResponseBody":  "Metric",
	"AggregatedMetricsResponseBody": "",
}

func (s *Schema) visitArray(item string, v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("a metrics body is a JSON array, got %T", v)
	}
	for i, e := range list {
		if item != "" {
			if err := s.Doc.Components.Schemas[item].Value.VisitJSON(e, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
				return fmt.Errorf("[%d] (%s): %w", i, item, err)
			}
			continue
		}
		obj, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("[%d]: an AggregatedMetric is an object", i)
		}
		if id, ok := obj["id"].(string); !ok || id == "" {
			return fmt.Errorf("[%d]: an AggregatedMetric has a string id", i)
		}
		for k, x := range obj {
			switch k {
			case "id":
			case "min", "max", "avg", "sum", "skew":
				if _, ok := x.(float64); !ok {
					return fmt.Errorf("[%d].%s is not a number", i, k)
				}
			default:
				return fmt.Errorf("[%d]: AggregatedMetric has no property %q", i, k)
			}
		}
	}
	return nil
}

func (s *Schema) visit(operationID string, ref *openapi3.SchemaRef, v any) error {
	if item, ok := arrayBodies[ref.Ref[strings.LastIndex(ref.Ref, "/")+1:]]; ok {
		return s.visitArray(item, v)
	}
	branch, ok := asyncOperationBranch[operationID]
	if !ok || !strings.HasSuffix(ref.Ref, "/AsynchronousOperationResult") {
		return ref.Value.VisitJSON(v, openapi3.VisitAsResponse(), openapi3.MultiErrors())
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("AsynchronousOperationResult is not an object")
	}
	st := s.Doc.Components.Schemas["QueueStatus"].Value
	if err := st.VisitJSON(obj["status"], openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if op, ok := obj["operation"]; ok {
		if err := s.Doc.Components.Schemas[branch].Value.VisitJSON(op, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
			return fmt.Errorf("operation (%s): %w", branch, err)
		}
	}
	for k := range obj {
		if k != "status" && k != "operation" {
			return fmt.Errorf("AsynchronousOperationResult has unknown property %q", k)
		}
	}
	return nil
}

// Properties lists the property names of a component schema, following
// allOf. The schema's objects are open, so a value check alone cannot catch
// a misspelt name; comparing names can.
func (s *Schema) Properties(component string) map[string]bool {
	out := map[string]bool{}
	var walk func(*openapi3.SchemaRef)
	walk = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil {
			return
		}
		for k := range r.Value.Properties {
			out[k] = true
		}
		for _, a := range r.Value.AllOf {
			walk(a)
		}
	}
	walk(s.Doc.Components.Schemas[component])
	return out
}

// Enums lists the properties of a component schema whose values are an
// enum (directly or through a $ref), with the names the enum accepts.
func (s *Schema) Enums(component string) map[string][]string {
	out := map[string][]string{}
	ref := s.Doc.Components.Schemas[component]
	if ref == nil || ref.Value == nil {
		return out
	}
	for k, p := range ref.Value.Properties {
		if p == nil || p.Value == nil || len(p.Value.Enum) == 0 {
			continue
		}
		for _, v := range p.Value.Enum {
			if name, ok := v.(string); ok {
				out[k] = append(out[k], name)
			}
		}
	}
	return out
}

// OpenMap reports whether a component schema is a map (an object of
// additionalProperties only), whose keys are data, not property names.
func (s *Schema) OpenMap(component string) bool {
	ref := s.Doc.Components.Schemas[component]
	return ref != nil && ref.Value != nil && len(ref.Value.Properties) == 0 &&
		ref.Value.AdditionalProperties.Schema != nil
}

// RequestBody is the component schema name of an operation's JSON request
// body, such as JarRunRequestBody, and its property names; "" when the
// operation takes none.
func (s *Schema) RequestBody(op *openapi3.Operation) (string, []string) {
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return "", nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Ref == "" {
		return "", nil
	}
	name := mt.Schema.Ref[strings.LastIndex(mt.Schema.Ref, "/")+1:]
	props := s.Properties(name)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return name, names
}

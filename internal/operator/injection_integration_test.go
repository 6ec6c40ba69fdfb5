package operator_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf"
	"github.com/datapilot/datapilot/internal/resources"
)

// injectionSpec is a spec in which every string field of the spec is set
// and reaches what it feeds (HA with ZooKeeper, explicit state directories,
// Kafka with both secrets, a job, the autopilot and healing).
func injectionSpec(version string, alpha bool) map[string]any {
	kafka := map[string]any{
		"bootstrap": map[string]any{"servers": "kafka:9092"},
		"tls":       map[string]any{"enabled": true, "secretRef": map[string]any{"name": "kafka-tls"}},
		"sasl":      map[string]any{"secretRef": map[string]any{"name": "kafka-sasl"}},
	}
	spec := map[string]any{
		"version":            version,
		"image":              "flink:" + version,
		"imagePullPolicy":    "IfNotPresent",
		"serviceAccountName": "flink",
		"jobManager":         map[string]any{"replicas": 1, "spread": "preferred"},
		"taskManager": map[string]any{"replicas": 1, "slots": 1, "spread": "preferred",
			"storage": map[string]any{"size": "1Gi", "storageClassName": "standard"}},
		"storage": map[string]any{"uri": "s3://state/flink"},
		"highAvailability": map[string]any{"mode": "zookeeper", "storageDir": "s3://state/ha",
			"zookeeper": map[string]any{"connectString": "zk-0:2181,zk-1:2181/flink"}},
		"checkpointing": map[string]any{"interval": "30s", "checkpointsDir": "s3://state/cp", "savepointsDir": "s3://state/sp"},
		"kafka":         kafka,
		"job": map[string]any{"jarURI": "https://artifacts/job.jar", "entryClass": "com.example.Job", "args": []any{"--topic", "orders"},
			"initialSavepointPath": "s3://state/sp/savepoint-1", "savepointInterval": "1h", "state": "running", "upgradeMode": "savepoint"},
		"upgradePolicy":      map[string]any{"stabilityTimeout": "5m", "savepointTimeout": "5m"},
		"flinkConfiguration": map[string]any{"pipeline.name": "orders"},
	}
	if alpha {
		delete(kafka, "bootstrap")
		kafka["bootstrapServers"] = "kafka:9092"
		return spec
	}
	spec["autoscaler"] = map[string]any{"mode": "recommend", "interval": "30s", "metricWindow": "5m", "stabilization": "1m",
		"scaleDownDelay": "10m", "catchUpDuration": "5m", "climbHorizon": "1h"}
	spec["healing"] = map[string]any{"backoff": "30s", "restartLoopWindow": "10m", "onRestartLoop": "report", "onStalledCheckpoints": "report"}
	return spec
}

// stringFields is every string of a FlinkCluster spec, by its path (a list
// item is [], a map key {key}, a map value {}), with how to put a value
// there. stringPaths holds the list to the types.
var stringFields = map[string]func(spec map[string]any, v string){
	"version":            func(s map[string]any, v string) { s["version"] = v },
	"image":              func(s map[string]any, v string) { s["image"] = v },
	"imagePullPolicy":    func(s map[string]any, v string) { s["imagePullPolicy"] = v },
	"serviceAccountName": func(s map[string]any, v string) { s["serviceAccountName"] = v },
	"jobManager.spread":  func(s map[string]any, v string) { at(s, "jobManager")["spread"] = v },
	"taskManager.spread": func(s map[string]any, v string) { at(s, "taskManager")["spread"] = v },
	"taskManager.storage.storageClassName": func(s map[string]any, v string) {
		at(s, "taskManager", "storage")["storageClassName"] = v
	},
	"storage.uri":       func(s map[string]any, v string) { at(s, "storage")["uri"] = v },
	"storage.claimName": func(s map[string]any, v string) { s["storage"] = map[string]any{"claimName": v} },
	"highAvailability.mode": func(s map[string]any, v string) {
		at(s, "highAvailability")["mode"] = v
	},
	"highAvailability.storageDir": func(s map[string]any, v string) { at(s, "highAvailability")["storageDir"] = v },
	"highAvailability.zookeeper.connectString": func(s map[string]any, v string) {
		at(s, "highAvailability", "zookeeper")["connectString"] = v
	},
	"checkpointing.interval":       func(s map[string]any, v string) { at(s, "checkpointing")["interval"] = v },
	"checkpointing.checkpointsDir": func(s map[string]any, v string) { at(s, "checkpointing")["checkpointsDir"] = v },
	"checkpointing.savepointsDir":  func(s map[string]any, v string) { at(s, "checkpointing")["savepointsDir"] = v },
	"kafka.bootstrap.servers":      func(s map[string]any, v string) { at(s, "kafka", "bootstrap")["servers"] = v },
	"kafka.bootstrapServers":       func(s map[string]any, v string) { at(s, "kafka")["bootstrapServers"] = v },
	"kafka.tls.secretRef.name":     func(s map[string]any, v string) { at(s, "kafka", "tls", "secretRef")["name"] = v },
	"kafka.sasl.secretRef.name":    func(s map[string]any, v string) { at(s, "kafka", "sasl", "secretRef")["name"] = v },
	"job.jarURI":                   func(s map[string]any, v string) { at(s, "job")["jarURI"] = v },
	"job.entryClass":               func(s map[string]any, v string) { at(s, "job")["entryClass"] = v },
	"job.args[]":                   func(s map[string]any, v string) { at(s, "job")["args"] = []any{"--topic", v} },
	"job.state":                    func(s map[string]any, v string) { at(s, "job")["state"] = v },
	"job.upgradeMode":              func(s map[string]any, v string) { at(s, "job")["upgradeMode"] = v },
	"job.initialSavepointPath":     func(s map[string]any, v string) { at(s, "job")["initialSavepointPath"] = v },
	"job.savepointInterval":        func(s map[string]any, v string) { at(s, "job")["savepointInterval"] = v },
	"job.sql.script":               func(s map[string]any, v string) { sqlJob(s, map[string]any{"script": v}) },
	"job.sql.configMapRef.name": func(s map[string]any, v string) {
		sqlJob(s, map[string]any{"configMapRef": map[string]any{"name": v, "key": "job.sql"}})
	},
	"job.sql.configMapRef.key": func(s map[string]any, v string) {
		sqlJob(s, map[string]any{"configMapRef": map[string]any{"name": "sql-scripts", "key": v}})
	},
	"job.sql.secretRefs[].placeholder": func(s map[string]any, v string) { sqlSecret(s, v, "kafka", "password") },
	"job.sql.secretRefs[].secretKeyRef.name": func(s map[string]any, v string) {
		sqlSecret(s, "KAFKA_PASSWORD", v, "password")
	},
	"job.sql.secretRefs[].secretKeyRef.key": func(s map[string]any, v string) { sqlSecret(s, "KAFKA_PASSWORD", "kafka", v) },
	"job.vertexParallelism[].id":            func(s map[string]any, v string) { vertex(s, v, "Source: orders") },
	"job.vertexParallelism[].name":          func(s map[string]any, v string) { vertex(s, vertexID, v) },
	"upgradePolicy.stabilityTimeout": func(s map[string]any, v string) {
		at(s, "upgradePolicy")["stabilityTimeout"] = v
	},
	"upgradePolicy.savepointTimeout": func(s map[string]any, v string) {
		at(s, "upgradePolicy")["savepointTimeout"] = v
	},
	"autoscaler.mode":            func(s map[string]any, v string) { at(s, "autoscaler")["mode"] = v },
	"autoscaler.interval":        func(s map[string]any, v string) { at(s, "autoscaler")["interval"] = v },
	"autoscaler.metricWindow":    func(s map[string]any, v string) { at(s, "autoscaler")["metricWindow"] = v },
	"autoscaler.stabilization":   func(s map[string]any, v string) { at(s, "autoscaler")["stabilization"] = v },
	"autoscaler.scaleDownDelay":  func(s map[string]any, v string) { at(s, "autoscaler")["scaleDownDelay"] = v },
	"autoscaler.catchUpDuration": func(s map[string]any, v string) { at(s, "autoscaler")["catchUpDuration"] = v },
	"autoscaler.climbHorizon":    func(s map[string]any, v string) { at(s, "autoscaler")["climbHorizon"] = v },
	"healing.backoff":            func(s map[string]any, v string) { at(s, "healing")["backoff"] = v },
	"healing.restartLoopWindow":  func(s map[string]any, v string) { at(s, "healing")["restartLoopWindow"] = v },
	"healing.onRestartLoop":      func(s map[string]any, v string) { at(s, "healing")["onRestartLoop"] = v },
	"healing.onStalledCheckpoints": func(s map[string]any, v string) {
		at(s, "healing")["onStalledCheckpoints"] = v
	},
	"flinkConfiguration{}": func(s map[string]any, v string) {
		s["flinkConfiguration"] = map[string]any{"pipeline.name": v}
	},
	"flinkConfiguration{key}": func(s map[string]any, v string) {
		s["flinkConfiguration"] = map[string]any{"pipeline.name" + v: "orders"}
	},
}

// sqlJob makes the spec's job a SQL job.
func sqlJob(s map[string]any, sql map[string]any) {
	j := at(s, "job")
	delete(j, "jarURI")
	delete(j, "entryClass")
	delete(j, "args")
	j["sql"] = sql
}

func sqlSecret(s map[string]any, placeholder, name, key string) {
	sqlJob(s, map[string]any{"script": sqlScript, "secretRefs": []any{map[string]any{
		"placeholder": placeholder, "secretKeyRef": map[string]any{"name": name, "key": key}}}})
}

const sqlScript = "INSERT INTO totals SELECT * FROM orders"

// vertexID is a vertex ID as Flink lists it.
const vertexID = "cbc357ccb763df2852fee8c4fc7d55f2"

func vertex(s map[string]any, id, name string) {
	at(s, "job")["vertexParallelism"] = []any{map[string]any{"id": id, "name": name, "parallelism": int64(2)}}
}

func at(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// injections are what a hostile spec puts after a valid value: a line that
// would set an operator-owned key in flink-conf.yaml, and other control
// characters.
var injections = []string{
	"\nrest.port: 1",
	"\rjobmanager.rpc.address: evil",
	"\r\nhigh-availability.cluster-id: other",
	"\tx",
	"\x00",
	"\x1b[0m",
	"\x7f",
}

// stringPaths walks a spec type by JSON name and lists its string fields.
// The pod templates are left out: they reach only the pods, whose fields
// the API server validates when the operator applies them, and no rendered
// file; so are quantities, which the operator parses before rendering.
func stringPaths(t reflect.Type, prefix string, out map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer:
		stringPaths(t.Elem(), prefix, out)
	case reflect.String:
		out[prefix] = true
	case reflect.Slice:
		stringPaths(t.Elem(), prefix+"[]", out)
	case reflect.Map:
		stringPaths(t.Key(), prefix+"{key}", out)
		stringPaths(t.Elem(), prefix+"{}", out)
	case reflect.Struct:
		if !strings.HasPrefix(t.PkgPath(), "github.com/datapilot/datapilot/api/") {
			return // Kubernetes types: resources, quantities
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "podTemplate" {
				continue
			}
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			stringPaths(f.Type, p, out)
		}
	}
}

// testNoFieldInjects (run by TestConversionWebhook) puts a line break (and other
// control characters) after a valid value in every string field of the
// spec, in v1 and in v1alpha1, for every supported minor: the real API
// server with the CRD (and the conversion webhook for v1alpha1) must
// refuse it naming the field, or, where it accepts it, the rendered
// configuration must read back, by Flink's rules, exactly the keys and
// values the operator rendered without it.
func testNoFieldInjects(t *testing.T, ce *conversionEnv) {
	ctx := context.Background()
	ns := ce.namespace(t, "injection")
	accepted := map[string]bool{}
	for _, api := range []struct {
		version string
		alpha   bool
		spec    reflect.Type
	}{
		{"v1", false, reflect.TypeFor[v1.FlinkClusterSpec]()},
		{"v1alpha1", true, reflect.TypeFor[v1alpha1.FlinkClusterSpec]()},
	} {
		paths := map[string]bool{}
		stringPaths(api.spec, "", paths)
		sorted := make([]string, 0, len(paths))
		for p := range paths {
			if stringFields[p] == nil {
				t.Errorf("%s: spec.%s is a string with no row in stringFields", api.version, p)
				continue
			}
			sorted = append(sorted, p)
		}
		sort.Strings(sorted)
		for _, m := range flink.SupportedMinors {
			release := fmt.Sprintf("%d.%d.1", m.Major, m.Minor)
			base := renderOf(t, ctx, ce.c, ns, api.version, injectionSpec(release, api.alpha))
			if base == nil {
				t.Fatalf("%s %s: the base spec was refused", api.version, release)
			}
			for _, p := range sorted {
				for _, inj := range injections {
					spec := injectionSpec(release, api.alpha)
					valid := validAt(t, spec, p)
					stringFields[p](spec, valid+inj)
					u := cluster(ns, api.version, spec)
					err := ce.c.Create(ctx, u, client.DryRunAll)
					if err != nil {
						if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !strings.Contains(err.Error(), "conversion") {
							t.Errorf("%s %s spec.%s %q: want a validation error, got %v", api.version, release, p, inj, err)
						} else if !strings.Contains(err.Error(), fieldName(p)) {
							t.Errorf("%s %s spec.%s %q: the refusal does not name the field: %v", api.version, release, p, inj, err)
						}
						continue
					}
					accepted[api.version+" spec."+p] = true
					checkRendering(t, u, api.alpha, base, fmt.Sprintf("%s %s spec.%s %q", api.version, release, p, inj))
				}
			}
		}
	}
	// Only the program arguments and a SQL script take control
	// characters: they go to Flink's REST API and the SQL Gateway as JSON,
	// never into a file.
	for field := range accepted {
		if !strings.HasSuffix(field, "spec.job.args[]") && !strings.HasSuffix(field, "spec.job.sql.script") {
			t.Errorf("%s: admission accepts control characters in a field that is not only sent as JSON", field)
		}
	}
}

// validAt is the valid value the spec holds at path.
func validAt(t *testing.T, spec map[string]any, path string) string {
	t.Helper()
	switch path {
	case "job.args[]":
		return "orders"
	case "flinkConfiguration{}":
		return "orders"
	case "flinkConfiguration{key}":
		return ""
	case "storage.claimName":
		return "state"
	case "job.sql.script":
		return sqlScript
	case "job.sql.configMapRef.name":
		return "sql-scripts"
	case "job.sql.configMapRef.key":
		return "job.sql"
	case "job.sql.secretRefs[].placeholder":
		return "KAFKA_PASSWORD"
	case "job.sql.secretRefs[].secretKeyRef.name":
		return "kafka"
	case "job.sql.secretRefs[].secretKeyRef.key":
		return "password"
	case "job.vertexParallelism[].id":
		return vertexID
	case "job.vertexParallelism[].name":
		return "Source: orders"
	}
	parts := strings.Split(path, ".")
	v, ok := at(spec, parts[:len(parts)-1]...)[parts[len(parts)-1]].(string)
	if !ok {
		t.Fatalf("the injection spec has no string at spec.%s", path)
	}
	return v
}

// fieldName is the field as the API server's message names it.
func fieldName(path string) string {
	path = strings.TrimSuffix(strings.TrimSuffix(path, "{}"), "{key}")
	return "spec." + strings.ReplaceAll(strings.TrimSuffix(path, "[]"), "[].", "[0].")
}

func cluster(ns, version string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "data.example.com/" + version, "kind": "FlinkCluster",
		"metadata": map[string]any{"namespace": ns, "name": "injection"},
		"spec":     spec,
	}}
}

// renderOf creates the spec by dry run and renders what the API server
// returned (defaulted, converted to v1), or returns nil when it is refused.
func renderOf(t *testing.T, ctx context.Context, c client.Client, ns, version string, spec map[string]any) map[string]string {
	t.Helper()
	u := cluster(ns, version, spec)
	if err := c.Create(ctx, u, client.DryRunAll); err != nil {
		t.Logf("refused: %v", err)
		return nil
	}
	cfg := render(t, u, version == "v1alpha1", "base")
	return cfg.Files()
}

func render(t *testing.T, u *unstructured.Unstructured, alpha bool, what string) resources.FlinkConfig {
	t.Helper()
	fc := &v1.FlinkCluster{}
	if alpha {
		a := &v1alpha1.FlinkCluster{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
			t.Fatal(err)
		}
		if err := a.ConvertTo(fc); err != nil {
			t.Fatal(err)
		}
	} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fc); err != nil {
		t.Fatal(err)
	}
	cfg, err := resources.RenderConfig(fc, resources.Platform{})
	if err != nil {
		t.Fatalf("%s: admitted, and the rendering refuses it: %v", what, err)
	}
	return cfg
}

// checkRendering reads the rendered files as Flink does: the
// configuration file must hold exactly the operator's keys, each reading
// back as the value the operator set, and log4j must be the base's.
func checkRendering(t *testing.T, u *unstructured.Unstructured, alpha bool, base map[string]string, what string) {
	t.Helper()
	cfg := render(t, u, alpha, what)
	files := cfg.Files()
	read, err := flinkconf.Parse(cfg.FileName, []byte(files[cfg.FileName]))
	if err != nil {
		t.Errorf("%s: the rendered %s does not parse: %v", what, cfg.FileName, err)
		return
	}
	for k, v := range read {
		if want, ok := cfg.Settings[k]; !ok || want != v {
			t.Errorf("%s: %s reads %s = %q; the operator set %q (set: %v)", what, cfg.FileName, k, v, want, ok)
		}
	}
	if len(read) != len(cfg.Settings) {
		t.Errorf("%s: %s reads %d keys, the operator set %d", what, cfg.FileName, len(read), len(cfg.Settings))
	}
	for name, content := range base {
		if name != cfg.FileName && files[name] != content {
			t.Errorf("%s: %s changed", what, name)
		}
	}
}

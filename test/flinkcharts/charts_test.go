// Package flinkcharts_test lints and renders the Flink environment charts
// (charts/flink-base, flink-taskmanager, flink-jobmanager) with every
// environment's values, compares the renderings with golden files, and
// checks the rules the charts are written by. internal/chartcheck holds the
// build checks (versions, dependencies, vendored copies); test/e2e installs
// the charts on the local platform.
package flinkcharts_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/chartcheck"
)

var update = flag.Bool("update", false, "rewrite golden files")

var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

func helm(t *testing.T) chartcheck.Helm {
	t.Helper()
	h := chartcheck.Helm{Bin: filepath.Join(root, "bin", "helm"), Home: t.TempDir()}
	if _, err := os.Stat(h.Bin); err != nil {
		t.Fatal("bin/helm is missing: run 'make tools'")
	}
	return h
}

func chart(name string) string { return filepath.Join(root, "charts", name) }

func envValues(env string) string {
	return filepath.Join(chart("flink-jobmanager"), "values-"+env+".yaml")
}

// taskManagerValues writes an environment's taskmanager section as values of
// the flink-taskmanager chart itself, as a team installing it alone would.
func taskManagerValues(t *testing.T, env string) string {
	t.Helper()
	raw, err := os.ReadFile(envValues(env))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(raw, &vals); err != nil {
		t.Fatal(err)
	}
	tm, err := yaml.Marshal(vals["taskmanager"])
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "taskmanager-"+env+".yaml")
	if err := os.WriteFile(p, tm, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLint: helm lint --strict of every chart, with its defaults and with
// every environment's values.
func TestLint(t *testing.T) {
	h := helm(t)
	for _, c := range chartcheck.Charts {
		sets := [][]string{nil}
		for _, env := range chartcheck.Environments {
			switch c {
			case "flink-taskmanager":
				sets = append(sets, []string{"--values", taskManagerValues(t, env)})
			default:
				sets = append(sets, []string{"--values", envValues(env)})
			}
		}
		for _, vals := range sets {
			if out, err := h.Run(append([]string{"lint", "--strict", chart(c)}, vals...)...); err != nil {
				t.Errorf("helm lint --strict %s %v: %v\n%s", c, vals, err, out)
			}
		}
	}
}

// renders are the goldens: each chart that renders (flink-base is a
// library, which helm does not install; it renders through the other two)
// with its defaults, each environment, the reference design's one-command
// install, and every optional object switched on.
func renders(t *testing.T) map[string][]string {
	r := map[string][]string{
		"flink-jobmanager-defaults": {"template", "flink", chart("flink-jobmanager"), "--namespace", "flink"},
		// The reference design's command (section 2.2), as written.
		"flink-jobmanager-design-command": {"template", "flink-prod", chart("flink-jobmanager"),
			"--set", "jobmanager.replicas=3", "--set", "taskmanager.replicas=12", "--set", "kafka.service.name=kafka-prod"},
		"flink-jobmanager-all-dependencies": {"template", "flink", chart("flink-jobmanager"), "--namespace", "flink",
			"--set", "kafka.enabled=true", "--set", "zookeeper.enabled=true", "--set", "highAvailability.mode=zookeeper",
			"--set", "kafka.sasl.enabled=true", "--set", "taskmanager.autoscaling.enabled=true"},
		"flink-taskmanager-defaults": {"template", "flink", chart("flink-taskmanager"), "--namespace", "flink"},
		"flink-taskmanager-all-objects": {"template", "flink", chart("flink-taskmanager"), "--namespace", "flink",
			"--set", "autoscaling.enabled=true", "--set", "networkPolicy.enabled=true"},
	}
	for _, env := range chartcheck.Environments {
		r["flink-jobmanager-"+env] = []string{"template", "flink-" + env, chart("flink-jobmanager"), "--namespace", "flink-" + env, "--values", envValues(env)}
		r["flink-taskmanager-"+env] = []string{"template", "flink-" + env, chart("flink-taskmanager"), "--namespace", "flink-" + env, "--values", taskManagerValues(t, env)}
	}
	return r
}

// TestGoldens compares each rendering with testdata/<name>.yaml
// (go test ./test/flinkcharts -update rewrites them), and decodes every
// FlinkCluster strictly into the API's Go type: a misspelt field fails here,
// before the API server refuses it.
func TestGoldens(t *testing.T) {
	h := helm(t)
	for name, args := range renders(t) {
		t.Run(name, func(t *testing.T) {
			out, err := h.Run(args...)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./test/flinkcharts -update)", err)
			}
			if !bytes.Equal(want, []byte(out)) {
				t.Errorf("helm %s differs from %s (go test ./test/flinkcharts -update rewrites it):\n%s", strings.Join(args, " "), golden, out)
			}
			clusters := 0
			for _, doc := range strings.Split(out, "\n---") {
				var meta struct{ Kind string }
				if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
					t.Fatal(err)
				}
				if meta.Kind != "FlinkCluster" {
					continue
				}
				clusters++
				var fc v1.FlinkCluster
				if err := yaml.UnmarshalStrict([]byte(doc), &fc); err != nil {
					t.Errorf("The rendered FlinkCluster does not decode strictly: %v\n%s", err, doc)
				}
			}
			if strings.HasPrefix(name, "flink-jobmanager") && clusters != 1 {
				t.Errorf("flink-jobmanager rendered %d FlinkClusters, want 1", clusters)
			}
		})
	}
}

// TestKafkaTLSSecretName: the FlinkCluster, the ExternalSecret and its
// target all name one Secret, the helper's, and helm's longest release name
// (53 characters) gives a name of exactly 63.
func TestKafkaTLSSecretName(t *testing.T) {
	h := helm(t)
	for _, tc := range []struct{ release, want string }{
		{"flink-prod", "flink-prod-kafka-tls"},
		{strings.Repeat("r", 53), strings.Repeat("r", 53) + "-kafka-tls"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			out, err := h.Run("template", tc.release, chart("flink-jobmanager"), "--values", envValues("prod"))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, doc := range strings.Split(out, "\n---") {
				var obj struct {
					Kind     string
					Metadata struct{ Name string }
					Spec     struct {
						Target struct{ Name string }
						Kafka  struct {
							TLS struct{ SecretRef struct{ Name string } }
						}
					}
				}
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatal(err)
				}
				switch obj.Kind {
				case "ExternalSecret":
					names = append(names, obj.Metadata.Name, obj.Spec.Target.Name)
				case "FlinkCluster":
					names = append(names, obj.Spec.Kafka.TLS.SecretRef.Name)
				}
			}
			want := []string{tc.want, tc.want, tc.want}
			if !slices.Equal(names, want) {
				t.Fatalf("The ExternalSecret, its target and the FlinkCluster's secretRef name %v, want %v", names, want)
			}
		})
	}
}

// TestSecretNameHelpers renders flink-base's secret-name helpers with
// release names helm itself would refuse (longer than 53 characters), through a
// chart of the test's own: the names are cut to 63 characters and never end
// in a dash.
func TestSecretNameHelpers(t *testing.T) {
	h := helm(t)
	dir := t.TempDir()
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: helpers\nversion: 0.0.1\ndependencies:\n- {name: flink-base, version: 1.17.1, repository: file://../flink-base}\n",
		"templates/names.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: names}
data:
{{- range $i, $r := list "flink-prod" (repeat 70 "r") (repeat 56 "r") }}
  tls{{ $i }}: {{ include "flink.kafka.tls.secretName" (dict "Release" (dict "Name" $r)) | quote }}
  sasl{{ $i }}: {{ include "flink.kafka.sasl.secretName" (dict "Release" (dict "Name" $r)) | quote }}
{{- end }}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, "helpers", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "helpers", "charts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", chart("flink-base"), filepath.Join(dir, "helpers", "charts", "flink-base")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	out, err := h.Run("template", "x", filepath.Join(dir, "helpers"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct{ Data map[string]string }
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatal(err)
	}
	r := strings.Repeat
	want := map[string]string{
		"tls0": "flink-prod-kafka-tls", "sasl0": "flink-prod-kafka-sasl",
		"tls1": r("r", 63), "sasl1": r("r", 63),
		// Cut at 63 ends in a dash, which goes.
		"tls2": r("r", 56) + "-kafka", "sasl2": r("r", 56) + "-kafka",
	}
	for k, w := range want {
		if cm.Data[k] != w {
			t.Errorf("%s = %q (%d characters), want %q", k, cm.Data[k], len(cm.Data[k]), w)
		}
	}
}

// assembling are the template functions that compute or build strings:
// allowed only inside named helpers (define blocks in _*.tpl), so a
// template reads as the object it renders, with if to switch features.
var assembling = map[string]bool{
	"printf": true, "print": true, "println": true, "cat": true, "add": true, "add1": true, "sub": true,
	"mul": true, "div": true, "mod": true, "max": true, "min": true, "trunc": true, "trimSuffix": true,
	"trimPrefix": true, "replace": true, "join": true, "upper": true, "lower": true, "substr": true,
	"sha256sum": true, "b64enc": true, "randAlphaNum": true, "until": true, "append": true,
}

var action = regexp.MustCompile(`(?s){{-?(.*?)-?}}`)
var word = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// ruleViolations lists the actions of a template (not a helper file) that
// compute or assemble strings.
func ruleViolations(src string) []string {
	var out []string
	for _, m := range action.FindAllStringSubmatch(src, -1) {
		body := m[1]
		if strings.HasPrefix(strings.TrimSpace(body), "/*") {
			continue
		}
		// Words after a dot are fields (.Values.replicas), not functions.
		for _, loc := range word.FindAllStringIndex(body, -1) {
			if loc[0] > 0 && (body[loc[0]-1] == '.' || body[loc[0]-1] == '$') {
				continue
			}
			if w := body[loc[0]:loc[1]]; assembling[w] {
				out = append(out, fmt.Sprintf("%s in {{%s}}", w, body))
			}
		}
	}
	return out
}

func TestRuleViolations(t *testing.T) {
	for src, bad := range map[string]bool{
		`replicas: {{ .Values.replicas }}`:                            false,
		`{{- if .Values.kafka.tls.enabled }}`:                         false,
		`name: {{ include "flink.kafka.tls.secretName" . }}`:          false,
		`{{- include "flink.selectorLabels" (list . "jobmanager") }}`: false,
		`{{ .Values.add }}`:                                           false,
		// The reference design's example of what not to do (section 2.2).
		`replicas: {{ add .Values.replicas 1 }}`:                        true,
		`servers: {{ printf "%s:%d" .Values.kafka.service.name 9092 }}`: true,
		`name: {{ .Release.Name | trunc 63 }}`:                          true,
	} {
		if got := len(ruleViolations(src)) > 0; got != bad {
			t.Errorf("ruleViolations(%q) = %v, want a violation: %v", src, ruleViolations(src), bad)
		}
	}
}

// TestTemplatesOnlySwitch applies the rule to every template of the Flink
// charts and of the vendored dependencies.
func TestTemplatesOnlySwitch(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "charts", "flink-*", "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	vendored, err := filepath.Glob(filepath.Join(root, "charts", "flink-jobmanager", "charts", "*", "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, vendored...)
	checked := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "_") {
			continue // named helpers
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, v := range ruleViolations(string(raw)) {
			t.Errorf("%s: %s: move it into a named helper", f, v)
		}
	}
	if checked < 8 {
		t.Fatalf("checked only %d templates", checked)
	}
}

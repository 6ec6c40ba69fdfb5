package chartcheck

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestParseDependencyList(t *testing.T) {
	// As helm 3 prints it: tab-separated, padded.
	out := "NAME     \tVERSION\tREPOSITORY               \tSTATUS  \n" +
		"zookeeper\t1.0.0  \tfile://./charts/zookeeper\tunpacked\n" +
		"kafka    \t2.8.0  \tfile://./charts/kafka    \twrong version\n\n"
	got, err := ParseDependencyList(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Dependency{
		{"zookeeper", "1.0.0", "file://./charts/zookeeper", "unpacked"},
		{"kafka", "2.8.0", "file://./charts/kafka", "wrong version"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := ParseDependencyList("CHART\tVER\n"); err == nil {
		t.Fatal("an unknown header parsed")
	}
}

func TestDependencies(t *testing.T) {
	pins := map[string]string{"flink-base": "", "kafka": "2.8.0"}
	ok := []Dependency{{"flink-base", "1.17.1", "", "unpacked"}, {"kafka", "2.8.0", "", "ok"}}
	for _, tc := range []struct {
		name string
		deps []Dependency
		want string // a substring of the error; empty for none
	}{
		{"pinned versions, present", ok, ""},
		{"Chart.yaml names another version", []Dependency{ok[0], {"kafka", "2.8.1", "", "unpacked"}}, "kafka 2.8.1, pinned 2.8.0"},
		{"charts/ holds another version", []Dependency{ok[0], {"kafka", "2.8.0", "", "wrong version"}}, `is "wrong version"`},
		{"charts/ lacks it", []Dependency{ok[0], {"kafka", "2.8.0", "", "missing"}}, `is "missing"`},
		{"a Flink chart off the Flink version", []Dependency{{"flink-base", "1.18.1", "", "unpacked"}, ok[1]}, "flink-base 1.18.1, pinned 1.17.1"},
		{"a pin dropped from Chart.yaml", ok[:1], "pinned dependency kafka is not in Chart.yaml"},
		{"an unpinned dependency", append(ok, Dependency{"redis", "1.0.0", "", "ok"}), "redis 1.0.0 is not pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Dependencies("flink-jobmanager", "1.17.1", tc.deps, pins)
			assertErrors(t, errs, tc.want)
		})
	}
}

func TestVersions(t *testing.T) {
	charts := []Metadata{{"flink-base", "1.17.1", "1.17.1"}, {"flink-jobmanager", "1.17.1", "1.17.1"}}
	render := func(version, image string) Rendered {
		return Rendered{Name: "defaults", Manifest: "---\nkind: ServiceAccount\nmetadata: {name: x}\n---\napiVersion: data.example.com/v1\nkind: FlinkCluster\nspec:\n  version: \"" + version + "\"\n  image: " + image + "\n"}
	}
	for _, tc := range []struct {
		name   string
		charts []Metadata
		render Rendered
		want   string
	}{
		{"one version everywhere", charts, render("1.17.1", "flink:1.17.1"), ""},
		{"an image variant of the version", charts, render("1.17.1", "registry.local:5000/flink:1.17.1-java11"), ""},
		{"appVersion off its version", []Metadata{charts[0], {"flink-jobmanager", "1.17.1", "1.18.1"}}, render("1.17.1", "flink:1.17.1"), "version 1.17.1 and appVersion 1.18.1 differ"},
		{"charts at different versions", []Metadata{charts[0], {"flink-jobmanager", "1.18.1", "1.18.1"}}, render("1.17.1", "flink:1.17.1"), "released together"},
		{"spec.version off", charts, render("1.18.1", "flink:1.17.1"), `spec.version is "1.18.1"`},
		{"image tag off", charts, render("1.17.1", "flink:1.18.1"), `tagged "1.18.1"`},
		{"a registry port is not a tag", charts, render("1.17.1", "registry.local:5000/flink"), `tagged ""`},
		{"no FlinkCluster", charts, Rendered{Name: "x", Manifest: "kind: ServiceAccount\n"}, "rendered 0 FlinkClusters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Versions(tc.charts, []Rendered{tc.render})
			assertErrors(t, errs, tc.want)
		})
	}
}

// TestCheckOnTheCharts runs the whole check, with the real helm, on the
// project's charts (it passes) and on copies each broken in one way (it
// fails, saying why).
func TestCheckOnTheCharts(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	helm := Helm{Bin: filepath.Join(root, "bin", "helm"), Home: t.TempDir()}
	if _, err := os.Stat(helm.Bin); err != nil {
		t.Fatal("bin/helm is missing: run 'make tools'")
	}
	charts := filepath.Join(root, "charts")
	if err := Check(helm, charts); err != nil {
		t.Fatalf("The charts fail their own check:\n%v", err)
	}

	edit := func(path, old, new string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, path)
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(raw), old) {
				t.Fatalf("%s has no %q", path, old)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sync := func(t *testing.T, dir string) {
		if err := Sync(dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		breaks []func(t *testing.T, dir string)
		want   string
	}{
		{"a source edited, its copies not synced",
			[]func(*testing.T, string){edit("flink-base/values.yaml", "port: 9092", "port: 9094")},
			"flink-jobmanager/charts/flink-base/values.yaml differs from flink-base/values.yaml"},
		{"the vendored kafka chart at another version",
			[]func(*testing.T, string){edit("flink-jobmanager/charts/kafka/Chart.yaml", "version: 2.8.0", "version: 2.9.0")},
			`kafka 2.8.0 is "wrong version"`},
		{"Chart.yaml pins another zookeeper",
			[]func(*testing.T, string){edit("flink-jobmanager/Chart.yaml", "version: 1.0.0", "version: 1.0.1")},
			"zookeeper 1.0.1, pinned 1.0.0"},
		{"appVersion bumped alone",
			[]func(*testing.T, string){edit("flink-jobmanager/Chart.yaml", `appVersion: "1.17.1"`, `appVersion: "1.18.1"`)},
			"version 1.17.1 and appVersion 1.18.1 differ"},
		{"the image tag bumped alone",
			[]func(*testing.T, string){edit("flink-base/values.yaml", `tag: "1.17.1"`, `tag: "1.18.1"`), sync},
			`is tagged "1.18.1"`},
		{"the Flink version bumped alone",
			[]func(*testing.T, string){edit("flink-base/values.yaml", `version: "1.17.1"`, `version: "1.18.1"`), sync},
			`spec.version is "1.18.1"`},
		{"an environment's image off the version",
			[]func(*testing.T, string){edit("flink-jobmanager/values-staging.yaml", "jobmanager:", "image: {tag: \"1.17.2\"}\njobmanager:")},
			`values-staging.yaml: the FlinkCluster's image "flink:1.17.2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "charts")
			if err := copyTree(charts, dir); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.breaks {
				f(t, dir)
			}
			err := Check(helm, dir)
			if err == nil {
				t.Fatalf("The check passed on charts with %s", tc.name)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("The check failed without saying %q:\n%v", tc.want, err)
			}
		})
	}
}

func assertErrors(t *testing.T, errs []error, want string) {
	t.Helper()
	if want == "" {
		if len(errs) > 0 {
			t.Fatalf("unexpected errors: %v", errs)
		}
		return
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Fatalf("no error says %q: %v", want, errs)
}

// TestSQLFromSetFile: a data team keeps a job's SQL in a file in Git and
// hands it to the Flink environment chart with --set-file; the
// FlinkCluster carries it byte for byte as spec.job.sql.script.
func TestSQLFromSetFile(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	helm := Helm{Bin: filepath.Join(root, "bin", "helm"), Home: t.TempDir()}
	if _, err := os.Stat(helm.Bin); err != nil {
		t.Fatal("bin/helm is missing: run 'make tools'")
	}
	script := filepath.Join(root, "examples", "sql-job.sql")
	want, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	out, err := helm.Run("template", "revenue", filepath.Join(root, "charts", "flink-jobmanager"),
		"--set", "job.upgradeMode=savepoint", "--set-file", "job.sql.script="+script,
		"--set", "job.sql.secretRefs[0].placeholder=KAFKA_PASSWORD",
		"--set", "job.sql.secretRefs[0].secretKeyRef.name=kafka-revenue",
		"--set", "job.sql.secretRefs[0].secretKeyRef.key=password")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(out, "\n---") {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Job struct {
					SQL struct {
						Script     string `json:"script"`
						SecretRefs []struct {
							Placeholder string `json:"placeholder"`
						} `json:"secretRefs"`
					} `json:"sql"`
				} `json:"job"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind != "FlinkCluster" {
			continue
		}
		if obj.Spec.Job.SQL.Script != string(want) {
			t.Fatalf("spec.job.sql.script = %q, want the file's %q", obj.Spec.Job.SQL.Script, want)
		}
		if len(obj.Spec.Job.SQL.SecretRefs) != 1 || obj.Spec.Job.SQL.SecretRefs[0].Placeholder != "KAFKA_PASSWORD" {
			t.Fatalf("secretRefs = %+v", obj.Spec.Job.SQL.SecretRefs)
		}
		return
	}
	t.Fatalf("no FlinkCluster in the rendered chart:\n%s", out)
}

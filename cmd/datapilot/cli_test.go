package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/manifest"
	"github.com/datapilot/datapilot/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// cfg is the package's one API server (envtest: real kube-apiserver and
// etcd, the CRDs installed), started by TestMain.
var cfg *rest.Config

func TestMain(m *testing.M) {
	flag.Parse()
	env, err := testenv.Environment()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	if cfg, err = env.Start(); err != nil {
		os.Stderr.WriteString("start envtest: " + err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		os.Stderr.WriteString("stop envtest: " + err.Error() + "\n")
	}
	os.Exit(code)
}

// run executes the datapilot command line in this process.
func run(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.Execute(); err != nil {
		t.Fatalf("datapilot %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apply applies objs server-side with strict field validation, so an
// unknown or misplaced field fails as kubectl would fail it.
func apply(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			nsObj := &corev1.Namespace{}
			nsObj.Name = ns
			if err := c.Create(ctx, nsObj); err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatal(err)
			}
		}
		if err := c.Patch(ctx, o, client.Apply, client.FieldOwner("datapilot-cli-test"), client.ForceOwnership, client.FieldValidation("Strict")); err != nil {
			t.Fatalf("apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

func readObjects(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.Read(strings.NewReader(s), "output")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./cmd/datapilot -update", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s (go test ./cmd/datapilot -update after an intended change):\n%s", path, got)
	}
}

// TestProductionBinaryIsLean: the binary the image ships links neither the
// Flink REST simulator nor the local platform (cmd/datapilot-local does).
func TestProductionBinaryIsLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/datapilot/datapilot/internal/operator") {
		t.Fatalf("go list -deps found no internal/operator; is this cmd/datapilot? %d deps", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{"github.com/datapilot/datapilot/internal/flinksim", "github.com/datapilot/datapilot/internal/platform", "sigs.k8s.io/controller-runtime/pkg/envtest", "k8s.io/apiserver/"} {
			if d == banned || strings.HasPrefix(d, banned+"/") || strings.HasPrefix(d, banned) && strings.HasSuffix(banned, "/") {
				t.Errorf("cmd/datapilot links %s", d)
			}
		}
	}
}

// v1alpha1Fixtures are every manifest in the repository that holds a
// data.example.com/v1alpha1 object: the examples and this package's
// fixtures. A new one anywhere under examples/ is picked up.
func v1alpha1Fixtures(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{filepath.Join(testenv.Root(), "examples"), filepath.Join("testdata", "convert")} {
		files, err := manifest.Files(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), "data.example.com/v1alpha1") {
				out = append(out, f)
			}
		}
	}
	if len(out) < 3 {
		t.Fatalf("found only %v v1alpha1 manifests", out)
	}
	return out
}

// TestConvertFixturesApply converts every v1alpha1 manifest to v1 with
// `datapilot convert`, compares the result with its golden file, and
// applies it to a real API server.
func TestConvertFixturesApply(t *testing.T) {
	c := newClient(t)
	for _, f := range v1alpha1Fixtures(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out := run(t, "convert", "-f", f, "--output-version", "data.example.com/v1")
			if strings.Contains(out, "v1alpha1") {
				t.Errorf("converted output still names v1alpha1:\n%s", out)
			}
			checkGolden(t, filepath.Join("testdata", "convert", "golden", filepath.Base(f)), out)
			objs := readObjects(t, out)
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(readObjects(t, string(in))); len(objs) != want {
				t.Fatalf("convert wrote %d objects for %d", len(objs), want)
			}
			for _, o := range objs {
				if o.GetNamespace() == "" {
					o.SetNamespace("convert-examples")
				}
			}
			apply(t, c, objs)
		})
	}
}

// TestConvertRoundTripsExamples converts each v1 example to v1alpha1 and
// back and gets the example again: the offline conversion is lossless both
// ways on what users write.
func TestConvertRoundTripsExamples(t *testing.T) {
	files, err := manifest.Files(filepath.Join(testenv.Root(), "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "v1alpha1") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			alpha := run(t, "convert", "-f", f, "--output-version", "data.example.com/v1alpha1")
			if !strings.Contains(alpha, "apiVersion: data.example.com/v1alpha1") {
				t.Fatalf("no v1alpha1 object in:\n%s", alpha)
			}
			dir := t.TempDir()
			p := filepath.Join(dir, "alpha.yaml")
			if err := os.WriteFile(p, []byte(alpha), 0o644); err != nil {
				t.Fatal(err)
			}
			back := run(t, "convert", "-f", p, "-o", "json")
			var list struct{ Items []map[string]any }
			if err := json.Unmarshal([]byte(back), &list); err != nil {
				t.Fatal(err)
			}
			orig := readObjects(t, string(raw))
			if len(list.Items) != len(orig) {
				t.Fatalf("%d objects back for %d", len(list.Items), len(orig))
			}
			for i, o := range orig {
				// Compared as v1 objects: a quantity written 4 or "4" and
				// resources: {} or none are the same object.
				want, got := typedJSON(t, o.Object), typedJSON(t, list.Items[i])
				if want != got {
					t.Errorf("v1 -> v1alpha1 -> v1 changed %s:\nwant %s\ngot  %s", o.GetName(), want, got)
				}
			}
		})
	}
}

// TestConvertRefusesUnknownVersion: a version the CRD does not serve is an
// error naming the ones it does.
func TestConvertRefusesUnknownVersion(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"convert", "-f", filepath.Join(testenv.Root(), "examples", "v1alpha1-legacy.yaml"), "--output-version", "data.example.com/v2"})
	root.SetOut(&bytes.Buffer{})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "data.example.com/v1alpha1") {
		t.Fatalf("err = %v, want the served versions named", err)
	}
}

// TestRenderMatchesTheAPIServer renders every example offline and checks it
// against a real API server: the FlinkCluster the API server stores has the
// spec render defaulted, and every rendered object is accepted with strict
// validation, owned by that FlinkCluster.
func TestRenderMatchesTheAPIServer(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	files, err := manifest.Files(filepath.Join(testenv.Root(), "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ns := "render-" + strings.TrimSuffix(filepath.Base(f), ".yaml")
			out := run(t, "render", "-f", f, "-n", ns, "--state-storage-uri", "s3://flink-state/datapilot")
			checkGolden(t, filepath.Join("testdata", "render", filepath.Base(f)), out)
			children := readObjects(t, out)

			// The cluster itself, as v1, created on the server.
			v1objs := readObjects(t, run(t, "convert", "-f", f))
			for _, o := range v1objs {
				if o.GetKind() != "FlinkCluster" {
					continue
				}
				o.SetNamespace(ns)
				apply(t, c, []*unstructured.Unstructured{o})
				stored := &unstructured.Unstructured{}
				stored.SetGroupVersionKind(o.GroupVersionKind())
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.GetName()}, stored); err != nil {
					t.Fatal(err)
				}
				r, err := renderer()
				if err != nil {
					t.Fatal(err)
				}
				offline, err := r.FlinkCluster(o, ns)
				if err != nil {
					t.Fatal(err)
				}
				want := typedJSON(t, map[string]any{"spec": stored.Object["spec"]})
				got := typedJSON(t, map[string]any{"spec": offline.Spec})
				if want != got {
					t.Errorf("render's defaults differ from the API server's for %s:\nserver %s\nrender %s", o.GetName(), want, got)
				}
				for _, child := range children {
					refs := child.GetOwnerReferences()
					for i := range refs {
						if refs[i].Name == o.GetName() {
							refs[i].UID = stored.GetUID()
						}
					}
					child.SetOwnerReferences(refs)
				}
			}
			if len(children) < 5 {
				t.Fatalf("render printed %d objects, want at least the five children", len(children))
			}
			apply(t, c, children)
		})
	}
}

// typedJSON is obj decoded as a v1 FlinkCluster (unknown fields refused)
// and encoded again: the form in which two objects are the same object.
func typedJSON(t *testing.T, obj any) string {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	fc := &v1.FlinkCluster{}
	if err := dec.Decode(fc); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(fc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestRenderRefusesBadInput: an unknown field (a typo, or the v1alpha1
// kafka.bootstrapServers in a v1 object) and a file without a FlinkCluster
// are errors naming the problem, not an empty or partial rendering.
func TestRenderRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"unknown field", "apiVersion: data.example.com/v1\nkind: FlinkCluster\nmetadata: {name: typo}\nspec: {version: 1.20.1, taskManger: {replicas: 2}}\n", `unknown field "taskManger"`},
		{"v1alpha1 field in v1", "apiVersion: data.example.com/v1\nkind: FlinkCluster\nmetadata: {name: old}\nspec: {version: 1.20.1, kafka: {bootstrapServers: k:9092}}\n", `unknown field "bootstrapServers"`},
		{"no FlinkCluster", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "no FlinkCluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(tc.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			root := newRootCommand()
			var out bytes.Buffer
			root.SetArgs([]string{"render", "-f", p})
			root.SetOut(&out)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("an error, yet render printed:\n%s", out.String())
			}
		})
	}
}

// TestGCPercent: the operator collects at DefaultGCPercent unless GOGC is
// set, which the runtime has read already and which wins.
func TestGCPercent(t *testing.T) {
	restore := debug.SetGCPercent(100)
	defer debug.SetGCPercent(restore)
	for _, tc := range []struct {
		gogc string
		want int
	}{{"", DefaultGCPercent}, {"100", 100}, {"off", 100}} {
		debug.SetGCPercent(100)
		setGCPercent(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: GC percent %d, want %d", tc.gogc, got, tc.want)
		}
	}
}

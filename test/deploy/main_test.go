// Package deploy_test checks what Datapilot ships: the Helm chart and the
// kustomize bases are rendered with the real tools in bin/ (helm, kubectl
// kustomize), their important properties are asserted, and every rendered
// object is applied to a real API server (envtest) to show it is accepted.
package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// install is one way of deploying the operator, and what it should produce.
type install struct {
	name string
	// Exactly one of chartValues (may be empty for the defaults) or
	// kustomizeDir is used; chart says which.
	chart        bool
	release      string
	chartValues  string // a values file under testdata/
	kustomizeDir string // relative to the repository root

	// namespace is where the operator runs.
	namespace string
	want      wantSettings
}

// wantSettings are the operator settings an install must configure.
type wantSettings struct {
	replicas                int32
	logLevel                string
	reconcileInterval       string
	maxConcurrentReconciles int
	watchNamespaces         []string
	ignoredNamespaces       []string
	stateStorageURI         string
	// leaderElection is lease duration, renew deadline and retry period;
	// slowReconcile the threshold and the degraded interval.
	leaderElection [3]time.Duration
	slowReconcile  [2]time.Duration
	serviceMonitor bool
	image          string
}

var installs = []install{
	{
		name: "chart with default values", chart: true, release: "datapilot", namespace: "datapilot-chart",
		want: wantSettings{replicas: 1, logLevel: "info", reconcileInterval: "30s", maxConcurrentReconciles: 5,
			leaderElection: [3]time.Duration{12 * time.Second, 8 * time.Second, 2 * time.Second}, slowReconcile: [2]time.Duration{15 * time.Second, time.Minute},
			image: "ghcr.io/datapilot/datapilot:0.1.0"},
	},
	{
		name: "chart with custom values", chart: true, release: "flink-ops", namespace: "datapilot-custom",
		chartValues: "values-custom.yaml",
		want: wantSettings{replicas: 0, logLevel: "debug", reconcileInterval: "1m30s", maxConcurrentReconciles: 12,
			leaderElection: [3]time.Duration{30 * time.Second, 20 * time.Second, 4 * time.Second}, slowReconcile: [2]time.Duration{20 * time.Second, 2 * time.Minute},
			watchNamespaces: []string{"team-a", "team-b"}, stateStorageURI: "s3://team-state/flink", serviceMonitor: true,
			image: "registry.example.com/platform/datapilot:test"},
	},
	{
		name: "chart ignoring namespaces", chart: true, release: "flink-ignoring", namespace: "datapilot-ignoring",
		chartValues: "values-ignore.yaml",
		want: wantSettings{replicas: 1, logLevel: "info", reconcileInterval: "30s", maxConcurrentReconciles: 5,
			leaderElection: [3]time.Duration{12 * time.Second, 8 * time.Second, 2 * time.Second}, slowReconcile: [2]time.Duration{15 * time.Second, time.Minute},
			ignoredNamespaces: []string{"legacy-flink", "sandbox"}, image: "ghcr.io/datapilot/datapilot:0.1.0"},
	},
	{
		name: "kustomize config/default", kustomizeDir: "config/default", namespace: "datapilot-system",
		want: wantSettings{replicas: 1, logLevel: "info", reconcileInterval: "30s", maxConcurrentReconciles: 5,
			leaderElection: [3]time.Duration{12 * time.Second, 8 * time.Second, 2 * time.Second}, slowReconcile: [2]time.Duration{15 * time.Second, time.Minute},
			image: "ghcr.io/datapilot/datapilot:0.1.0"},
	},
	{
		name: "kustomize config/overlays/production", kustomizeDir: "config/overlays/production", namespace: "data-platform-system",
		want: wantSettings{replicas: 2, logLevel: "info", reconcileInterval: "30s", maxConcurrentReconciles: 5,
			leaderElection: [3]time.Duration{12 * time.Second, 8 * time.Second, 2 * time.Second}, slowReconcile: [2]time.Duration{15 * time.Second, time.Minute},
			stateStorageURI: "s3://flink-state/datapilot", image: "ghcr.io/datapilot/datapilot:0.1.0"},
	},
}

var (
	root    = repoRoot()
	bin     = filepath.Join(root, "bin")
	restCfg *rest.Config // the envtest API server, as its admin
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	for _, tool := range []string{"helm", "kubectl", "kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			fmt.Fprintf(os.Stderr, "bin/%s is missing: run 'make tools' (make test does it for you)\n", tool)
			return 1
		}
	}
	// Keep helm away from the user's configuration and caches.
	helmHome, err := os.MkdirTemp("", "datapilot-deploy-helm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(helmHome)
	for _, k := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		os.Setenv(k, filepath.Join(helmHome, k))
	}

	env := &envtest.Environment{BinaryAssetsDirectory: bin}
	// Stop in about 2s instead of envtest's 20s kill (see internal/testenv).
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-send-retry-after", "true")
	restCfg, err = env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	// Stop the API server and etcd on every path out: os.Exit skips defers.
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	return m.Run()
}

// render runs helm template or kubectl kustomize for in.
func render(t *testing.T, in install) []byte {
	t.Helper()
	if in.chart {
		args := []string{"template", in.release, filepath.Join(root, "charts", "datapilot"),
			"--namespace", in.namespace, "--include-crds"}
		if in.chartValues != "" {
			args = append(args, "--values", filepath.Join(root, "test", "deploy", "testdata", in.chartValues))
		}
		return runTool(t, "helm", args...)
	}
	return runTool(t, "kubectl", "kustomize", filepath.Join(root, in.kustomizeDir))
}

func runTool(t *testing.T, tool string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bin, tool), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bin/%s %v: %v\n%s", tool, args, err, stderr.String())
	}
	return stdout.Bytes()
}

// parse splits a multi-document YAML stream into objects, skipping empty documents.
func parse(t *testing.T, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Parse rendered YAML: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("Rendered object without apiVersion, kind or name: %v", m)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatal("Nothing rendered")
	}
	return objs
}

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

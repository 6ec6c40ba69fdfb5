// Package testenv starts the integration tier's API server: envtest with the
// kube-apiserver and etcd that hack/tools built into bin/, serving the CRDs
// from config/crd/bases. Tests talk to it, never to a fake client.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/datapilot/datapilot/internal/platform"
)

// Root is the repository root, found from this file's location so tests
// work from any package directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Environment is an unstarted envtest environment with the project's
// binaries and CRDs. It fails when bin/ lacks them, naming the fix.
func Environment() (*envtest.Environment, error) {
	bin := filepath.Join(Root(), "bin")
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("bin/%s is missing: run 'make tools' (make test does it for you)", b)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(Root(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	// Stop in about 2s: by default the API server's HTTP server waits
	// --request-timeout (60s) for the watches still open, and envtest
	// kills it after 20s (as internal/platform does the local platform's).
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-send-retry-after", "true")
	return env, nil
}

// Start starts an environment for one test and stops it when the test ends.
func Start(t testing.TB) (*envtest.Environment, *rest.Config) {
	t.Helper()
	env, err := Environment()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("Start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stop envtest: %v", err)
		}
	})
	return env, cfg
}

// PlatformBin is bin/ when it holds what the local platform's tiers run
// (the control plane and kwok that hack/tools built, and the operator's
// binary); else an error naming the make target that builds what is
// missing.
func PlatformBin() (string, error) {
	bin := filepath.Join(Root(), "bin")
	if missing := platform.MissingBinaries(bin); len(missing) > 0 {
		return "", fmt.Errorf("missing %v in bin/: run 'make tools' (make test does it for you)", missing)
	}
	if _, err := os.Stat(filepath.Join(bin, "datapilot")); err != nil {
		return "", fmt.Errorf("bin/datapilot is missing: run 'make build' (make test does it for you)")
	}
	return bin, nil
}

package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/datapilot/datapilot/internal/operator"
)

// The integration tier: a real kube-apiserver and etcd from bin/, the CRDs
// from config/crd/bases, and the operator's real manager.
var (
	k8s    client.Client
	writes atomic.Int64 // write requests the operator sent
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin := filepath.Join(repoRoot(), "bin")
	if _, err := os.Stat(filepath.Join(bin, "kube-apiserver")); err != nil {
		fmt.Fprintln(os.Stderr, "bin/kube-apiserver is missing: run 'make tools' (make test does it for you)")
		return 1
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	// Stop the API server and etcd on every path out, os.Exit skips defers.
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()

	k8s, err = client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	opCfg := rest.CopyConfig(cfg)
	opCfg.QPS, opCfg.Burst = 200, 400
	opCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countWrites{rt} })
	opts, err := operator.Defaults()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = "0", "0", false
	mgr, err := operator.NewManager(opCfg, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctrl.SetupSignalHandler())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

// countWrites counts every non-read request the operator makes.
type countWrites struct{ next http.RoundTripper }

func (c countWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		writes.Add(1)
	}
	return c.next.RoundTrip(req)
}

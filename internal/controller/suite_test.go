package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/testenv"
)

// The integration tier: a real kube-apiserver and etcd from bin/, the CRDs
// from config/crd/bases, and the operator's real manager.
var (
	k8s    client.Client
	writes atomic.Int64 // write requests the operator sent
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := testenv.Environment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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
	// The platform's shared storage, as a platform team sets it once.
	opts.StateStorageURI = itStateStorage
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

// itStateStorage is the integration tier's platform storage.
const itStateStorage = "s3://it-state/flink"

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

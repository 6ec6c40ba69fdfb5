// Package e2e is the end-to-end tier: the local platform (real etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, kwok for the
// kubelets), the Flink REST simulator, and the operator binary itself as a
// separate process, so a test can kill it with SIGKILL mid-flight.
//
// Tests that kill or restart the operator, or count pods per node, call
// alone(t): Go runs them first, one at a time. Every other test calls
// parallel(t) and runs after them (make test-e2e raises -parallel, as the
// tests mostly wait on Flink's and Kubernetes' timers, not the CPU).
// make test-e2e runs the two kinds in two processes side by side
// (-e2e.group), each with a platform, simulator and operator of its own, so
// the alone tests' minute and a half no longer comes before the rest.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/testenv"
)

var (
	root       string
	plat       *platform.Platform
	k8s        client.Client
	restConfig *rest.Config
	sim        *flinksim.Simulator
	jarServer  *httptest.Server
	// jarRequests counts the jar server's requests by path: an observable
	// sign that the operator retried, for negative checks.
	jarRequests = &pathCounter{counts: map[string]int{}}
	op          *operatorProcess
	auditLog    string
	// prom scrapes the operator (prometheus_test.go); nil when
	// bin/prometheus is missing, which fails only the tests that need it.
	prom *prometheusServer
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// group is which tests this process runs: "alone" (those that kill or
// restart the operator, or count pods per node), "parallel" (the rest), or
// "all" (both, the alone ones first: what `go test ./test/e2e/ -run X` does).
var group = flag.String("e2e.group", "all", "the tests to run: all, alone or parallel")

// aloneRunning is set while an alone test runs: the operator may be killed
// or stopped only then, so a test that forgets alone(t) fails at once
// instead of killing the operator under the parallel tests.
var aloneRunning atomic.Bool

// parallel marks a test that shares the platform and the operator with
// others; in the alone group it is skipped (a subtest is not: its parent
// decided).
func parallel(t *testing.T) {
	t.Helper()
	if *group == "alone" && !strings.Contains(t.Name(), "/") {
		t.Skip("runs in the parallel group (-e2e.group)")
	}
	t.Parallel()
}

// alone marks a test that kills or restarts the operator, or counts pods
// per node: it runs before every parallel test, one at a time.
func alone(t *testing.T) {
	t.Helper()
	if *group == "parallel" {
		t.Skip("runs in the alone group (-e2e.group)")
	}
	aloneRunning.Store(true)
	t.Cleanup(func() { aloneRunning.Store(false) })
}

// auditPolicy logs every write at Metadata level, as
// platform.DefaultAuditPolicy, and a FlinkCluster's status writes with
// their bodies: the writes tests tell what each one said.
var auditPolicy = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [patch, update]
  resources: [{group: data.example.com, resources: [flinkclusters/status]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`)

func run(m *testing.M) int {
	flag.Parse()
	// The tests' clients log nothing worth reading; without a logger,
	// controller-runtime prints a stack trace saying so.
	ctrllog.SetLogger(logr.Discard())
	if g := *group; g != "all" && g != "alone" && g != "parallel" {
		fmt.Fprintf(os.Stderr, "-e2e.group=%s: want all, alone or parallel\n", g)
		return 2
	}
	root = testenv.Root()
	bin, err := testenv.PlatformBin()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	state, err := os.MkdirTemp("", "datapilot-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(state)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Nodes big enough for every parallel test's clusters at once (the
	// reference example alone asks 108 CPUs), so none waits for another
	// test's pods to go. The audit log (writes only) counts the operator's
	// writes.
	auditLog = filepath.Join(state, "audit", "audit.log")
	plat, err = platform.Start(ctx, platform.Options{BinDir: bin, StateDir: state, FlinkHARole: true, StartTimeout: 3 * time.Minute,
		NodeCPU: "1024", NodeMemory: "4Ti", NodePods: 500, AuditLogPath: auditLog, AuditPolicy: auditPolicy})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local platform:", err)
		return 1
	}
	// Stop the children on every way out: os.Exit skips deferred calls
	// in callers, so this runs before run returns.
	defer func() {
		if err := plat.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop local platform:", err)
		}
	}()
	restConfig = plat.RESTConfig()
	restConfig.QPS, restConfig.Burst = 100, 200
	if k8s, err = client.New(restConfig, client.Options{Scheme: operator.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	sim, err = flinksim.New(plat.RESTConfig(), flinksim.Options{
		ListenAddr: "127.0.0.1:0",
		// Checkpoint intervals and restart backoff come from each cluster's
		// rendered configuration, as in Flink.
		Engine: flinksim.EngineOptions{SavepointDelay: 500 * time.Millisecond},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := sim.Start(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "Flink REST simulator:", err)
		}
	}()
	jarServer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jarRequests.add(r.URL.Path)
		if strings.HasPrefix(path.Base(r.URL.Path), "missing") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/java-archive")
		_, _ = w.Write([]byte("PK\x03\x04 not a real jar: the simulator runs no code"))
	}))
	defer jarServer.Close()

	// One webhook port for every start of the operator, so the CRD's
	// conversion URL stays right across restarts.
	webhookPort, err := testenv.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// And one metrics address, which Prometheus scrapes across restarts.
	metricsAddr, err := freeAddr()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	op = &operatorProcess{bin: filepath.Join(bin, "datapilot"), kubeconfig: plat.KubeconfigPath(),
		rest: sim.BaseURLTemplate(), podREST: sim.PodURLTemplate(), logPath: filepath.Join(state, "operator.log"), webhookPort: webhookPort,
		metricsAddr: metricsAddr}
	if err := op.start(); err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer op.shutdown()

	if _, err := os.Stat(filepath.Join(bin, "prometheus")); err == nil {
		token, err := plat.MetricsToken(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "metrics reader token:", err)
			return 1
		}
		promDir := filepath.Join(state, "prometheus")
		if err := os.MkdirAll(promDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if prom, err = startPrometheus(ctx, bin, promDir, metricsAddr, token); err != nil {
			fmt.Fprintln(os.Stderr, "start prometheus:", err)
			return 1
		}
		defer prom.stop()
	}

	code := m.Run()
	if code != 0 {
		if raw, err := os.ReadFile(op.logPath); err == nil {
			// Its first lines too: an operator that failed from its start
			// (every test after failing alike) says why there.
			lines := strings.Split(string(raw), "\n")
			first := min(len(lines), 60)
			fmt.Fprintf(os.Stderr, "--- first operator log lines ---\n%s\n", strings.Join(lines[:first], "\n"))
			fmt.Fprintf(os.Stderr, "--- last operator log lines ---\n%s\n", strings.Join(lines[max(first, len(lines)-60):], "\n"))
		}
	}
	return code
}

// operatorProcess is bin/datapilot operator as a child process.
type operatorProcess struct {
	bin, kubeconfig, rest, podREST, logPath string
	// webhookPort serves the conversion webhook on the loopback interface.
	webhookPort int
	// metricsAddr serves /metrics (HTTPS, authenticated and authorized by
	// the API server, as in production).
	metricsAddr string
	// extraArgs are added to the flags by start (an alone test's own).
	extraArgs []string

	mu   sync.Mutex
	proc *testenv.Operator
}

// start starts the operator and returns once it is ready, or the reason it
// is not (testenv.StartOperator). A webhook port another process took
// meanwhile is picked again; the metrics address stays, as Prometheus
// scrapes it.
func (o *operatorProcess) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	first := true
	proc, err := testenv.StartOperator(testenv.OperatorStart{Bin: o.bin, Log: o.logPath, Args: func() ([]string, error) {
		if !first {
			port, err := testenv.FreePort()
			if err != nil {
				return nil, err
			}
			o.webhookPort = port
		}
		first = false
		return o.args(), nil
	}})
	o.proc = proc
	return err
}

func (o *operatorProcess) args() []string {
	args := []string{"--kubeconfig", o.kubeconfig,
		// One instance at a time is the test's own guarantee; a killed
		// leader would otherwise hold its lease for 15 seconds.
		"--leader-elect=false",
		"--metrics-bind-address=" + o.metricsAddr,
		"--flink-rest-override", o.rest, "--flink-rest-pod-override", o.podREST, "--reconcile-interval=1s", "--log-level=info",
		// The local platform's shared storage, as `datapilot-local up` sets it.
		"--state-storage-uri=" + platform.StateStorageURI,
		// The jars are served on loopback, which the operator refuses
		// unless allowed.
		"--jar-allowed-hosts=" + platform.JarHost,
		// The conversion webhook for data.example.com/v1alpha1, as
		// `datapilot-local up` runs it.
		"--webhook-cert-mode=self-signed", "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", o.webhookPort),
		// In the state dir, not a temporary dir that every kill leaves.
		"--webhook-cert-dir=" + filepath.Join(filepath.Dir(o.logPath), "webhook-certs"),
		fmt.Sprintf("--webhook-url=https://127.0.0.1:%d/convert", o.webhookPort)}
	return append(args, o.extraArgs...)
}

// kill ends the operator without any chance to clean up, as a node failure
// or an OOM kill would.
func (o *operatorProcess) kill() {
	mustBeAlone()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc != nil {
		o.proc.Kill()
		o.proc = nil
	}
}

// stop ends the operator as Kubernetes would (SIGTERM, then SIGKILL).
func (o *operatorProcess) stop() {
	mustBeAlone()
	o.shutdown()
}

// mustBeAlone panics unless an alone test runs: killing the operator under
// parallel tests would fail them at random.
func mustBeAlone() {
	if !aloneRunning.Load() {
		panic("the operator is stopped only by a test that called alone(t)")
	}
}

func (o *operatorProcess) shutdown() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc != nil {
		o.proc.Stop()
		o.proc = nil
	}
}

// pathCounter counts requests by URL path.
type pathCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *pathCounter) add(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[p]++
}

func (c *pathCounter) get(p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[p]
}

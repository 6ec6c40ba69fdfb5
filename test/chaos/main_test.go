// Package chaos is the chaos tier: the control plane fails under load, on a
// local platform of its own (real etcd, kube-apiserver, controller-manager
// and scheduler, kwok for kubelets), with the Flink REST simulator behind a
// proxy that can cut every cluster off, and the operator binary as a child
// process that can be killed. Each scenario asserts on what the API server
// (objects, audit log) and the simulator recorded, never on timing.
//
// make test runs it small; `go test ./test/chaos -chaos.n=50` runs it large.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// clusters is the size of each scenario's burst.
var clusters = flag.Int("chaos.n", 6, "FlinkClusters per chaos scenario")

var (
	root       string
	plat       *platform.Platform
	k8s        client.Client
	restConfig *rest.Config
	sim        *flinksim.Simulator
	proxy      *cutProxy
	jarURL     string
	op         *operatorProcess
	// metricsClient scrapes the operator with an allowed token.
	metricsClient *http.Client
	auditLog      string
)

// auditPolicy is the platform's default (every write) plus the lists and
// watches of the admin user, which the operator and the test share (the
// user agent tells them apart): the resource versions the operator's
// informers resume from. A FlinkCluster's status writes are logged with
// their bodies, so a failure the kept state dir holds says what each one
// recorded (TestWatchesExpireDuringUpgrades once failed after thirteen
// status writes no log could read).
var auditPolicy = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [patch, update]
  resources: [{group: data.example.com, resources: [flinkclusters/status]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: Metadata
  users: [datapilot-admin]
  verbs: [list, watch]
- level: None
`)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The test's own clients log nothing (the operator logs to its file).
	ctrllog.SetLogger(logr.Discard())
	root = testenv.Root()
	bin, err := testenv.PlatformBin()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	state, err := os.MkdirTemp("", "datapilot-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// A failed run keeps its logs and audit log to read.
	failed := true
	defer func() {
		if failed {
			fmt.Fprintln(os.Stderr, "state, logs and audit log kept in", state)
			return
		}
		os.RemoveAll(state)
	}()
	auditLog = filepath.Join(state, "audit", "audit.log")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plat, err = platform.Start(ctx, platform.Options{BinDir: bin, StateDir: state, Nodes: 2, FlinkHARole: true, AuditLogPath: auditLog,
		AuditPolicy: auditPolicy, StartTimeout: 3 * time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local platform:", err)
		return 1
	}
	defer func() { _ = plat.Stop() }()
	restConfig = plat.RESTConfig()
	restConfig.QPS, restConfig.Burst = 100, 200
	restConfig.UserAgent = "datapilot-chaos-test"
	if k8s, err = client.New(restConfig, client.Options{Scheme: operator.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sim, err = flinksim.New(plat.RESTConfig(), flinksim.Options{ListenAddr: "127.0.0.1:0",
		Engine: flinksim.EngineOptions{SavepointDelay: 500 * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = sim.Start(ctx) }()
	if proxy, err = newCutProxy(sim.Addr()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer proxy.close()
	jars := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/java-archive")
		_, _ = w.Write([]byte("PK\x03\x04 not a real jar: the simulator runs no code"))
	}))
	defer jars.Close()
	jarURL = jars.URL + "/chaos.jar"

	base := strings.Replace(sim.BaseURLTemplate(), sim.Addr(), proxy.addr(), 1)
	// A pod's address names its incarnation ({uid}), as its IP does.
	pods := strings.Replace(sim.PodURLTemplate(), sim.Addr(), proxy.addr(), 1)
	op = &operatorProcess{bin: filepath.Join(bin, "datapilot"), logPath: filepath.Join(state, "operator.log"),
		args: []string{"--kubeconfig", plat.KubeconfigPath(),
			// The test runs one instance at a time; a killed leader
			// would hold its lease.
			"--leader-elect=false",
			"--flink-rest-override", base, "--flink-rest-pod-override", pods,
			// Scaled timers: a poll a second stands for RECONCILE_INTERVAL.
			"--reconcile-interval=1s", "--log-level=info",
			"--state-storage-uri=" + platform.StateStorageURI,
			"--jar-allowed-hosts=" + platform.JarHost}}
	if err := op.start(); err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer op.stop()
	// The metrics endpoint authenticates and authorizes its clients.
	if metricsClient, err = plat.MetricsClient(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "metrics client:", err)
		return 1
	}

	code := m.Run()
	failed = code != 0
	if code != 0 {
		if raw, err := os.ReadFile(op.logPath); err == nil {
			lines := strings.Split(string(raw), "\n")
			fmt.Fprintf(os.Stderr, "--- last operator log lines ---\n%s\n", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	}
	return code
}

// operatorProcess is bin/datapilot operator as a child process.
type operatorProcess struct {
	bin, logPath string
	args         []string

	mu sync.Mutex
	// metricsAddr serves /metrics; picked at the first start, and again
	// when another process took it.
	metricsAddr string
	proc        *testenv.Operator
	kills       int
}

// start starts the operator and returns once it is ready.
func (o *operatorProcess) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	retry := false
	proc, err := testenv.StartOperator(testenv.OperatorStart{Bin: o.bin, Log: o.logPath, Args: func() ([]string, error) {
		if o.metricsAddr == "" || retry {
			port, err := testenv.FreePort()
			if err != nil {
				return nil, err
			}
			o.metricsAddr = "127.0.0.1:" + strconv.Itoa(port)
		}
		retry = true
		return append([]string{"--metrics-bind-address=" + o.metricsAddr}, o.args...), nil
	}})
	o.proc = proc
	return err
}

// metrics is the address the operator serves /metrics on; during a
// restart, once the new operator is ready.
func (o *operatorProcess) metrics() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.metricsAddr
}

// killCount is how many times restart killed the operator; read while a
// killer may be restarting it.
func (o *operatorProcess) killCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.kills
}

// restart kills the operator as a node failure would (SIGKILL, nothing
// cleaned up) and starts a new one.
func (o *operatorProcess) restart() error {
	o.mu.Lock()
	if o.proc != nil {
		o.proc.Kill()
		o.proc = nil
		o.kills++
	}
	o.mu.Unlock()
	return o.start()
}

func (o *operatorProcess) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc != nil {
		o.proc.Stop()
		o.proc = nil
	}
}

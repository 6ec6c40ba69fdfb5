// Package faults is the randomized fault-schedule tier: seeded schedules of
// spec changes and faults (internal/faults) run against a FlinkCluster on
// the local platform (real etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler, kwok for the kubelets), the Flink REST simulator and
// the operator binary as a child process that a schedule can kill. After
// each schedule the state invariants are judged from what the simulator
// recorded, never from the operator's status.
//
// make test runs a handful of seeds; make bench-chaos runs hundreds. A
// failing seed prints its schedule and replays with
//
//	go test ./test/faults -run TestFaultSchedules -count=1 -args -faults.seed=N
package faults

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/testenv"
)

var (
	seeds    = flag.Int("faults.seeds", 3, "how many seeds to run, from -faults.first")
	first    = flag.Int64("faults.first", 1, "the first seed")
	oneSeed  = flag.Int64("faults.seed", 0, "replay this one seed (overrides -faults.seeds)")
	parallel = flag.Int("faults.parallel", 1, "seeds run at once; an operator restart then hits every cluster, so replay a failure alone")
)

var (
	root   string
	plat   *platform.Platform
	k8s    client.Client
	sim    *flinksim.Simulator
	jarURL string
	op     *operatorProcess
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	root = testenv.Root()
	bin, err := testenv.PlatformBin()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	state, err := os.MkdirTemp("", "datapilot-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// A failed run keeps the operator's log to read.
	failed := true
	defer func() {
		if failed {
			fmt.Fprintln(os.Stderr, "state and operator log kept in", state)
			return
		}
		os.RemoveAll(state)
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plat, err = platform.Start(ctx, platform.Options{BinDir: bin, StateDir: state, FlinkHARole: true, StartTimeout: 3 * time.Minute,
		NodeCPU: "1024", NodeMemory: "4Ti", NodePods: 500})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local platform:", err)
		return 1
	}
	// os.Exit skips deferred calls in callers: stop the children here.
	defer func() {
		if err := plat.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop local platform:", err)
		}
	}()
	restConfig := plat.RESTConfig()
	restConfig.QPS, restConfig.Burst = 100, 200
	if k8s, err = client.New(restConfig, client.Options{Scheme: operator.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sim, err = flinksim.New(plat.RESTConfig(), flinksim.Options{ListenAddr: "127.0.0.1:0",
		// As the e2e tier: Flink's timers come from each cluster's rendered
		// configuration (scaled in the spec), the simulated work is short.
		Engine: flinksim.EngineOptions{SavepointDelay: 500 * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		if err := sim.Start(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "Flink REST simulator:", err)
		}
	}()
	jars := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/java-archive")
		_, _ = w.Write([]byte("PK\x03\x04 not a real jar: the simulator runs no code"))
	}))
	defer jars.Close()
	jarURL = jars.URL + "/faults.jar"

	op = &operatorProcess{bin: filepath.Join(bin, "datapilot"), logPath: filepath.Join(state, "operator.log"),
		args: []string{"--kubeconfig", plat.KubeconfigPath(),
			// One instance at a time is the test's own guarantee; a killed
			// leader would otherwise hold its lease.
			"--leader-elect=false", "--metrics-bind-address=0",
			"--flink-rest-override", sim.BaseURLTemplate(), "--flink-rest-pod-override", sim.PodURLTemplate(),
			// Scaled timers: a poll a second stands for RECONCILE_INTERVAL.
			"--reconcile-interval=1s", "--log-level=info",
			"--state-storage-uri=" + platform.StateStorageURI,
			// The jars are served on loopback, which the operator refuses
			// unless allowed.
			"--jar-allowed-hosts=" + platform.JarHost}}
	if err := op.start(); err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer op.stop()

	code := m.Run()
	failed = code != 0
	return code
}

// operatorProcess is bin/datapilot operator as a child process.
type operatorProcess struct {
	bin, logPath string
	args         []string

	mu   sync.Mutex
	proc *testenv.Operator
}

// start starts the operator and returns once it is ready.
func (o *operatorProcess) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	proc, err := testenv.StartOperator(testenv.OperatorStart{Bin: o.bin, Log: o.logPath,
		Args: func() ([]string, error) { return o.args, nil }})
	o.proc = proc
	return err
}

// restart kills the operator as a node failure would (SIGKILL, nothing
// cleaned up) and starts a new one.
func (o *operatorProcess) restart() error {
	o.mu.Lock()
	if o.proc != nil {
		o.proc.Kill()
		o.proc = nil
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

// tail is the end of the operator's log, for a failed seed.
func (o *operatorProcess) tail(n int) string {
	raw, err := os.ReadFile(o.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

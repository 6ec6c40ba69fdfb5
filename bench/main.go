// Command bench is Datapilot's scale benchmark (make bench). On one local
// platform it measures, in the same run:
//
//   - the baseline (the null operator): a client creating each cluster's
//     child objects itself, until every JobManager and TaskManager pod is
//     ready;
//   - the operator: the same number of session FlinkClusters, then of job
//     clusters (spec.job), until every one is Available (and its job
//     RUNNING);
//   - an idle window, then a takeover: a standby operator waits on the
//     lease and the leader is killed.
//
// It reports the ratio of the times, each cluster's lag from its last pod
// Ready to Available, the operator's API writes per converged cluster (from
// the API server's audit log, events included), its writes, reconciles and
// Flink REST requests while idle, its peak memory, where a reconcile's time
// goes (its own metrics), and the takeover time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
)

const (
	benchAgent    = "datapilot-bench"
	operatorAgent = "datapilot/"
)

type config struct {
	n           int
	idle        time.Duration
	timeout     time.Duration
	concurrency int
	workers     int
	out         string
	stateDir    string
	jobs        int
	jarURL      string
	heapProfile string
	cpuProfile  string
	// apiserverProfile, when set, names the files of the API server's CPU
	// profiles; apiserver reaches its /debug/pprof.
	apiserverProfile string
	apiserver        rest.Interface
	// operatorProfile, when set, names the files of the operator's CPU
	// profiles; operatorPprof is where it serves pprof.
	operatorProfile string
	operatorPprof   string
	simLog          string
	rounds          int
	shapes          bool
	floor           bool
	shardedN        int
	// spotify is a checkout of the Spotify operator's source (peer.go).
	spotify string
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 100, "number of FlinkClusters (1 JobManager + 2 TaskManagers each)")
	flag.IntVar(&c.jobs, "jobs", -1, "number of job clusters (spec.job) measured after the session clusters; -1 means n, 0 none")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "idle window after convergence in which writes are counted")
	flag.DurationVar(&c.timeout, "timeout", 20*time.Minute, "deadline for each phase")
	flag.IntVar(&c.concurrency, "concurrency", 16, "parallel creates of the benchmark client")
	flag.IntVar(&c.workers, "workers", 10, "the operator's MAX_CONCURRENT_RECONCILES")
	flag.StringVar(&c.out, "out", "bench/RESULTS.md", "Markdown file the results table is appended to")
	flag.StringVar(&c.stateDir, "state-dir", ".datapilot-bench", "state directory of the benchmark's local platform")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds of the interleaved phases (baselines, session clusters, job clusters); every figure is reported as the median and spread over them")
	flag.BoolVar(&c.floor, "floor", true, "run each round's floor before the operator's phases: the FlinkClusters created, owned children and one status write each by the bench's client, in a namespace the operator ignores (what any operator of this API costs at least)")
	flag.BoolVar(&c.shapes, "shapes", true, "run each round's baseline in every child shape (JobManager as Deployment, with the PodDisruptionBudget, server-side apply), not only the operator's")
	flag.IntVar(&c.shardedN, "sharded", -1, "session clusters created under two sharded replicas at the end, before one is killed; -1 means n, 0 skips the sharded mode")
	flag.StringVar(&c.spotify, "spotify", "", "a checkout of github.com/spotify/flink-on-k8s-operator: when set, the bench builds it and runs each round's session clusters under it too, on the same platform (the Go module proxy does not serve it; see docs/performance.md)")
	flag.StringVar(&c.simLog, "sim-log", "", "when set, the Flink simulator's logs, its refused connections among them, are written to this file")
	flag.StringVar(&c.heapProfile, "heap-profile", "", "when set, the operator serves pprof and its heap profile is written to <this>-start.pb.gz once the operator is idle and to <this>-converged.pb.gz after the last round's operator phases")
	flag.StringVar(&c.apiserverProfile, "apiserver-profile", "", "when set, kube-apiserver serves pprof and its CPU profile over each baseline and operator phase of the last round is written to <this>-<phase>-<k>.pb.gz, in consecutive 10 s parts (go tool pprof takes them all at once)")
	flag.StringVar(&c.operatorProfile, "operator-profile", "", "when set, the operator serves pprof and its CPU profile over each operator phase of the last round is written to <this>-<phase>-<k>.pb.gz, in consecutive 10 s parts")
	flag.StringVar(&c.cpuProfile, "cpu-profile", "", "when set, the CPU profile of the bench process itself (its client, the Flink simulator, the watches that measure) over each baseline and operator phase of the last round is written to <this>-<phase>.pb.gz")
	flag.Parse()
	if c.jobs < 0 {
		c.jobs = c.n
	}
	if c.shardedN < 0 {
		c.shardedN = c.n
	}
	if c.rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: -rounds must be at least 1")
		os.Exit(2)
	}
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

type results struct {
	startup time.Duration
	// builds says what the operator binary and the bench were built from.
	builds string
	// rounds holds each round's baselines (by shape) and operator phases.
	rounds []round
	shapes []shape
	// session and job are the last round's operator phases, whose
	// clusters stay for the idle window and the takeovers.
	session, job phase
	idleWrites   int
	// idleGone are idle writes answered 404 (see notFound).
	idleGone       int
	leaseWrites    int
	idleByKind     []string
	idleReconciles float64
	// idleREST is the simulator's REST requests per cluster per minute
	// while idle, by namespace.
	idleREST               map[string]float64
	peakRSS, rssBeforeLoad int64
	// memStart and memConverged say what the resident set is made of.
	memStart, memConverged memBreakdown
	nodes                  int
	operatorCPUSeconds     float64
	// restarts are the leader's exits the bench restarted it after.
	restarts []restart
	// where a reconcile's time goes, from the operator's own metrics.
	reconcileMean, queueWaitMean time.Duration
	requestMean                  map[string]time.Duration
	throttleMean                 time.Duration
	flinkRESTMean                time.Duration
	// simReads are the Flink simulator's namespace reads over the run.
	simReads       flinksim.ReadStats
	takeover       time.Duration
	takeoverWrites int
	// takeoverJobStatus are the takeover's status writes to job clusters:
	// with retained 1 each newer checkpoint is written (lifecycle
	// FlinkProgressOnly), and a new leader finds every running job's moved
	// on since the old leader's last write.
	takeoverJobStatus int
	takeoverByKind    []string
	takeoverResynced  float64
	sharded           *shardResult
}

// round is one pass of the interleaved phases.
type round struct {
	baselines map[string]baselineResult
	// floor is the floor phase (floor.go); n is 0 when not run.
	floor        phase
	session, job phase
	// peer is the Spotify operator's phase (peer.go); n is 0 when not run.
	peer           phase
	sessNS, jobsNS string
}

// phase is one operator phase: N clusters of one kind.
type phase struct {
	n    int
	job  bool
	took time.Duration
	// allChildren is when every cluster had all its children: the
	// operator creates a job cluster's budget once a TaskManager is
	// ready, which may be after Available (a session cluster running
	// nothing has none: its took).
	allChildren  time.Duration
	writes       int
	writesByVerb map[string]int
	lags         []time.Duration
	ctrlLags     []time.Duration
	opLags       []time.Duration
	// apiLags are the operator's share of lags, from the audit log.
	apiLags    []time.Duration
	incomplete int
	// cpu is the CPU time of each process during the phase.
	cpu cpuSample
	// peakRSS is the peer operator's high-water resident set (peer
	// phases; Datapilot's is measured over the whole run).
	peakRSS int64
	// ops is what Datapilot's metrics counted over the phase (its own
	// phases).
	ops opDelta
}

// The namespaces of each round's operator phases.
func sessionNS(round int) string { return fmt.Sprintf("bench-operator-%d", round) }
func jobNS(round int) string     { return fmt.Sprintf("bench-jobs-%d", round) }

const shardedNS = "bench-sharded"

func run(ctx context.Context, c config) error {
	root := platform.ProjectRoot()
	if err := os.Chdir(root); err != nil {
		return err
	}
	bin := filepath.Join(root, "bin", "datapilot")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s is missing: run 'make build' (make bench does)", bin)
	}
	var r results
	r.builds = builds(ctx, bin, root)
	fmt.Println(r.builds)
	stateDir, _ := filepath.Abs(c.stateDir)
	// The platform empties it once it owns the state dir: a second bench
	// started on the same dir must not take a running one's log.
	audit := filepath.Join(stateDir, "audit", "audit.log")
	// Every pod of every phase must fit: three per cluster, with headroom;
	// room for the peer's clusters as well (sized when they ran beside
	// Datapilot's; no phase has the other's clusters now, but the runs in
	// docs/performance.md had this many nodes).
	clusters := c.n + c.jobs
	if c.spotify != "" {
		clusters += c.n
	}
	nodes := max(4, (3*clusters+199)/200+1)
	r.nodes = nodes
	pl, err := platform.Start(ctx, platform.Options{
		FlinkHARole: true,
		// Memory for every pod's request (the Flink default is 1.6 GiB per
		// process), so pods count is the only limit.
		StateDir: stateDir, Nodes: nodes, NodePods: 250, NodeMemory: "1Ti", NodeCPU: "256", AuditLogPath: audit,
		AuditPolicy: auditPolicy, StartTimeout: 5 * time.Minute, Logger: logr.Discard(),
		Profiling: c.apiserverProfile != "",
	})
	if err != nil {
		return err
	}
	defer func() { _ = pl.Stop() }()
	// The operator's metrics authenticate and authorize their clients.
	if metricsClient, err = pl.MetricsClient(ctx); err != nil {
		return err
	}
	r.startup = pl.StartupDuration()
	fmt.Printf("Local platform up in %s with %d nodes\n", r.startup.Round(time.Millisecond), nodes)

	// The bench's own clients (its creates, the watches that measure, the
	// Flink simulator) run through every phase; uncompressed, as the
	// operator's, so the API server gzips no watch event for them.
	restConfig := func() *rest.Config {
		cfg := pl.RESTConfig()
		cfg.DisableCompression = true
		return cfg
	}
	cfg := restConfig()
	cfg.UserAgent = benchAgent
	cfg.QPS, cfg.Burst = 500, 1000
	k8s, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}
	if c.apiserverProfile != "" {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		c.apiserver = cs.CoreV1().RESTClient()
	}

	simLog, closeSimLog, err := fileLogger(c.simLog)
	if err != nil {
		return err
	}
	defer closeSimLog()
	sim, err := flinksim.New(restConfig(), flinksim.Options{ListenAddr: "127.0.0.1:0", Log: simLog})
	if err != nil {
		return err
	}
	simCtx, stopSim := context.WithCancel(ctx)
	defer stopSim()
	go func() { _ = sim.Start(simCtx) }()
	jars := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/java-archive")
		_, _ = w.Write([]byte("PK\x03\x04 not a real jar: the simulator runs no code"))
	}))
	defer jars.Close()
	c.jarURL = jars.URL + "/bench.jar"

	r.shapes = shapes[:1]
	if c.shapes {
		r.shapes = shapes
	}
	var watched []string
	for i := range c.rounds {
		watched = append(watched, sessionNS(i), jobNS(i), floorNS(i))
		if c.spotify != "" {
			watched = append(watched, peerNS(i))
		}
		for k := range r.shapes {
			watched = append(watched, baselineNamespace(i, k))
		}
	}
	watched = append(watched, shardedNS)
	for _, ns := range watched {
		if err := ensureNamespace(ctx, k8s, ns); err != nil {
			return err
		}
	}
	watch, err := watchReadiness(ctx, restConfig(), watched...)
	if err != nil {
		return err
	}

	// The operator, as its own process, so its memory is its own; elected
	// leader, so a standby can take over at the end. It runs through the
	// baselines too (their children are not labelled as its own, so its
	// cache holds none of them): every round sees the same control plane.
	opArgs := []string{"--kubeconfig", pl.KubeconfigPath(), "--leader-elect=true", "--leader-election-namespace=kube-system",
		"--flink-rest-override", sim.BaseURLTemplate(), "--flink-rest-pod-override", sim.PodURLTemplate(), "--log-level=error",
		"--state-storage-uri=" + platform.StateStorageURI, "--jar-allowed-hosts=" + platform.JarHost,
		"--max-concurrent-reconciles=" + strconv.Itoa(c.workers)}
	if c.floor {
		var floors []string
		for i := range c.rounds {
			floors = append(floors, floorNS(i))
		}
		opArgs = append(opArgs, "--ignore-namespace="+strings.Join(floors, ","))
	}
	// The leader serves the webhooks as the chart's default (self-signed)
	// does, so a job cluster's finalizer comes with its create; the
	// standby and the sharded replicas run without (each would point the
	// configurations at its own port), and once the leader is gone the
	// webhooks fail open.
	whPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	// Its certificate in the state dir: the takeover kills it, which would
	// leave a temporary dir behind at every run.
	leaderArgs := append(slices.Clone(opArgs), "--webhook-cert-mode=self-signed", "--webhook-host=127.0.0.1",
		"--webhook-cert-dir="+filepath.Join(stateDir, "webhook-certs"), fmt.Sprintf("--webhook-port=%d", whPort), fmt.Sprintf("--webhook-url=https://127.0.0.1:%d/convert", whPort))
	op, err := startOperator(bin, c.heapProfile != "" || c.operatorProfile != "", nil, leaderArgs...)
	if err != nil {
		return err
	}
	c.operatorPprof = op.pprofAddr
	defer op.stop()
	if err := op.waitMetrics(time.Minute); err != nil {
		return err
	}
	if c.jobs > 0 {
		if err := finalizerWebhookAnswers(ctx, k8s, jobCluster(jobNS(0), 0, c.jarURL)); err != nil {
			return err
		}
	}
	meter := cpuMeter{pids: pl.PIDs, op: op}
	var spotify *peer
	if c.spotify != "" {
		var peers []string
		for i := range c.rounds {
			peers = append(peers, peerNS(i))
		}
		if spotify, err = setupPeer(ctx, k8s, restConfig(), watch, c.spotify, stateDir, pl.KubeconfigPath(), peers); err != nil {
			return err
		}
	}
	time.Sleep(3 * time.Second) // leader, caches synced; measured as the idle footprint
	r.rssBeforeLoad = rss(op.pid())
	r.memStart = readMemBreakdown(op)
	if err := saveHeapProfile(op.pprofAddr, c.heapProfile, "start"); err != nil {
		return err
	}

	// The rounds, interleaved: every shape's baseline, then the operator's
	// two phases; the shapes' order turns each round, so none always runs
	// first on a fresh control plane.
	for i := range c.rounds {
		rd := round{baselines: map[string]baselineResult{}, sessNS: sessionNS(i), jobsNS: jobNS(i)}
		for j := range r.shapes {
			k := (j + i) % len(r.shapes)
			sh := r.shapes[k]
			ns := baselineNamespace(i, k)
			fmt.Printf("Round %d, baseline %q: creating the children of %d clusters directly\n", i+1, sh.name, c.n)
			cpu0 := meter.sample()
			stopProfile := c.profileCPU(i, "baseline-"+sh.name)
			took, err := baseline(ctx, k8s, c, watch, ns, sh)
			stopProfile()
			cpu := meter.sample().since(cpu0)
			if err != nil {
				return fmt.Errorf("baseline %q: %w", sh.name, err)
			}
			fmt.Printf("Round %d, baseline %q: all ready in %s\n", i+1, sh.name, took.Round(time.Millisecond))
			client := countWrites(audit, benchAgent, ns, time.Time{}, time.Time{}, nil)
			all := countWrites(audit, "", ns, time.Time{}, time.Time{}, nil)
			rd.baselines[sh.name] = baselineResult{took: took, clientWrites: float64(client) / float64(c.n),
				controlPlaneWrites: float64(all-client) / float64(c.n), cpu: cpu}
			// The teardown must not load the control plane while the
			// next phase is measured.
			if err := deleteNamespace(ctx, k8s, c, ns); err != nil {
				return err
			}
		}
		if c.floor {
			fmt.Printf("Round %d, floor: creating %d FlinkClusters, their children and one status each, without the operator\n", i+1, c.n)
			stopProfile := c.profileCPU(i, "floor")
			rd.floor, err = floorPhase(ctx, k8s, c, meter, watch, floorNS(i), c.n)
			stopProfile()
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			fmt.Printf("Round %d, floor: all Available in %s\n", i+1, rd.floor.took.Round(time.Millisecond))
			rd.floor.lags, rd.floor.ctrlLags, rd.floor.opLags, rd.floor.incomplete = watch.lags(floorNS(i), 3)
			if err := deleteNamespace(ctx, k8s, c, floorNS(i)); err != nil {
				return err
			}
		}
		// The peer's phase and Datapilot's each start on a platform
		// without the other's clusters (a first run that kept Datapilot's
		// 1000 clusters, probed, through the peer's phase took it 214 s
		// against 154 s without): the peer runs first in even rounds and
		// the last (whose session clusters stay for the idle window and
		// the takeover), else once Datapilot's are deleted.
		peerFirst := i%2 == 1 || i == c.rounds-1
		runPeer := func() error {
			if spotify == nil {
				return nil
			}
			ns := peerNS(i)
			fmt.Printf("Round %d, Spotify operator: creating %d session clusters\n", i+1, c.n)
			stopProfile := c.profileCPU(i, "spotify")
			rd.peer, err = peerPhase(ctx, k8s, c, meter, watch, spotify, ns, c.n)
			stopProfile()
			if err != nil {
				return fmt.Errorf("the Spotify operator: %w", err)
			}
			fmt.Printf("Round %d, Spotify operator: all Running in %s\n", i+1, rd.peer.took.Round(time.Millisecond))
			rd.peer.writesByVerb = map[string]int{}
			rd.peer.writes = countWrites(audit, peerAgent, ns, time.Time{}, time.Now(), rd.peer.writesByVerb)
			rd.peer.lags, rd.peer.ctrlLags, rd.peer.opLags, rd.peer.incomplete = watch.lags(ns, 3)
			rd.peer.apiLags = apiLags(audit, peerAgent, ns, time.Now())
			return deleteNamespace(ctx, k8s, c, ns)
		}
		if peerFirst {
			if err := runPeer(); err != nil {
				return err
			}
		}
		fmt.Printf("Round %d, operator: creating %d session clusters\n", i+1, c.n)
		stopProfile := c.profileCPU(i, "session")
		ops := measureOperator(op, c.n)
		rd.session, err = operatorPhase(ctx, k8s, c, meter, watch, rd.sessNS, c.n, false)
		rd.session.ops = ops()
		stopProfile()
		if err != nil {
			return fmt.Errorf("operator, session clusters: %w", err)
		}
		fmt.Printf("Round %d, operator: all session clusters Available in %s\n", i+1, rd.session.took.Round(time.Millisecond))
		if c.jobs > 0 {
			fmt.Printf("Round %d, operator: creating %d job clusters\n", i+1, c.jobs)
			stopProfile := c.profileCPU(i, "job")
			ops := measureOperator(op, c.jobs)
			rd.job, err = operatorPhase(ctx, k8s, c, meter, watch, rd.jobsNS, c.jobs, true)
			rd.job.ops = ops()
			stopProfile()
			if err != nil {
				return fmt.Errorf("operator, job clusters: %w", err)
			}
			fmt.Printf("Round %d, operator: all job clusters Available, jobs RUNNING and recorded stable, in %s\n", i+1, rd.job.took.Round(time.Millisecond))
		}
		// Let the last status writes land; the writes counted are the
		// convergence's, before any teardown.
		time.Sleep(5 * time.Second)
		for _, p := range []*phase{&rd.session, &rd.job} {
			ns := rd.sessNS
			if p.job {
				ns = rd.jobsNS
			}
			p.writesByVerb = map[string]int{}
			p.writes = countWrites(audit, operatorAgent, ns, time.Time{}, time.Now(), p.writesByVerb)
			p.lags, p.ctrlLags, p.opLags, p.incomplete = watch.lags(ns, 3)
			p.apiLags = apiLags(audit, operatorAgent, ns, time.Now())
		}
		if i == c.rounds-1 {
			r.rounds = append(r.rounds, rd)
			r.session, r.job = rd.session, rd.job
			r.memConverged = readMemBreakdown(op)
			if err := saveHeapProfile(op.pprofAddr, c.heapProfile, "converged"); err != nil {
				return err
			}
			break
		}
		for _, ns := range []string{rd.sessNS, rd.jobsNS} {
			if err := deleteNamespace(ctx, k8s, c, ns); err != nil {
				return err
			}
		}
		if !peerFirst {
			if err := runPeer(); err != nil {
				return err
			}
		}
		r.rounds = append(r.rounds, rd)
	}
	last := r.rounds[len(r.rounds)-1]

	// Count an idle window.
	before, err := scrape(op.metricsAddr)
	if err != nil {
		return err
	}
	restBefore := simRequests(sim)
	idleStart := time.Now()
	fmt.Printf("Idle: counting the operator's writes, reconciles and REST requests for %s\n", c.idle)
	select {
	case <-time.After(c.idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	idleEnd := time.Now()
	after, err := scrape(op.metricsAddr)
	if err != nil {
		return err
	}
	restAfter := simRequests(sim)
	r.idleReconciles = after.sum("controller_runtime_reconcile_total", `controller="flinkcluster"`) -
		before.sum("controller_runtime_reconcile_total", `controller="flinkcluster"`)
	r.idleREST = map[string]float64{}
	for ns, n := range map[string]int{last.sessNS: c.n, last.jobsNS: c.jobs} {
		if n > 0 {
			r.idleREST[ns] = float64(restAfter[ns]-restBefore[ns]) / float64(n) / idleEnd.Sub(idleStart).Minutes()
		}
	}
	r.reconcileMean = after.mean("controller_runtime_reconcile_time_seconds", `controller="flinkcluster"`)
	r.queueWaitMean = after.mean("workqueue_queue_duration_seconds", `name="flinkcluster"`)
	r.requestMean = map[string]time.Duration{}
	for _, verb := range []string{"GET", "PATCH", "POST", "PUT", "DELETE"} {
		if d := after.mean("rest_client_request_duration_seconds", `verb="`+verb+`"`); d > 0 {
			r.requestMean[verb] = d
		}
	}
	r.throttleMean = after.mean("rest_client_rate_limiter_duration_seconds")
	r.flinkRESTMean = after.mean("datapilot_flink_rest_request_duration_seconds")
	r.simReads = sim.ReadStats()
	r.peakRSS = op.peakRSS()
	r.operatorCPUSeconds = op.cpuSeconds()
	r.restarts = op.restarted()
	idleByKind := map[string]int{}
	countWrites(audit, operatorAgent, "", idleStart, idleEnd, idleByKind)
	for k, n := range idleByKind {
		if strings.HasSuffix(k, " leases") {
			// Leader election renews its lease every retry period: a
			// cost of the election, not of the clusters.
			r.leaseWrites += n
			continue
		}
		if strings.HasSuffix(k, notFound) {
			// An earlier round's deleted clusters: client-go finishes an
			// event series 6 min after its last event, into a namespace
			// that is gone by then. Not a converged cluster's cost.
			r.idleGone += n
		} else {
			r.idleWrites += n
		}
		r.idleByKind = append(r.idleByKind, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(r.idleByKind)

	// Phase 3: takeover. A standby waits on the lease; the leader dies
	// without releasing it.
	fmt.Println("Takeover: starting a standby, then killing the leader")
	standby, err := startOperator(bin, false, nil, opArgs...)
	if err != nil {
		return err
	}
	defer standby.stop()
	if err := standby.waitMetrics(time.Minute); err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // the standby's caches sync while it waits
	killed := time.Now()
	op.kill()
	total := float64(c.n + c.jobs)
	if err := waitFor(ctx, c.timeout, func() (int, error) {
		m, err := scrape(standby.metricsAddr)
		if err != nil {
			return 1, nil
		}
		if m.sum("controller_runtime_reconcile_total", `controller="flinkcluster"`) > 0 && r.takeover == 0 {
			r.takeover = time.Since(killed)
		}
		r.takeoverResynced = m.sum("controller_runtime_reconcile_total", `controller="flinkcluster"`)
		if r.takeover == 0 {
			return 1, nil
		}
		// The new leader's resync: every cluster reconciled once.
		return int(max(0, total-r.takeoverResynced)), nil
	}); err != nil {
		return fmt.Errorf("takeover: %w", err)
	}
	time.Sleep(2 * time.Second)
	for k, n := range byKindSince(audit, killed) {
		if !strings.HasSuffix(k, " leases") {
			r.takeoverWrites += n
			r.takeoverByKind = append(r.takeoverByKind, fmt.Sprintf("%s %d", k, n))
		}
	}
	if c.jobs > 0 {
		inJobs := map[string]int{}
		countWrites(audit, operatorAgent, last.jobsNS, killed, time.Time{}, inJobs)
		r.takeoverJobStatus = inJobs["patch flinkclusters/status"]
	}
	slices.Sort(r.takeoverByKind)

	// Phase 4: the sharded mode. The leader hands over (a graceful stop)
	// to two sharded replicas, which share the clusters, create more, and
	// lose one of them.
	if c.shardedN > 0 {
		standby.stop()
		if r.sharded, err = shardedPhase(ctx, k8s, c, watch, bin, opArgs, audit, int(total)); err != nil {
			return fmt.Errorf("sharded mode: %w", err)
		}
	}
	return report(c, r)
}

// deleteNamespace deletes ns and waits until it is gone. Its job clusters
// are deleted without a final savepoint: the namespace's deletion removes
// their JobManagers too, after which the operator would hold each one for
// a savepoint it can no longer take (the bench keeps no state).
func deleteNamespace(ctx context.Context, k8s client.Client, c config, ns string) error {
	var fcs v1.FlinkClusterList
	if err := k8s.List(ctx, &fcs, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range fcs.Items {
		fc := &fcs.Items[i]
		if fc.Spec.Job == nil {
			continue
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1.AnnotationDeleteWithoutSavepoint+`":"true"}}}`))
		if err := k8s.Patch(ctx, fc, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
		return err
	}
	fmt.Printf("Waiting for namespace %s to be gone\n", ns)
	return waitFor(ctx, c.timeout, func() (int, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 1, client.IgnoreNotFound(err)
	})
}

func byKindSince(audit string, from time.Time) map[string]int {
	m := map[string]int{}
	countWrites(audit, operatorAgent, "", from, time.Time{}, m)
	return m
}

// simRequests sums the simulator's REST requests per namespace.
func simRequests(sim *flinksim.Simulator) map[string]int {
	out := map[string]int{}
	for _, k := range sim.Engine.Clusters() {
		v, err := sim.Engine.View(k)
		if err != nil {
			continue
		}
		for _, n := range v.Requests {
			out[k.Namespace] += n
		}
	}
	return out
}

// auditPolicy records writes at Metadata level and nothing else.
var auditPolicy = platform.DefaultAuditPolicy

// benchCluster is the benchmark's cluster: a session cluster with one
// JobManager and two TaskManagers, the shape other operators were measured at.
func benchCluster(ns string, i int) *v1.FlinkCluster {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fc-%04d", i), Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{
		Version:       "1.17.1",
		JobManager:    v1.JobManagerSpec{Replicas: 1},
		TaskManager:   v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		Checkpointing: &v1.CheckpointingSpec{Interval: "30s", Retention: 1},
	}
	return fc
}

// jobCluster is the same shape with one declared job, recorded stable
// after one checkpoint (10 s apart), so the phase ends in a steady state.
func jobCluster(ns string, i int, jarURL string) *v1.FlinkCluster {
	fc := benchCluster(ns, i)
	fc.Spec.Checkpointing.Interval = "10s"
	fc.Spec.Job = &v1.JobSpec{JarURI: jarURL, EntryClass: "org.example.Bench", Parallelism: 2,
		State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint}
	fc.Spec.UpgradePolicy = &v1.UpgradePolicy{StableCheckpoints: 1}
	return fc
}

// finalizerWebhookAnswers waits until a dry-run create of fc comes back
// with the finalizer the operator's mutating webhook adds: its CA trusted
// by the API server.
func finalizerWebhookAnswers(ctx context.Context, k8s client.Client, fc *v1.FlinkCluster) error {
	deadline := time.Now().Add(time.Minute)
	for {
		probe := fc.DeepCopy()
		err := k8s.Create(ctx, probe, client.DryRunAll)
		if err == nil && slices.Contains(probe.Finalizers, controller.Finalizer) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator's finalizer webhook did not answer within a minute (last: %v, finalizers %v)", err, probe.Finalizers)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// benchPlatform is what the operator gives every cluster (its
// --state-storage-uri); the baseline builds its children with the same.
var benchPlatform = resources.Platform{Storage: &v1.StorageSpec{URI: platform.StateStorageURI}}

func ensureNamespace(ctx context.Context, k8s client.Client, ns string) error {
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// parallel runs f for 0..n-1 with bounded concurrency.
func parallel(n, workers int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return errors.Join(<-errs)
}

// measureOperator scrapes the operator's metrics now; the function it
// returns scrapes them again and gives what was counted in between, for
// the n clusters of a phase.
func measureOperator(op *operatorProc, n int) func() opDelta {
	restarts := len(op.restarted())
	before, err := scrape(op.metricsAddr)
	return func() opDelta {
		after, err2 := scrape(op.metricsAddr)
		if err != nil || err2 != nil || len(op.restarted()) != restarts {
			return opDelta{}
		}
		return deltaOf(before, after, n)
	}
}

// operatorPhase creates n clusters in ns and waits until every one is
// Available (and, for job clusters, its job RUNNING).
func operatorPhase(ctx context.Context, k8s client.Client, c config, meter cpuMeter, watch *readiness, ns string, n int, job bool) (phase, error) {
	p, err := convergePhase(ctx, k8s, c, meter, watch, ns, n, job, func(i int) client.Object {
		if job {
			return jobCluster(ns, i, c.jarURL)
		}
		return benchCluster(ns, i)
	})
	if err != nil {
		return p, err
	}
	// A job cluster's budget follows its pods' readiness, at the latest
	// Available: the writes are counted once they are all there. A
	// session cluster running nothing gets none.
	converged := time.Now()
	if !job {
		p.allChildren = p.took
		return p, nil
	}
	err = waitFor(ctx, c.timeout, func() (int, error) {
		budgets := &metav1.PartialObjectMetadataList{}
		budgets.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudgetList"))
		err := k8s.List(ctx, budgets, client.InNamespace(ns))
		return n - len(budgets.Items), err
	})
	p.allChildren = p.took + time.Since(converged)
	return p, err
}

// convergePhase creates the n clusters mk makes and waits until the
// bench's watch has seen every one converged, timing it and the CPU spent.
func convergePhase(ctx context.Context, k8s client.Client, c config, meter cpuMeter, watch *readiness, ns string, n int, job bool, mk func(i int) client.Object) (phase, error) {
	p := phase{n: n, job: job}
	cpu0 := meter.sample()
	start := time.Now()
	if err := parallel(n, c.concurrency, func(i int) error { return k8s.Create(ctx, mk(i)) }); err != nil {
		return p, err
	}
	err := waitFor(ctx, c.timeout, func() (int, error) {
		return n - watch.converged(ns, job), nil
	})
	p.took = time.Since(start)
	p.cpu = meter.sample().since(cpu0)
	return p, err
}

// waitFor polls until left() reports nothing left.
func waitFor(ctx context.Context, timeout time.Duration, left func() (int, error)) error {
	deadline := time.Now().Add(timeout)
	last := -1
	for {
		n, err := left()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n != last && last != -1 {
			fmt.Printf("  %d left\n", n)
		}
		last = n
		if time.Now().After(deadline) {
			return fmt.Errorf("%d not ready after %s", n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// rss and peakRSS read /proc: the resident set now and its high-water mark.
func rss(pid int) int64     { return procKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") * 1024 }
func peakRSS(pid int) int64 { return procKB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:") * 1024 }

// procKB reads a "Field: N kB" line of a /proc file.
func procKB(path, field string) int64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field) {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb
		}
	}
	return 0
}

func cpuSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

func report(c config, r results) error {
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var b strings.Builder
	fmt.Fprintf(&b, "\n## N = %d, %s\n\n", c.n, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %s, load average %s at the end; %s. Command: `%s` (operator with %d concurrent reconciles, client with %d parallel creates). Local platform: %d kwok nodes, started in %s.\n\n",
		hostInfo(), runtime.NumCPU(), memInfo(), loadAvg(), runtime.Version(), "go run ./bench "+strings.Join(os.Args[1:], " "), c.workers, c.concurrency, r.nodes, r.startup.Round(time.Millisecond))
	fmt.Fprintf(&b, "%s\n\n", r.builds)
	fmt.Fprintf(&b, "Every figure measured per round is the median over %d interleaved rounds (lowest–highest); each round runs every baseline shape (in turn first), then the floor (when run), then the operator's session and job clusters%s.\n\n", len(r.rounds), peerOrder(c))
	b.WriteString("| Measure | Value | Goal |\n|---|---|---|\n")
	ref := r.shapes[0].name
	for _, sh := range r.shapes {
		took := collect(r.rounds, func(rd round) (float64, bool) { return rd.baselines[sh.name].took.Seconds(), true })
		cp := collect(r.rounds, func(rd round) (float64, bool) { return rd.baselines[sh.name].controlPlaneWrites, true })
		cw := collect(r.rounds, func(rd round) (float64, bool) { return rd.baselines[sh.name].clientWrites, true })
		fmt.Fprintf(&b, "| Baseline, %s: client creates the children of %d clusters directly, all pods ready | %s | |\n", sh.name, c.n, took.format(seconds))
		fmt.Fprintf(&b, "| Baseline, %s: writes per cluster, client / control plane (controllers, scheduler, kubelets) | %s / %s | |\n", sh.name, cw.format(perCluster), cp.format(perCluster))
		cpuRows(&b, "Baseline, "+sh.name, c.n, r.rounds, func(rd round) cpuSample { return rd.baselines[sh.name].cpu })
		if sh.name != ref {
			rel := collect(r.rounds, func(rd round) (float64, bool) {
				return rd.baselines[sh.name].took.Seconds() / rd.baselines[ref].took.Seconds(), true
			})
			fmt.Fprintf(&b, "| Baseline, %s: time relative to the operator's shape, same round | %s | |\n", sh.name, rel.format(ratio))
		}
	}
	row := func(kind string, pick func(round) phase, minimum int) {
		p := pick(r.rounds[len(r.rounds)-1])
		if p.n == 0 {
			return
		}
		what := "all `Available`"
		if p.job {
			what = "all `Available`, jobs RUNNING and recorded stable (one checkpoint)"
		}
		took := collect(r.rounds, func(rd round) (float64, bool) { return pick(rd).took.Seconds(), true })
		fmt.Fprintf(&b, "| %s: %d FlinkClusters created, %s | %s | |\n", kind, p.n, what, took.format(seconds))
		rel := "n/a (the baseline has N = " + strconv.Itoa(c.n) + ")"
		if p.n == c.n {
			rel = collect(r.rounds, func(rd round) (float64, bool) {
				return pick(rd).took.Seconds() / rd.baselines[ref].took.Seconds(), true
			}).format(ratio)
		}
		fmt.Fprintf(&b, "| %s: ratio to the baseline of the operator's shape, same round | %s | ≤ 1.1× at N = 1000 |\n", kind, rel)
		if p.job {
			all := collect(r.rounds, func(rd round) (float64, bool) { return pick(rd).allChildren.Seconds(), true })
			fmt.Fprintf(&b, "| %s: every cluster's last child created (the TaskManagers' budget, once a TaskManager is ready; a list of them every 250 ms) | %s | |\n", kind, all.format(seconds))
		}
		q := func(f func(phase) []time.Duration, at float64) series {
			return collect(r.rounds, func(rd round) (float64, bool) { return quantile(f(pick(rd)), at).Seconds(), len(f(pick(rd))) > 0 })
		}
		lags := func(p phase) []time.Duration { return p.lags }
		ctrl := func(p phase) []time.Duration { return p.ctrlLags }
		opl := func(p phase) []time.Duration { return p.opLags }
		fmt.Fprintf(&b, "| %s: last pod Ready → `Available`, median / p95 (%d clusters%s in the last round) | %s / %s | median ≤ 1 s |\n", kind, len(p.lags), incompleteNote(p.incomplete),
			q(lags, 0.5).format(seconds), q(lags, 0.95).format(seconds))
		fmt.Fprintf(&b, "| %s: last pod Ready → the workloads' status ready (kube-controller-manager) / then → `Available` (operator; negative: before that status), medians | %s / %s | |\n", kind,
			q(ctrl, 0.5).format(seconds), q(opl, 0.5).format(seconds))
		fmt.Fprintf(&b, "| %s: the same two shares, p95 | %s / %s | |\n", kind, q(ctrl, 0.95).format(seconds), q(opl, 0.95).format(seconds))
		api := func(p phase) []time.Duration { return p.apiLags }
		fmt.Fprintf(&b, "| %s: the operator's share of the lag, at the API server: the node agent's last pod status write → the operator's first status write after it (audit log), median / p95 | %s / %s | |\n", kind,
			q(api, 0.5).format(seconds), q(api, 0.95).format(seconds))
		writes := collect(r.rounds, func(rd round) (float64, bool) { return float64(pick(rd).writes) / float64(pick(rd).n), pick(rd).n > 0 })
		fmt.Fprintf(&b, "| %s: operator writes per converged cluster, events included (audit log) | %s (minimum %d) | ≤ 8 |\n", kind, writes.format(perCluster), minimum)
		cpuRows(&b, kind, p.n, r.rounds, func(rd round) cpuSample { return pick(rd).cpu })
		ops := func(f func(opDelta) float64) series {
			return collect(r.rounds, func(rd round) (float64, bool) { return f(pick(rd).ops), pick(rd).ops.ok })
		}
		fmt.Fprintf(&b, "| %s: the operator over the phase (its metrics): full reconciles / Flink REST requests per cluster; reconcile time / queue wait, means | %s / %s; %s / %s | |\n", kind,
			ops(func(d opDelta) float64 { return d.reconciles }).format(perCluster),
			ops(func(d opDelta) float64 { return d.flinkRequests }).format(perCluster),
			ops(func(d opDelta) float64 { return d.reconcileMean.Seconds() }).format(seconds),
			ops(func(d opDelta) float64 { return d.queueWaitMean.Seconds() }).format(seconds))
	}
	// The minimum is what keeps every guarantee (docs/performance-shape.md):
	// a session cluster's four children (no budget while it runs
	// nothing) and one status write; a job
	// cluster's five and three status writes (the job's ID before its
	// submission, RUNNING, its first checkpoint with the spec stable), its
	// finalizer riding on its create (the leader's mutating webhook).
	if r.rounds[len(r.rounds)-1].floor.n > 0 {
		floor := func(rd round) phase { return rd.floor }
		took := collect(r.rounds, func(rd round) (float64, bool) { return rd.floor.took.Seconds(), true })
		fmt.Fprintf(&b, "| Floor: %d FlinkClusters, their children and one status write each, by the client in a namespace the operator ignores, all `Available` | %s | |\n", c.n, took.format(seconds))
		rel := collect(r.rounds, func(rd round) (float64, bool) {
			return rd.floor.took.Seconds() / rd.baselines[ref].took.Seconds(), true
		})
		fmt.Fprintf(&b, "| Floor: ratio to the baseline of the operator's shape, same round (the least any operator of this API could reach) | %s | |\n", rel.format(ratio))
		lag := collect(r.rounds, func(rd round) (float64, bool) { return quantile(rd.floor.lags, 0.5).Seconds(), len(rd.floor.lags) > 0 })
		fmt.Fprintf(&b, "| Floor: last pod Ready → `Available`, median (the client looks every 50 ms) | %s | |\n", lag.format(seconds))
		cpuRows(&b, "Floor", c.n, r.rounds, func(rd round) cpuSample { return floor(rd).cpu })
		over := collect(r.rounds, func(rd round) (float64, bool) {
			return rd.session.took.Seconds() / rd.floor.took.Seconds(), rd.session.n == c.n
		})
		fmt.Fprintf(&b, "| Session clusters: time relative to the floor, same round (the operator's own work) | %s | |\n", over.format(ratio))
	}
	row("Session clusters", func(rd round) phase { return rd.session }, 5)
	if r.rounds[len(r.rounds)-1].peer.n > 0 {
		peerRows(&b, c, r.rounds)
	}
	row("Job clusters", func(rd round) phase { return rd.job }, 8)
	fmt.Fprintf(&b, "| Idle %s: operator writes / full reconciles (lease renewals apart: %d; answered 404, into namespaces of clusters deleted before: %d) | %d / %.0f | 0 / 0 |\n", c.idle, r.leaseWrites, r.idleGone, r.idleWrites, r.idleReconciles)
	last := r.rounds[len(r.rounds)-1]
	fmt.Fprintf(&b, "| Idle: Flink REST requests per cluster per minute, session / job clusters | %.2f / %.2f | |\n", r.idleREST[last.sessNS], r.idleREST[last.jobsNS])
	clusters := c.n + c.jobs
	goal := 60*(1<<20) + 40*1024*int64(clusters)
	fmt.Fprintf(&b, "| Operator memory: after start / peak (%d clusters) | %s / %s | ≤ %s |\n", clusters, mib(r.rssBeforeLoad), mib(r.peakRSS), mib(goal))
	fmt.Fprintf(&b, "| Operator memory per cluster ((peak − start) / clusters) | %.1f KiB | |\n", float64(r.peakRSS-r.rssBeforeLoad)/1024/float64(clusters))
	fmt.Fprintf(&b, "| Operator resident set after start / converged: anonymous (Go heap in use; heap free, not yet returned; stacks) + file-backed (the binary's pages) | %s / %s | |\n", r.memStart, r.memConverged)
	fmt.Fprintf(&b, "| Operator CPU time, until the takeover | %.1f s | |\n", r.operatorCPUSeconds)
	restarts := []string{}
	for _, rs := range r.restarts {
		restarts = append(restarts, fmt.Sprintf("%s (%s)", rs.at.UTC().Format("15:04:05"), rs.status))
	}
	if len(restarts) == 0 {
		restarts = append(restarts, "none")
	}
	fmt.Fprintf(&b, "| Operator exits the bench restarted (a lost lease exits it; memory and CPU time cover every process, the operator's own metrics, idle reconciles and the means below, its last) | %s | none |\n", strings.Join(restarts, "; "))
	fmt.Fprintf(&b, "| Reconcile time, mean / queue wait, mean | %s / %s | |\n", ms(r.reconcileMean), ms(r.queueWaitMean))
	var verbs []string
	for _, v := range slices.Sorted(maps.Keys(r.requestMean)) {
		verbs = append(verbs, fmt.Sprintf("%s %s", v, ms(r.requestMean[v])))
	}
	fmt.Fprintf(&b, "| Operator API request latency, mean by verb; client-side rate limiter wait, mean | %s; %s | |\n", strings.Join(verbs, ", "), ms(r.throttleMean))
	// Unloaded, the simulator answers in under a millisecond, which ms
	// would print as 0s.
	fmt.Fprintf(&b, "| Flink REST request latency (to the simulator), mean | %s | |\n", r.flinkRESTMean.Round(time.Microsecond))
	// A Flink process starts only once a read has seen its pod running:
	// up to about three reads of the delay are the simulator's, on the
	// operator's path and not the baseline's.
	fmt.Fprintf(&b, "| Flink simulator: namespace reads over the run, count / mean / longest (a change is seen at most about three reads late) | %s | |\n", r.simReads.String())
	fmt.Fprintf(&b, "| Takeover: leader killed → the standby's first reconcile | %s | ≤ 20 s |\n", ms(r.takeover))
	fmt.Fprintf(&b, "| Takeover: writes while the new leader resynced %d clusters; of them, job clusters' status (a newer checkpoint, written with retained 1) | %d; %d | 0 beyond one per job cluster |\n",
		clusters, r.takeoverWrites, r.takeoverJobStatus)
	if sr := r.sharded; sr != nil {
		fmt.Fprintf(&b, "| Sharded (%d shards, 2 replicas): of the %d clusters there were, those in each replica's shards (leases), bench-a / bench-b; each one's reconciles since | %d / %d; %.0f / %.0f | about half each |\n",
			benchShards, sr.existing, sr.owned["bench-a"], sr.owned["bench-b"], sr.resynced["bench-a"], sr.resynced["bench-b"])
		fmt.Fprintf(&b, "| Sharded: %d session clusters created under both replicas, all `Available` | %s | |\n", sr.created, ms(sr.took))
		fmt.Fprintf(&b, "| Sharded: clusters each replica wrote for, bench-a / bench-b; written for by both (audit log) | %d / %d; %d | about half each; 0 |\n",
			sr.wroteFor["bench-a"], sr.wroteFor["bench-b"], sr.both)
		fmt.Fprintf(&b, "| Sharded takeover: bench-a killed → bench-b leads every shard / has made as many reconciles as bench-a had clusters (%d) | %s / %s | ≤ 20 s |\n",
			sr.moved, ms(sr.takeoverLead), ms(sr.takeoverReconciled))
		fmt.Fprintf(&b, "| Sharded takeover: writes of the killed replica after the kill; of the survivor for the moved clusters | %d; %d | 0; |\n", sr.killedWritesAfter, sr.survivorWritesMoved)
	}
	for _, p := range []struct {
		kind string
		p    phase
	}{{"Session", r.session}, {"Job", r.job}, {"Spotify operator's session", r.rounds[len(r.rounds)-1].peer}} {
		if p.p.n == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s clusters, last round, operator writes by verb and resource: ", p.kind)
		var parts []string
		for _, k := range sortedKeys(p.p.writesByVerb) {
			parts = append(parts, fmt.Sprintf("%s %d", k, p.p.writesByVerb[k]))
		}
		b.WriteString(strings.Join(parts, ", ") + ".\n")
	}
	if len(r.takeoverByKind) > 0 {
		fmt.Fprintf(&b, "\nWrites of the new leader by verb and resource: %s.\n", strings.Join(r.takeoverByKind, ", "))
	}
	if len(r.idleByKind) > 0 {
		fmt.Fprintf(&b, "\nIdle writes by verb and resource: %s.\n", strings.Join(r.idleByKind, ", "))
	}
	fmt.Print(b.String())
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(c.out); errors.Is(err, os.ErrNotExist) {
		header := "# Benchmark results\n\nWritten by `make bench` (`go run ./bench`); each run appends a table. " +
			"Both phases run on the same local platform in the same run, so the ratio isolates the operator's cost from the control plane's.\n"
		if err := os.WriteFile(c.out, []byte(header), 0o644); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(c.out, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}

func incompleteNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d without a complete pod record", n)
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }

func hostInfo() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOOS + "/" + runtime.GOARCH
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "model name") {
			return strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

func memInfo() string {
	return fmt.Sprintf("%.0f GiB RAM", float64(procKB("/proc/meminfo", "MemTotal:"))/(1<<20))
}

// cpuRows reports a phase's CPU time per cluster: the total of every
// process as the median over the rounds, and the last round's by process.
func cpuRows(b *strings.Builder, kind string, n int, rounds []round, pick func(round) cpuSample) {
	last := pick(rounds[len(rounds)-1])
	if len(last) == 0 {
		return
	}
	total := collect(rounds, func(rd round) (float64, bool) { return 1000 * pick(rd).total() / float64(n), len(pick(rd)) > 0 })
	fmt.Fprintf(b, "| %s: CPU time per cluster, every process, ms | %s | |\n", kind, total.format(func(v float64) string { return fmt.Sprintf("%.0f", v) }))
	fmt.Fprintf(b, "| %s: the same by process, last round, ms per cluster | %s | |\n", kind, last.format(n))
}

// fileLogger writes every log line, verbose ones too, to path; an empty
// path discards them.
func fileLogger(path string) (logr.Logger, func(), error) {
	if path == "" {
		return logr.Discard(), func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return logr.Logger{}, nil, err
	}
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(f, time.Now().UTC().Format(time.RFC3339Nano), prefix, args)
	}, funcr.Options{Verbosity: 1})
	return log, func() { _ = f.Close() }, nil
}

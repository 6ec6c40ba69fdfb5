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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/resources"
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
	flag.StringVar(&c.heapProfile, "heap-profile", "", "when set, the operator serves pprof and its heap profile after each operator phase is written to <this>-session.pb.gz and <this>-job.pb.gz")
	flag.Parse()
	if c.jobs < 0 {
		c.jobs = c.n
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
	startup  time.Duration
	baseline time.Duration
	// session and job are the two operator phases.
	session, job   phase
	baselineWrites int
	idleWrites     int
	leaseWrites    int
	idleByKind     []string
	idleReconciles float64
	// idleREST is the simulator's REST requests per cluster per minute
	// while idle, by namespace.
	idleREST               map[string]float64
	peakRSS, rssBeforeLoad int64
	nodes                  int
	operatorCPUSeconds     float64
	// where a reconcile's time goes, from the operator's own metrics.
	reconcileMean, queueWaitMean time.Duration
	requestMean                  map[string]time.Duration
	throttleMean                 time.Duration
	takeover                     time.Duration
	takeoverWrites               int
	takeoverByKind               []string
	takeoverResynced             float64
}

// phase is one operator phase: N clusters of one kind.
type phase struct {
	n            int
	job          bool
	took         time.Duration
	writes       int
	writesByVerb map[string]int
	lags         []time.Duration
	ctrlLags     []time.Duration
	opLags       []time.Duration
	incomplete   int
}

const (
	sessionNS = "bench-operator"
	jobNS     = "bench-jobs"
)

func run(ctx context.Context, c config) error {
	root := platform.ProjectRoot()
	if err := os.Chdir(root); err != nil {
		return err
	}
	bin := filepath.Join(root, "bin", "datapilot")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s is missing: run 'make build' (make bench does)", bin)
	}
	stateDir, _ := filepath.Abs(c.stateDir)
	audit := filepath.Join(stateDir, "audit", "audit.log")
	if err := os.MkdirAll(filepath.Dir(audit), 0o755); err != nil {
		return err
	}
	_ = os.Remove(audit)
	// Every pod of every phase must fit: three per cluster, with headroom.
	nodes := max(4, (3*(c.n+c.jobs)+199)/200+1)
	var r results
	r.nodes = nodes
	pl, err := platform.Start(ctx, platform.Options{
		FlinkHARole: true,
		// Memory for every pod's request (the Flink default is 1.6 GiB per
		// process), so pods count is the only limit.
		StateDir: stateDir, Nodes: nodes, NodePods: 250, NodeMemory: "1Ti", NodeCPU: "256", AuditLogPath: audit,
		AuditPolicy: auditPolicy, StartTimeout: 5 * time.Minute, Logger: logr.Discard(),
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

	cfg := pl.RESTConfig()
	cfg.UserAgent = benchAgent
	cfg.QPS, cfg.Burst = 500, 1000
	k8s, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}

	sim, err := flinksim.New(pl.RESTConfig(), flinksim.Options{ListenAddr: "127.0.0.1:0"})
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

	// Phase 1: the baseline, without the operator.
	fmt.Printf("Baseline: creating the children of %d clusters directly\n", c.n)
	r.baseline, err = baseline(ctx, k8s, c)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	fmt.Printf("Baseline: all ready in %s\n", r.baseline.Round(time.Millisecond))
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-baseline"}}); err != nil {
		return err
	}
	// The baseline's teardown must not load the control plane while the
	// operator is measured.
	fmt.Println("Baseline: waiting for its namespace to be gone")
	if err := waitFor(ctx, c.timeout, func() (int, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: "bench-baseline"}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 1, client.IgnoreNotFound(err)
	}); err != nil {
		return err
	}
	r.baselineWrites = countWrites(audit, benchAgent, "bench-baseline", time.Time{}, time.Time{}, nil)

	for _, ns := range []string{sessionNS, jobNS} {
		if err := ensureNamespace(ctx, k8s, ns); err != nil {
			return err
		}
	}
	watch, err := watchReadiness(ctx, pl.RESTConfig(), sessionNS, jobNS)
	if err != nil {
		return err
	}

	// Phase 2: the operator, as its own process, so its memory is its own;
	// elected leader, so a standby can take over at the end.
	opArgs := []string{"--kubeconfig", pl.KubeconfigPath(), "--leader-elect=true", "--leader-election-namespace=kube-system",
		"--flink-rest-override", sim.BaseURLTemplate(), "--flink-rest-pod-override", sim.PodURLTemplate(), "--log-level=error",
		"--state-storage-uri=" + platform.StateStorageURI, "--jar-allowed-hosts=" + platform.JarHost,
		"--max-concurrent-reconciles=" + strconv.Itoa(c.workers)}
	op, err := startOperator(bin, c.heapProfile != "", opArgs...)
	if err != nil {
		return err
	}
	defer op.stop()
	if err := op.waitMetrics(time.Minute); err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // leader, caches synced; measured as the idle footprint
	r.rssBeforeLoad = rss(op.pid())

	fmt.Printf("Operator: creating %d session clusters\n", c.n)
	if r.session, err = operatorPhase(ctx, k8s, c, sessionNS, c.n, false); err != nil {
		return fmt.Errorf("operator, session clusters: %w", err)
	}
	fmt.Printf("Operator: all session clusters Available in %s\n", r.session.took.Round(time.Millisecond))
	if err := saveHeapProfile(op.pprofAddr, c.heapProfile, "session"); err != nil {
		return err
	}
	if c.jobs > 0 {
		fmt.Printf("Operator: creating %d job clusters\n", c.jobs)
		if r.job, err = operatorPhase(ctx, k8s, c, jobNS, c.jobs, true); err != nil {
			return fmt.Errorf("operator, job clusters: %w", err)
		}
		fmt.Printf("Operator: all job clusters Available, jobs RUNNING and recorded stable, in %s\n", r.job.took.Round(time.Millisecond))
		if err := saveHeapProfile(op.pprofAddr, c.heapProfile, "job"); err != nil {
			return err
		}
	}

	// Let the last status writes land, then count an idle window.
	time.Sleep(5 * time.Second)
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
	for ns, n := range map[string]int{sessionNS: c.n, jobNS: c.jobs} {
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
	r.peakRSS = peakRSS(op.pid())
	r.operatorCPUSeconds = cpuSeconds(op.pid())
	r.session.writesByVerb, r.job.writesByVerb = map[string]int{}, map[string]int{}
	r.session.writes = countWrites(audit, operatorAgent, sessionNS, time.Time{}, idleStart, r.session.writesByVerb)
	r.job.writes = countWrites(audit, operatorAgent, jobNS, time.Time{}, idleStart, r.job.writesByVerb)
	idleByKind := map[string]int{}
	countWrites(audit, operatorAgent, "", idleStart, idleEnd, idleByKind)
	for k, n := range idleByKind {
		if strings.HasSuffix(k, " leases") {
			// Leader election renews its lease every retry period: a
			// cost of the election, not of the clusters.
			r.leaseWrites += n
			continue
		}
		r.idleWrites += n
		r.idleByKind = append(r.idleByKind, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(r.idleByKind)
	r.session.lags, r.session.ctrlLags, r.session.opLags, r.session.incomplete = watch.lags(sessionNS, 3)
	r.job.lags, r.job.ctrlLags, r.job.opLags, r.job.incomplete = watch.lags(jobNS, 3)

	// Phase 3: takeover. A standby waits on the lease; the leader dies
	// without releasing it.
	fmt.Println("Takeover: starting a standby, then killing the leader")
	standby, err := startOperator(bin, false, opArgs...)
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
	slices.Sort(r.takeoverByKind)
	return report(c, r)
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

// baseline creates exactly the objects the operator would, owned by
// nothing, and waits until every JobManager and TaskManager is ready.
func baseline(ctx context.Context, k8s client.Client, c config) (time.Duration, error) {
	const ns = "bench-baseline"
	if err := ensureNamespace(ctx, k8s, ns); err != nil {
		return 0, err
	}
	start := time.Now()
	err := parallel(c.n, c.concurrency, func(i int) error {
		fc := benchCluster(ns, i)
		d, err := resources.Build(fc, benchPlatform)
		if err != nil {
			return err
		}
		// Owner references need a live owner; the baseline has none.
		d.ConfigMap.OwnerReferences = nil
		d.JobManager.OwnerReferences = nil
		d.JobManagerService.OwnerReferences = nil
		d.TaskManager.OwnerReferences = nil
		d.TaskManagerService.OwnerReferences = nil
		d.TaskManagerBudget.OwnerReferences = nil
		for _, obj := range []interface {
			IsApplyConfiguration()
		}{d.ConfigMap, d.JobManagerService, d.JobManager, d.TaskManagerService, d.TaskManager, d.TaskManagerBudget} {
			if err := k8s.Apply(ctx, obj, client.FieldOwner(benchAgent)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	err = waitFor(ctx, c.timeout, func() (int, error) {
		var deps appsv1.DeploymentList
		var sts appsv1.StatefulSetList
		if err := k8s.List(ctx, &deps, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		if err := k8s.List(ctx, &sts, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		ready := map[string]int{}
		for _, d := range deps.Items {
			if d.Status.ReadyReplicas >= 1 {
				ready[d.Labels[resources.LabelInstance]]++
			}
		}
		for _, s := range sts.Items {
			if s.Status.ReadyReplicas == *s.Spec.Replicas {
				ready[s.Labels[resources.LabelInstance]]++
			}
		}
		n := 0
		for _, v := range ready {
			if v == 2 {
				n++
			}
		}
		return c.n - n, nil
	})
	return time.Since(start), err
}

// operatorPhase creates n clusters in ns and waits until every one is
// Available (and, for job clusters, its job RUNNING).
func operatorPhase(ctx context.Context, k8s client.Client, c config, ns string, n int, job bool) (phase, error) {
	p := phase{n: n, job: job}
	start := time.Now()
	err := parallel(n, c.concurrency, func(i int) error {
		if job {
			return k8s.Create(ctx, jobCluster(ns, i, c.jarURL))
		}
		return k8s.Create(ctx, benchCluster(ns, i))
	})
	if err != nil {
		return p, err
	}
	err = waitFor(ctx, c.timeout, func() (int, error) {
		ready, err := countAvailable(ctx, k8s, ns, job)
		return n - ready, err
	})
	p.took = time.Since(start)
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
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var b strings.Builder
	fmt.Fprintf(&b, "\n## N = %d, %s\n\n", c.n, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %s, load average %s at the end; %s. Command: `%s` (operator with %d concurrent reconciles, client with %d parallel creates). Local platform: %d kwok nodes, started in %s.\n\n",
		hostInfo(), runtime.NumCPU(), memInfo(), loadAvg(), runtime.Version(), "go run ./bench "+strings.Join(os.Args[1:], " "), c.workers, c.concurrency, r.nodes, r.startup.Round(time.Millisecond))
	b.WriteString("| Measure | Value | Goal |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| Baseline: client creates the children of %d clusters directly, all pods ready | %s | |\n", c.n, ms(r.baseline))
	row := func(kind string, p phase, minimum int) {
		if p.n == 0 {
			return
		}
		what := "all `Available`"
		if p.job {
			what = "all `Available`, jobs RUNNING and recorded stable (one checkpoint)"
		}
		fmt.Fprintf(&b, "| %s: %d FlinkClusters created, %s | %s | |\n", kind, p.n, what, ms(p.took))
		ratio := "n/a (the baseline has N = " + strconv.Itoa(c.n) + ")"
		if p.n == c.n {
			ratio = fmt.Sprintf("%.2f×", p.took.Seconds()/r.baseline.Seconds())
		}
		fmt.Fprintf(&b, "| %s: ratio to the baseline | %s | ≤ 1.1× at N = 1000 |\n", kind, ratio)
		fmt.Fprintf(&b, "| %s: last pod Ready → `Available`, median / p95 (%d clusters%s) | %s / %s | median ≤ 1 s |\n", kind, len(p.lags), incompleteNote(p.incomplete),
			ms(quantile(p.lags, 0.5)), ms(quantile(p.lags, 0.95)))
		fmt.Fprintf(&b, "| %s: of which last pod Ready → Deployment and StatefulSet status ready (kube-controller-manager) / then → `Available` (operator), medians | %s / %s | |\n", kind,
			ms(quantile(p.ctrlLags, 0.5)), ms(quantile(p.opLags, 0.5)))
		fmt.Fprintf(&b, "| %s: the same two shares, p95 | %s / %s | |\n", kind,
			ms(quantile(p.ctrlLags, 0.95)), ms(quantile(p.opLags, 0.95)))
		fmt.Fprintf(&b, "| %s: operator writes per converged cluster, events included (audit log) | %.2f (minimum %d) | ≤ 8 |\n", kind, float64(p.writes)/float64(p.n), minimum)
	}
	row("Session clusters", r.session, 7)
	row("Job clusters", r.job, 7)
	fmt.Fprintf(&b, "| Idle %s: operator writes / full reconciles (lease renewals apart: %d) | %d / %.0f | 0 / 0 |\n", c.idle, r.leaseWrites, r.idleWrites, r.idleReconciles)
	fmt.Fprintf(&b, "| Idle: Flink REST requests per cluster per minute, session / job clusters | %.2f / %.2f | |\n", r.idleREST[sessionNS], r.idleREST[jobNS])
	clusters := c.n + c.jobs
	goal := 60*(1<<20) + 40*1024*int64(clusters)
	fmt.Fprintf(&b, "| Operator memory: after start / peak (%d clusters) | %s / %s | ≤ %s |\n", clusters, mib(r.rssBeforeLoad), mib(r.peakRSS), mib(goal))
	fmt.Fprintf(&b, "| Operator memory per cluster ((peak − start) / clusters) | %.1f KiB | |\n", float64(r.peakRSS-r.rssBeforeLoad)/1024/float64(clusters))
	fmt.Fprintf(&b, "| Operator CPU time, until the takeover | %.1f s | |\n", r.operatorCPUSeconds)
	fmt.Fprintf(&b, "| Reconcile time, mean / queue wait, mean | %s / %s | |\n", ms(r.reconcileMean), ms(r.queueWaitMean))
	var verbs []string
	for _, v := range slices.Sorted(maps.Keys(r.requestMean)) {
		verbs = append(verbs, fmt.Sprintf("%s %s", v, ms(r.requestMean[v])))
	}
	fmt.Fprintf(&b, "| Operator API request latency, mean by verb; client-side rate limiter wait, mean | %s; %s | |\n", strings.Join(verbs, ", "), ms(r.throttleMean))
	fmt.Fprintf(&b, "| Takeover: leader killed → the standby's first reconcile | %s | ≤ 20 s |\n", ms(r.takeover))
	fmt.Fprintf(&b, "| Takeover: writes while the new leader resynced %d clusters | %d | 0 |\n", clusters, r.takeoverWrites)
	for _, p := range []struct {
		kind string
		p    phase
	}{{"Session", r.session}, {"Job", r.job}} {
		if p.p.n == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s clusters, operator writes by verb and resource: ", p.kind)
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

// Command bench is Datapilot's scale benchmark (make bench). On one local
// platform it measures, in the same run:
//
//   - the baseline: a client creating each cluster's child objects itself,
//     until every JobManager and TaskManager pod is ready;
//   - the operator: the same number of FlinkClusters, until every one is
//     Available;
//
// and reports the ratio of the two times, the operator's API writes per
// converged cluster (from the API server's audit log) against the minimum,
// its writes during an idle minute afterwards, and its peak memory.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
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
	"k8s.io/apimachinery/pkg/api/meta"
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
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 100, "number of FlinkClusters (1 JobManager + 2 TaskManagers each)")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "idle window after convergence in which writes are counted")
	flag.DurationVar(&c.timeout, "timeout", 20*time.Minute, "deadline for each phase")
	flag.IntVar(&c.concurrency, "concurrency", 16, "parallel creates of the benchmark client")
	flag.IntVar(&c.workers, "workers", 10, "the operator's MAX_CONCURRENT_RECONCILES")
	flag.StringVar(&c.out, "out", "bench/RESULTS.md", "Markdown file the results table is appended to")
	flag.StringVar(&c.stateDir, "state-dir", ".datapilot-bench", "state directory of the benchmark's local platform")
	flag.Parse()
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
	startup                time.Duration
	baseline, withOperator time.Duration
	baselineWrites         int
	operatorWrites         int
	writesByVerb           map[string]int
	idleWrites             int
	peakRSS, rssBeforeLoad int64
	nodes                  int
	operatorCPUSeconds     float64
}

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
	// Every pod of both phases must fit: three per cluster, with headroom.
	nodes := max(4, (3*c.n+199)/200+1)
	var r results
	r.nodes = nodes
	pl, err := platform.Start(ctx, platform.Options{
		StateDir: stateDir, Nodes: nodes, NodePods: 250, AuditLogPath: audit,
		AuditPolicy: auditPolicy, StartTimeout: 5 * time.Minute, Logger: logr.Discard(),
	})
	if err != nil {
		return err
	}
	defer func() { _ = pl.Stop() }()
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

	// Phase 2: the operator, as its own process, so its memory is its own.
	op := exec.CommandContext(ctx, bin, "operator",
		"--kubeconfig", pl.KubeconfigPath(), "--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=0",
		"--flink-rest-override", sim.BaseURLTemplate(), "--flink-rest-pod-override", sim.PodURLTemplate(), "--log-level=error",
		"--max-concurrent-reconciles="+strconv.Itoa(c.workers))
	op.Stdout, op.Stderr = os.Stdout, os.Stderr
	op.Cancel = func() error { return op.Process.Signal(syscall.SIGTERM) }
	if err := op.Start(); err != nil {
		return err
	}
	defer func() { _ = op.Cancel(); _ = op.Wait() }()
	time.Sleep(3 * time.Second) // caches synced; measured as the idle footprint
	r.rssBeforeLoad = rss(op.Process.Pid)

	fmt.Printf("Operator: creating %d FlinkClusters\n", c.n)
	r.withOperator, err = withOperator(ctx, k8s, c)
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	fmt.Printf("Operator: all Available in %s\n", r.withOperator.Round(time.Millisecond))

	// Let the last status writes land, then count an idle window.
	time.Sleep(5 * time.Second)
	idleStart := time.Now()
	fmt.Printf("Idle: counting the operator's writes for %s\n", c.idle)
	select {
	case <-time.After(c.idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	idleEnd := time.Now()
	r.peakRSS = peakRSS(op.Process.Pid)
	r.operatorCPUSeconds = cpuSeconds(op.Process.Pid)
	r.writesByVerb = map[string]int{}
	r.operatorWrites = countWrites(audit, operatorAgent, "bench-operator", time.Time{}, idleStart, r.writesByVerb)
	r.idleWrites = countWrites(audit, operatorAgent, "", idleStart, idleEnd, nil)
	return report(c, r)
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
		d, err := resources.Build(fc, resources.Platform{})
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

func withOperator(ctx context.Context, k8s client.Client, c config) (time.Duration, error) {
	const ns = "bench-operator"
	if err := ensureNamespace(ctx, k8s, ns); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := parallel(c.n, c.concurrency, func(i int) error { return k8s.Create(ctx, benchCluster(ns, i)) }); err != nil {
		return 0, err
	}
	err := waitFor(ctx, c.timeout, func() (int, error) {
		var list v1.FlinkClusterList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		n := 0
		for _, fc := range list.Items {
			if meta.IsStatusConditionTrue(fc.Status.Conditions, v1.ConditionAvailable) {
				n++
			}
		}
		return c.n - n, nil
	})
	return time.Since(start), err
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

type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// countWrites counts audited writes by user agent prefix, namespace (empty:
// any) and time window (zero: open), optionally by verb and resource.
func countWrites(path, agentPrefix, namespace string, from, to time.Time, byKind map[string]int) int {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, agentPrefix) {
			continue
		}
		if namespace != "" && (e.ObjectRef == nil || e.ObjectRef.Namespace != namespace) {
			continue
		}
		at := e.StageTimestamp.Time
		if (!from.IsZero() && at.Before(from)) || (!to.IsZero() && !at.Before(to)) {
			continue
		}
		n++
		if byKind != nil && e.ObjectRef != nil {
			k := e.Verb + " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				k += "/" + e.ObjectRef.Subresource
			}
			byKind[k]++
		}
	}
	return n
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
	// The minimum: the six children and one status write per cluster.
	const minimum = 7
	perCluster := float64(r.operatorWrites) / float64(c.n)
	var b strings.Builder
	fmt.Fprintf(&b, "\n## N = %d, %s\n\n", c.n, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %s; %s. Command: `%s` (operator with %d concurrent reconciles, client with %d parallel creates). Local platform: %d kwok nodes, started in %s.\n\n",
		hostInfo(), runtime.NumCPU(), memInfo(), runtime.Version(), "go run ./bench "+strings.Join(os.Args[1:], " "), c.workers, c.concurrency, r.nodes, r.startup.Round(time.Millisecond))
	b.WriteString("| Measure | Value |\n|---|---|\n")
	fmt.Fprintf(&b, "| Baseline: client creates the children directly, all pods ready | %s |\n", r.baseline.Round(time.Millisecond))
	fmt.Fprintf(&b, "| Datapilot: FlinkClusters created, all `Available` | %s |\n", r.withOperator.Round(time.Millisecond))
	fmt.Fprintf(&b, "| Ratio Datapilot / baseline | %.2f× |\n", r.withOperator.Seconds()/r.baseline.Seconds())
	fmt.Fprintf(&b, "| Baseline client writes per cluster | %.2f |\n", float64(r.baselineWrites)/float64(c.n))
	fmt.Fprintf(&b, "| Operator writes per converged cluster (audit log) | %.2f (minimum %d: 6 children + 1 status) |\n", perCluster, minimum)
	fmt.Fprintf(&b, "| Operator writes during %s idle | %d |\n", c.idle, r.idleWrites)
	fmt.Fprintf(&b, "| Operator memory: after start / peak | %s / %s |\n", mib(r.rssBeforeLoad), mib(r.peakRSS))
	fmt.Fprintf(&b, "| Operator memory per cluster ((peak − start) / N) | %.1f KiB |\n", float64(r.peakRSS-r.rssBeforeLoad)/1024/float64(c.n))
	fmt.Fprintf(&b, "| Operator CPU time, whole run | %.1f s |\n", r.operatorCPUSeconds)
	b.WriteString("\nOperator writes by verb and resource: ")
	var parts []string
	for _, k := range sortedKeys(r.writesByVerb) {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.writesByVerb[k]))
	}
	b.WriteString(strings.Join(parts, ", ") + ".\n")
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

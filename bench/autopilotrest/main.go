// Command autopilotrest measures the autopilot's Flink REST cost (make bench
// runs it after the scale benchmark). On one local platform, with the
// operator's production settings, it runs job clusters in the same run:
// without spec.autoscaler (the baseline), and with it on jobs of 3 and of
// 12 vertices; it counts the requests the Flink REST simulator answers for
// each cluster over a measured window and reports them per cluster per
// minute. The autopilot's cost must not grow with the job's size.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/resources"
)

func main() {
	window := flag.Duration("window", time.Minute, "how long requests are counted")
	perKind := flag.Int("clusters", 3, "clusters of each kind")
	out := flag.String("out", "bench/AUTOPILOT_REST.md", "results file to append to")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *window, *perKind, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/autopilotrest:", err)
		os.Exit(1)
	}
}

// kind is one shape of cluster the benchmark runs.
type kind struct {
	name     string
	vertices int
	auto     bool
}

var kinds = []kind{
	{"baseline: job, no autoscaler (3 vertices)", 3, false},
	{"autoscaler, 3 vertices", 3, true},
	{"autoscaler, 12 vertices", 12, true},
}

func workload(vertices int) flinksim.Workload {
	w := flinksim.Workload{Rate: flinksim.RateShape{Kind: "constant", Base: 300}}
	for i := range vertices {
		name := fmt.Sprintf("Map %d", i)
		switch i {
		case 0:
			name = "Source: orders"
		case vertices - 1:
			name = "Sink: warehouse"
		}
		w.Vertices = append(w.Vertices, flinksim.VertexModel{Name: name, CapacityPerSubtask: 1000})
	}
	return w
}

func cluster(ns, name string, k kind, jar string) *v1.FlinkCluster {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{
		Version:       "1.19.3",
		TaskManager:   v1.TaskManagerSpec{Replicas: 1, Slots: 2},
		Checkpointing: &v1.CheckpointingSpec{Interval: "30s"},
		Job:           &v1.JobSpec{JarURI: jar, Parallelism: 2},
	}
	if k.auto {
		fc.Spec.Autoscaler = &v1.AutoscalerSpec{} // every default: 15 s samples
	}
	return fc
}

func run(ctx context.Context, window time.Duration, perKind int, out string) error {
	root := platform.ProjectRoot()
	if err := os.Chdir(root); err != nil {
		return err
	}
	bin := filepath.Join(root, "bin", "datapilot")
	state, err := os.MkdirTemp("", "datapilot-bench-autopilot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	pl, err := platform.Start(ctx, platform.Options{StateDir: state, FlinkHARole: true, StartTimeout: 5 * time.Minute, Logger: logr.Discard()})
	if err != nil {
		return err
	}
	defer func() { _ = pl.Stop() }()
	k8s, err := client.New(pl.RESTConfig(), client.Options{Scheme: operator.Scheme()})
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
	jar := "http://" + sim.Addr() + "/artifacts/job.jar"

	// The operator with its production defaults (RECONCILE_INTERVAL 30s).
	op := exec.CommandContext(ctx, bin, "operator", "--kubeconfig", pl.KubeconfigPath(), "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--log-level=error",
		"--flink-rest-override", sim.BaseURLTemplate(), "--flink-rest-pod-override", sim.PodURLTemplate(),
		"--state-storage-uri="+platform.StateStorageURI)
	op.Stdout, op.Stderr = os.Stdout, os.Stderr
	op.Cancel = func() error { return op.Process.Signal(syscall.SIGTERM) }
	if err := op.Start(); err != nil {
		return err
	}
	defer func() { _ = op.Cancel(); _ = op.Wait() }()

	const ns = "bench-autopilot"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	keys := map[string][]flinksim.ClusterKey{}
	for ki, k := range kinds {
		for i := range perKind {
			name := fmt.Sprintf("k%d-%d", ki, i)
			key := flinksim.ClusterKey{Namespace: ns, Name: resources.JobManagerName(&v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})}
			if err := sim.Engine.SetWorkload(key, workload(k.vertices)); err != nil {
				return err
			}
			if err := k8s.Create(ctx, cluster(ns, name, k, jar)); err != nil {
				return err
			}
			keys[k.name] = append(keys[k.name], key)
		}
	}
	fmt.Printf("Waiting for %d jobs to run\n", perKind*len(kinds))
	deadline := time.Now().Add(5 * time.Minute)
	for {
		running := 0
		for _, ks := range keys {
			for _, key := range ks {
				if v, err := sim.Engine.View(key); err == nil && len(v.Jobs) > 0 && v.Jobs[len(v.Jobs)-1].State == flink.JobRunning {
					running++
				}
			}
		}
		if running == perKind*len(kinds) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d jobs run after 5 minutes", running)
		}
		time.Sleep(2 * time.Second)
	}
	// Past the first samples (the source's metric names, listed once).
	time.Sleep(45 * time.Second)
	before := counts(sim, keys)
	fmt.Printf("Counting Flink REST requests for %s\n", window)
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	}
	after := counts(sim, keys)
	return report(out, window, perKind, before, after)
}

// counts are the simulator's request counts per kind of cluster, by
// endpoint, summed over its clusters.
func counts(sim *flinksim.Simulator, keys map[string][]flinksim.ClusterKey) map[string]map[string]int {
	out := map[string]map[string]int{}
	for name, ks := range keys {
		out[name] = map[string]int{}
		for _, key := range ks {
			v, err := sim.Engine.View(key)
			if err != nil {
				continue
			}
			for ep, n := range v.Requests {
				out[name][ep] += n
			}
		}
	}
	return out
}

func report(out string, window time.Duration, perKind int, before, after map[string]map[string]int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Autopilot REST cost, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "%d clusters of each kind, Flink 1.19.3, counted over %s; requests per cluster per minute.\n\n", perKind, window)
	fmt.Fprintf(&b, "| Cluster | All requests | Metric requests | By endpoint |\n|---|---|---|---|\n")
	perMin := func(n int) float64 { return float64(n) / float64(perKind) / window.Minutes() }
	for _, k := range kinds {
		total, metrics := 0, 0
		var parts []string
		for _, ep := range slices.Sorted(maps.Keys(after[k.name])) {
			n := after[k.name][ep] - before[k.name][ep]
			if n == 0 {
				continue
			}
			total += n
			if strings.Contains(ep, "metrics") {
				metrics += n
			}
			parts = append(parts, fmt.Sprintf("`%s` %.1f", ep, perMin(n)))
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %s |\n", k.name, perMin(total), perMin(metrics), strings.Join(parts, ", "))
	}
	fmt.Print(b.String())
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}

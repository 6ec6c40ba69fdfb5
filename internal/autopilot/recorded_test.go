package autopilot_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/autopilot"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// The histories here are recorded from the Flink REST simulator on a fake
// clock: a job runs the workload, and every 5 s the test reads what the
// operator reads (GET /jobs/{jobid}, then the operator's own Sampler:
// each vertex's aggregated subtask metrics, through the MetricFetcher's
// lag and Flink's 60 s meters) and feeds it to the decision.

var recordKey = flinksim.ClusterKey{Namespace: "team-a", Name: "orders"}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// recorder is one simulated cluster and the operator's view of it.
type recorder struct {
	t       *testing.T
	e       *flinksim.Engine
	clk     *clock
	c       *flink.Client
	job     string
	sampler autopilot.Sampler
	history []autopilot.Sample
}

func record(t *testing.T, w flinksim.Workload, parallelism int32) *recorder {
	t.Helper()
	clk := &clock{t: time.Unix(1700000000, 0)}
	e := flinksim.NewEngine(flinksim.EngineOptions{Clock: clk.now, InitializationDelay: time.Second, DeployDelay: time.Second,
		CheckpointDelay: time.Second, SavepointDelay: time.Second, CancelDelay: time.Second})
	tms := make([]string, 8)
	for i := range tms {
		tms[i] = "tm-" + string(rune('a'+i))
	}
	e.Observe(recordKey, flinksim.SimpleCluster{Version: "1.19.1", JobManager: "jm-1", TaskManagers: tms,
		Settings: map[string]string{"taskmanager.numberOfTaskSlots": "2", "execution.checkpointing.interval": "10s",
			"state.checkpoints.dir": "s3://bucket/checkpoints", "state.savepoints.dir": "s3://bucket/savepoints"},
		Env: map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-presto-1.19.1.jar"}}.Observation())
	if err := e.SetWorkload(recordKey, w); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(flinksim.NewHandler(e, logr.Discard()))
	t.Cleanup(srv.Close)
	r := &recorder{t: t, e: e, clk: clk, c: flink.NewClient(srv.URL+"/clusters/"+recordKey.Namespace+"/"+recordKey.Name, srv.Client())}
	r.submit(parallelism)
	return r
}

func (r *recorder) submit(parallelism int32) {
	r.t.Helper()
	if r.job != "" {
		// One consumer of the topic at a time: the old job goes first.
		if err := r.e.CancelJob(recordKey, r.job, ""); err != nil {
			r.t.Fatal(err)
		}
		r.clk.t = r.clk.t.Add(2 * time.Second)
	}
	up, err := r.e.UploadJar(recordKey, "job.jar")
	if err != nil {
		r.t.Fatal(err)
	}
	run, err := r.e.RunJar(recordKey, up.Filename[strings.LastIndex(up.Filename, "/")+1:], flink.JarRunRequest{Parallelism: parallelism})
	if err != nil {
		r.t.Fatal(err)
	}
	r.job, r.sampler = run.JobID, autopilot.Sampler{}
	r.clk.t = r.clk.t.Add(2 * time.Second)
}

// run samples every 5 s for d and returns the history kept for the
// policy's window.
func (r *recorder) run(d time.Duration, p autopilot.Policy) {
	r.t.Helper()
	ctx := context.Background()
	for end := r.clk.t.Add(d); r.clk.t.Before(end); r.clk.t = r.clk.t.Add(5 * time.Second) {
		job, err := r.c.Job(ctx, r.job)
		if err != nil {
			r.t.Fatal(err)
		}
		s, _, err := r.sampler.Sample(ctx, r.c, r.job, job.Vertices, r.clk.t)
		if err != nil {
			r.t.Fatal(err)
		}
		if len(s.Vertices) > 0 {
			r.history = autopilot.Append(r.history, s, p.Window+p.Stabilization)
		}
	}
}

func (r *recorder) evaluate(p autopilot.Policy, since time.Time) autopilot.Recommendation {
	return autopilot.Evaluate(r.history, p, since, r.clk.t)
}

func chain(rate flinksim.RateShape, skew float64) flinksim.Workload {
	return flinksim.Workload{Vertices: []flinksim.VertexModel{
		{Name: "Source: orders", CapacityPerSubtask: 5000},
		{Name: "Enrich", CapacityPerSubtask: 100, Skew: skew},
		{Name: "Sink: warehouse"},
	}, Rate: rate}
}

func defaults() autopilot.Policy {
	p, _ := autopilot.PolicyFor(&v1.FlinkClusterSpec{TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2}, Job: &v1.JobSpec{}, Autoscaler: &v1.AutoscalerSpec{}})
	return p
}

func d(v time.Duration) flinksim.Duration { return flinksim.Duration{Duration: v} }

func TestRecordedHistories(t *testing.T) {
	p := defaults()
	for _, tc := range []struct {
		name        string
		w           flinksim.Workload
		parallelism int32
		want        autopilot.Kind
		minTo       int32
		maxTo       int32
		// enrich is Enrich's own target; the source and the sink, which
		// the workload never saturates, go to others (0: not checked).
		enrich, others int32
	}{
		// 150 → 600 records/s on 2 subtasks of 100: the backlog grows.
		{"ramp", chain(flinksim.RateShape{Kind: "ramp", Base: 150, Peak: 600, After: d(time.Minute), Ramp: d(5 * time.Minute)}, 0), 2, autopilot.Up, 9, 16, 0, 2},
		// 500 → 100 on 8 subtasks: 12% busy.
		{"drop", chain(flinksim.RateShape{Kind: "drop", Base: 500, Peak: 100, After: d(time.Minute), Ramp: d(time.Minute)}, 0), 8, autopilot.Down, 2, 2, 2, 1},
		// 480–640 on 8 subtasks of 100: 60–80%, within 50–90%: Enrich
		// keeps 8, the idle source and sink scale down.
		{"oscillation inside the band", chain(flinksim.RateShape{Kind: "oscillate", Base: 480, Peak: 640, Period: d(2 * time.Minute)}, 0), 8, autopilot.Down, 8, 8, 8, 1},
		// 420 on 8 subtasks with a hot key (15% beyond an even share):
		// the hottest subtask saturates while the average is in the band,
		// so Enrich keeps 8.
		{"skew", chain(flinksim.RateShape{Kind: "constant", Base: 420}, 0.15), 8, autopilot.Down, 8, 8, 8, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := record(t, tc.w, tc.parallelism)
			start := r.clk.t
			r.run(p.Stabilization+p.Window+time.Minute, p)
			rec := r.evaluate(p, start.Add(p.Stabilization))
			if rec.Kind != tc.want || rec.To < tc.minTo || rec.To > tc.maxTo {
				t.Fatalf("%s %d→%d, want %s to %d..%d: %s (%+v)", rec.Kind, rec.From, rec.To, tc.want, tc.minTo, tc.maxTo, rec.Message, rec.Inputs)
			}
			t.Logf("%s %d→%d: %s", rec.Kind, rec.From, rec.To, rec.Message)
			if rec.Inputs.Bottleneck != "Enrich" {
				t.Errorf("bottleneck %q", rec.Inputs.Bottleneck)
			}
			for _, n := range rec.PerVertex {
				want := tc.enrich
				if n.Name != "Enrich" {
					// While the backlog drains, nothing scales down.
					want = tc.others
				}
				if want != 0 && n.To != want {
					t.Errorf("vertex %s to %d, want %d (%s)", n.Name, n.To, want, n.Bound)
				}
				if n.Name == "Enrich" && (tc.name == "skew") != n.Skewed {
					t.Errorf("Enrich skewed %v: %+v", n.Skewed, n)
				}
			}
		})
	}
}

// A hot key carrying half of Enrich's input: doubling the parallelism
// takes the hottest subtask's share from 75% to 62.5%, a fifth more
// throughput against the double expected. Recorded before and after the
// rescale; the second decision stops: Enrich's average is back within the
// band at the target rate while its hottest subtask is saturated, which
// is the hot key, Skewed (more subtasks would not relieve it).
func TestRecordedRescaleThatDoesNotHelp(t *testing.T) {
	p := defaults()
	w := chain(flinksim.RateShape{Kind: "constant", Base: 400}, 0.5)
	// Divisors of 120 are close to one another: the scale-up goes to
	// what Enrich needs, not to the next power of two (of 128).
	w.Vertices[1].MaxParallelism = 120
	r := record(t, w, 2)
	start := r.clk.t
	r.run(p.Stabilization+p.Window+time.Minute, p)
	rec := r.evaluate(p, start.Add(p.Stabilization))
	if rec.Kind != autopilot.Up {
		t.Fatalf("before: %s %+v: %s", rec.Kind, rec.Inputs, rec.Message)
	}
	out := autopilot.Decide(autopilot.Input{Policy: p, Now: r.clk.t, Rec: rec})
	if out.Apply == 0 {
		t.Fatalf("no scale-up: %+v", out.Condition)
	}
	st := out.Status
	// The lifecycle resubmits at the new parallelism (from a savepoint;
	// the backlog is the workload's and stays).
	r.submit(out.Apply)
	autopilot.Settle(&st, p, r.clk.t, autopilot.Running{Parallelism: out.Apply}, false, false, "", 0)
	restarted := r.clk.t
	r.run(p.Stabilization+p.Window+time.Minute, p)
	rec = r.evaluate(p, restarted.Add(p.Stabilization))
	out = autopilot.Decide(autopilot.Input{Policy: p, Now: r.clk.t, Rec: rec, Status: st})
	t.Logf("%s", out.Condition.Message)
	if out.Apply != 0 || out.Condition.Reason != string(autopilot.Skewed) || !out.Recorded || out.Status.Decisions[0].Result != autopilot.ResultRefused {
		t.Fatalf("after %d→%d: %s %+v; outcome %+v", st.Decisions[0].From, st.Decisions[0].To, rec.Kind, rec.Inputs, out.Condition)
	}
}

package flinksim

import (
	"fmt"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// adaptive is a cluster of the given minor and TaskManagers (two slots
// each) running the AdaptiveScheduler, with checkpoints every 10 s.
func adaptive(version string, n int) SimpleCluster {
	sc := simple(tms(n), map[string]string{"jobmanager.scheduler": "adaptive"})
	sc.Version, sc.Env = version, s3Plugin(version)
	return sc
}

func requirements(j *flink.JobDetailsInfo, lower, upper int) string {
	body := "{"
	for i, v := range j.Vertices {
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`%q: {"parallelism": {"lowerBound": %d, "upperBound": %d}}`, v.ID, lower, upper)
	}
	return body + "}"
}

func parallelisms(j *flink.JobDetailsInfo) []int32 {
	var out []int32
	for _, v := range j.Vertices {
		out = append(out, v.Parallelism)
	}
	return out
}

// TestAdaptiveRescaleInPlace: on 1.18 with the AdaptiveScheduler, new
// resource requirements restart the job at once with the new parallelism,
// restoring its latest checkpoint, and the backlog the old parallelism
// could not keep up with drains.
func TestAdaptiveRescaleInPlace(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "1.18")
	e.Observe(key, adaptive("1.18.1", 2).Observation())
	if err := e.SetWorkload(key, pipeline(RateShape{Kind: "constant", Base: 1500})); err != nil {
		t.Fatal(err)
	}
	id := submit(t, e, flink.JarRunRequest{Parallelism: 2})
	clk.step(time.Second)
	// WaitingForResources is CREATED; the desired two slots are free, so
	// it runs at once.
	clk.step(time.Second)
	j := jobDetails(t, e, id)
	if j.State != flink.JobRunning || fmt.Sprint(parallelisms(j)) != "[2 2 2]" {
		t.Fatalf("job %s %v", j.State, parallelisms(j))
	}
	var got map[string]map[string]map[string]int
	restGet(t, srv, "/jobs/"+id+"/resource-requirements", &got)
	// DefaultVertexParallelismInfo: lower bound 1, upper the parallelism.
	if got[j.Vertices[0].ID]["parallelism"]["upperBound"] != 2 || got[j.Vertices[0].ID]["parallelism"]["lowerBound"] != 1 {
		t.Fatalf("requirements = %v", got)
	}
	clk.step(60 * time.Second) // checkpoints every 10 s; a backlog builds
	before, _ := e.View(key)
	if before.Workload.Backlog < 30000 {
		t.Fatalf("backlog %v: the window vertex (2 × 500/s, half the records) should not keep up", before.Workload.Backlog)
	}
	var er flink.ErrorResponse
	if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", requirements(j, 1, 4), &er); code != 200 {
		t.Fatalf("PUT: HTTP %d %v", code, er)
	}
	v := view(t, e, id)
	if v.Rescales != 1 || v.State != flink.JobRestarting && v.State != flink.JobCreated && v.State != flink.JobRunning {
		t.Fatalf("after the PUT: %s, %d rescales", v.State, v.Rescales)
	}
	clk.step(2 * time.Second)
	j = jobDetails(t, e, id)
	v = view(t, e, id)
	if j.State != flink.JobRunning || fmt.Sprint(parallelisms(j)) != "[4 4 4]" {
		t.Fatalf("after the rescale: %s %v", j.State, parallelisms(j))
	}
	if v.RestoredFrom == nil || v.RestoredFrom.IsSavepoint || v.Restarts != 0 {
		t.Errorf("restored from %+v with %d restarts; want the latest checkpoint, no failure", v.RestoredFrom, v.Restarts)
	}
	clk.step(120 * time.Second)
	after, _ := e.View(key)
	if after.Workload.Backlog >= before.Workload.Backlog {
		t.Errorf("backlog %v → %v: four subtasks (2000/s of window input) should drain it", before.Workload.Backlog, after.Workload.Backlog)
	}
	// A bound above the vertex's max parallelism, a missing vertex: 400.
	for _, body := range []string{
		requirements(j, 1, 129),
		fmt.Sprintf(`{%q: {"parallelism": {"lowerBound": 1, "upperBound": 2}}}`, j.Vertices[0].ID),
	} {
		if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", body, &er); code != 400 {
			t.Errorf("PUT %s: HTTP %d, want 400", body, code)
		}
	}
}

// TestDefaultSchedulerRefusesRequirements: the DefaultScheduler cannot
// change parallelism without a resubmission.
func TestDefaultSchedulerRefusesRequirements(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "1.19")
	e.Observe(key, simple(tms(2), nil).Observation())
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
	j := jobDetails(t, e, id)
	var er flink.ErrorResponse
	if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", requirements(j, 1, 4), &er); code != 500 || len(er.Errors) == 0 {
		t.Fatalf("PUT on the DefaultScheduler: HTTP %d %v, want 500", code, er)
	}
	if fmt.Sprint(parallelisms(jobDetails(t, e, id))) != "[2]" || view(t, e, id).Rescales != 0 {
		t.Error("the job changed")
	}
}

// TestAdaptiveWaitsThenGrows: a job that wants more slots than are free
// waits the stabilization timeout (10 s), runs with what there is, and
// grows when TaskManagers join: at once on 1.18, after the 30 s
// scaling-interval.min on 1.19.
func TestAdaptiveWaitsThenGrows(t *testing.T) {
	for _, tc := range []struct {
		version string
		grownBy time.Duration // after the new TaskManager registers
	}{{"1.18.1", 0}, {"1.19.1", 30 * time.Second}} {
		t.Run(tc.version, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, adaptive(tc.version, 1).Observation())
			id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
			clk.step(5 * time.Second)
			if s := jobState(t, e, id); s != flink.JobCreated {
				t.Fatalf("waiting for 4 slots with 2: %s, want CREATED", s)
			}
			clk.step(7 * time.Second)
			j := jobDetails(t, e, id)
			if j.State != flink.JobRunning || fmt.Sprint(parallelisms(j)) != "[2]" {
				t.Fatalf("after the stabilization timeout: %s %v", j.State, parallelisms(j))
			}
			e.Observe(key, adaptive(tc.version, 2).Observation())
			if tc.grownBy > 0 {
				clk.step(time.Second)
				if got := view(t, e, id).Rescales; got != 0 {
					t.Fatalf("rescaled inside scaling-interval.min")
				}
				clk.step(tc.grownBy)
			}
			clk.step(2 * time.Second)
			j = jobDetails(t, e, id)
			if fmt.Sprint(parallelisms(j)) != "[4]" || view(t, e, id).Rescales != 1 {
				t.Fatalf("with 4 slots: %v, %d rescales", parallelisms(j), view(t, e, id).Rescales)
			}
		})
	}
}

// TestAdaptiveRescaleWaitsForCheckpoint: from 2.0 a rescale waits for the
// next completed checkpoint (FLIP-461's rescale trigger).
func TestAdaptiveRescaleWaitsForCheckpoint(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "2.0")
	sc := adaptive("2.0.0", 2)
	sc.Settings["execution.checkpointing.interval"] = "20s"
	e.Observe(key, sc.Observation())
	id := submit(t, e, flink.JarRunRequest{Parallelism: 2})
	clk.step(2 * time.Second)
	clk.step(33 * time.Second) // past the 30 s cooldown; a checkpoint at 22 s
	j := jobDetails(t, e, id)
	var er flink.ErrorResponse
	if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", requirements(j, 1, 3), &er); code != 200 {
		t.Fatalf("PUT: %d %v", code, er)
	}
	clk.step(2 * time.Second)
	if got := view(t, e, id).Rescales; got != 0 {
		t.Fatalf("rescaled before a checkpoint completed")
	}
	clk.step(8 * time.Second) // the checkpoint at 42 s completes at 43 s
	if got := view(t, e, id).Rescales; got != 1 {
		t.Fatalf("not rescaled on the checkpoint: %d", got)
	}
}

// TestAdaptiveWaitingShowsNoCheckpoints: while the AdaptiveScheduler waits
// for resources its checkpoint statistics are the sparse graph's empty
// ones, after a restart too, though its tracker keeps the history, which
// shows again once the job executes; a job cancelled while waiting ends
// with the empty statistics, for every minor's endpoint.
func TestAdaptiveWaitingShowsNoCheckpoints(t *testing.T) {
	for _, version := range []string{"1.17.2", "1.18.1", "2.0.0"} {
		t.Run(version, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, adaptive(version, 1).Observation())
			id := submit(t, e, flink.JarRunRequest{Parallelism: 2})
			clk.step(35 * time.Second)
			stats := func() *flink.CheckpointingStatistics {
				t.Helper()
				s, err := e.Checkpoints(key, id)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			ran := stats()
			if jobState(t, e, id) != flink.JobRunning || ran.Counts.Completed < 2 || ran.Latest.Completed == nil {
				t.Fatalf("running: %s, %+v", jobState(t, e, id), ran.Counts)
			}
			// Its only TaskManager goes: the job restarts and waits.
			e.Observe(key, adaptive(version, 0).Observation())
			clk.step(5 * time.Second)
			waiting := stats()
			if s := jobState(t, e, id); s != flink.JobCreated {
				t.Fatalf("without slots: %s, want CREATED", s)
			}
			if waiting.Counts != (flink.CheckpointCounts{}) || waiting.Latest.Completed != nil || waiting.Latest.Restored != nil || len(waiting.History) != 0 {
				t.Fatalf("waiting for resources: %+v %+v, want the empty statistics", waiting.Counts, waiting.Latest)
			}
			e.Observe(key, adaptive(version, 1).Observation())
			clk.step(3 * time.Second)
			back := stats()
			if jobState(t, e, id) != flink.JobRunning || back.Counts.Completed < ran.Counts.Completed || back.Latest.Restored == nil || back.Latest.Restored.ID != ran.Latest.Completed.ID {
				t.Fatalf("executing again: %s, %+v, restored %+v; want the history back and checkpoint %d restored", jobState(t, e, id), back.Counts, back.Latest.Restored, ran.Latest.Completed.ID)
			}
			e.Observe(key, adaptive(version, 0).Observation())
			clk.step(5 * time.Second)
			if err := e.CancelJob(key, id, ""); err != nil {
				t.Fatal(err)
			}
			if s := jobState(t, e, id); s != flink.JobCanceled {
				t.Fatalf("cancelled while waiting: %s, want CANCELED at once", s)
			}
			// Slots that come after the cancel run nothing.
			e.Observe(key, adaptive(version, 1).Observation())
			clk.step(3 * time.Second)
			ended := stats()
			if s := jobState(t, e, id); s != flink.JobCanceled {
				t.Fatalf("cancelled while waiting, then slots: %s", s)
			}
			if ended.Counts != (flink.CheckpointCounts{}) || ended.Latest.Completed != nil || ended.Latest.Restored != nil {
				t.Fatalf("cancelled while waiting: %+v %+v, want the empty statistics", ended.Counts, ended.Latest)
			}
		})
	}
}

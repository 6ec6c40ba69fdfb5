package flinksim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// uidPipeline is pipeline's graph with a uid on every vertex and the
// window, optionally, without state.
func uidPipeline(statelessWindow bool) Workload {
	w := pipeline(RateShape{Kind: "constant", Base: 100})
	for i, uid := range []string{"src", "win", "sink"} {
		w.Vertices[i].UID = uid
	}
	w.Vertices[1].Stateless = statelessWindow
	return w
}

func withoutWindow(w Workload) Workload {
	w.Vertices = []VertexModel{w.Vertices[0], w.Vertices[2]}
	return w
}

// stopToSavepoint stops a job with a savepoint and returns its path.
func stopToSavepoint(t *testing.T, e *Engine, clk *fakeClock, id string) string {
	t.Helper()
	tr, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TargetDirectory: "s3://b/sp"})
	if err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second)
	st, err := e.SavepointStatus(key, id, tr.RequestID)
	if err != nil || st.Operation == nil || st.Operation.Location == "" || jobState(t, e, id) != flink.JobFinished {
		t.Fatalf("stop: %+v, %v", st, err)
	}
	return st.Operation.Location
}

// TestSavepointMustFitTheJob: a restore maps the snapshot's operator
// states onto the new job graph's operators (Checkpoints#
// loadAndValidateCheckpoint, StateAssignmentOperation#
// checkParallelismPreconditions): state of an operator the job lacks
// fails the JobMaster's start unless allowNonRestoredState (or
// ignore-unclaimed-state) is set; a max parallelism the program set must
// match the state's, one Flink computed takes the state's.
func TestSavepointMustFitTheJob(t *testing.T) {
	windowID := operatorID(0, "", "win")
	for _, tc := range []struct {
		name string
		// before is the workload the savepoint is taken with, after the
		// one the restoring job is built from.
		before, after Workload
		settings      map[string]string // the cluster's, for both jobs
		restore       flink.JarRunRequest
		// wantFail is part of the restoring job's failure; "" when it runs.
		wantFail string
		// wantMax is the restored job's first vertex's max parallelism.
		wantMax int32
	}{
		{name: "same graph", before: pipeline(RateShape{Kind: "constant"}), after: pipeline(RateShape{Kind: "constant"}), wantMax: 128},
		{name: "renamed vertex keeps its generated ID", before: pipeline(RateShape{Kind: "constant"}),
			after: func() Workload {
				w := pipeline(RateShape{Kind: "constant"})
				w.Vertices[1].Name = "Window(SlidingEventTimeWindows)"
				return w
			}(), wantMax: 128},
		{name: "removed stateful vertex", before: uidPipeline(false), after: withoutWindow(uidPipeline(false)),
			wantFail: "Cannot map checkpoint/savepoint state for operator " + windowID + " to the new program, because the operator is not available in the new program."},
		{name: "removed stateful vertex, allowNonRestoredState", before: uidPipeline(false), after: withoutWindow(uidPipeline(false)),
			restore: flink.JarRunRequest{AllowNonRestoredState: true}, wantMax: 128},
		{name: "removed stateful vertex, ignore-unclaimed-state configured", before: uidPipeline(false), after: withoutWindow(uidPipeline(false)),
			restore: flink.JarRunRequest{FlinkConfiguration: map[string]string{"execution.savepoint.ignore-unclaimed-state": "true"}}, wantMax: 128},
		{name: "removed stateless vertex", before: uidPipeline(true), after: withoutWindow(uidPipeline(true)), wantMax: 128},
		{name: "removing a vertex changes the generated IDs after it", before: pipeline(RateShape{Kind: "constant"}),
			after: withoutWindow(pipeline(RateShape{Kind: "constant"})), wantFail: "because the operator is not available in the new program"},
		{name: "changed uid", before: uidPipeline(false),
			after: func() Workload {
				w := uidPipeline(false)
				w.Vertices[0].UID = "source-v2"
				return w
			}(), wantFail: "Cannot map checkpoint/savepoint state for operator " + operatorID(0, "", "src")},
		{name: "configured max parallelism changed", before: pipeline(RateShape{Kind: "constant"}), after: pipeline(RateShape{Kind: "constant"}),
			settings: map[string]string{"pipeline.max-parallelism": "256"},
			restore:  flink.JarRunRequest{FlinkConfiguration: map[string]string{"pipeline.max-parallelism": "512"}},
			wantFail: "Max parallelism mismatch between checkpoint/savepoint state and new program. Cannot map operator " + operatorID(0, "", "") + " with max parallelism 256 to new program with max parallelism 512."},
		{name: "computed max parallelism takes the state's", before: pipeline(RateShape{Kind: "constant"}), after: pipeline(RateShape{Kind: "constant"}),
			settings: map[string]string{"pipeline.max-parallelism": "256"},
			restore:  flink.JarRunRequest{FlinkConfiguration: map[string]string{"pipeline.max-parallelism": "-1"}}, wantMax: 256},
		{name: "parallelism above the state's computed max parallelism", before: pipeline(RateShape{Kind: "constant"}), after: pipeline(RateShape{Kind: "constant"}),
			restore:  flink.JarRunRequest{Parallelism: 200},
			wantFail: "The maximum parallelism (128) of the restored state is lower than the configured parallelism (200)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(2), tc.settings).Observation())
			if err := e.SetWorkload(key, tc.before); err != nil {
				t.Fatal(err)
			}
			sp := stopToSavepoint(t, e, clk, running(t, e, clk, flink.JarRunRequest{Parallelism: 2}))
			if err := e.SetWorkload(key, tc.after); err != nil {
				t.Fatal(err)
			}
			req := tc.restore
			req.SavepointPath = sp
			if req.Parallelism == 0 {
				req.Parallelism = 2
			}
			id := submit(t, e, req)
			clk.step(2 * time.Second)
			v := view(t, e, id)
			if tc.wantFail != "" {
				if v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "JobInitializationException: Could not start the JobMaster.") || !strings.Contains(v.FailureCause, tc.wantFail) {
					t.Fatalf("job %s, failure %q; want it FAILED with %q", v.State, v.FailureCause, tc.wantFail)
				}
				return
			}
			j := jobDetails(t, e, id)
			if j.State != flink.JobRunning || v.RestoredFrom == nil || v.RestoredFrom.ExternalPath != sp {
				t.Fatalf("job %s restored from %+v (%s)", j.State, v.RestoredFrom, v.FailureCause)
			}
			if j.Vertices[0].MaxParallelism != tc.wantMax {
				t.Errorf("max parallelism %d, want %d", j.Vertices[0].MaxParallelism, tc.wantMax)
			}
		})
	}
}

// TestAllowNonRestoredStateOverHTTP: the run request's allowNonRestoredState
// (body, else query) wins over the configured ignore-unclaimed-state,
// which applies when the request gives none (JarRunHandler).
func TestAllowNonRestoredStateOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, query, body string
		configured        bool
		wantRunning       bool
	}{
		{name: "neither", wantRunning: false},
		{name: "body true", body: `,"allowNonRestoredState":true`, wantRunning: true},
		{name: "query true", query: "?allowNonRestoredState=true", wantRunning: true},
		{name: "configured", configured: true, wantRunning: true},
		{name: "body false over the configuration", body: `,"allowNonRestoredState":false`, configured: true, wantRunning: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk, _, _, srv := newHTTPTest(t, "1.20")
			settings := map[string]string{}
			if tc.configured {
				settings["execution.state-recovery.ignore-unclaimed-state"] = "true"
			}
			sc := simple(tms(2), settings)
			sc.Version, sc.Env = "1.20.1", s3Plugin("1.20.1")
			e.Observe(key, sc.Observation())
			_ = e.SetWorkload(key, uidPipeline(false))
			sp := stopToSavepoint(t, e, clk, running(t, e, clk, flink.JarRunRequest{Parallelism: 2}))
			_ = e.SetWorkload(key, withoutWindow(uidPipeline(false)))
			var run flink.JarRunResponse
			if code := restDo(t, srv, "POST", "/jars/"+upload(t, e)+"/run"+tc.query, fmt.Sprintf(`{"savepointPath":%q%s}`, sp, tc.body), &run); code != 200 {
				t.Fatalf("run: HTTP %d", code)
			}
			clk.step(2 * time.Second)
			if got := jobState(t, e, run.JobID) == flink.JobRunning; got != tc.wantRunning {
				t.Errorf("running = %v, want %v (%s)", got, tc.wantRunning, view(t, e, run.JobID).FailureCause)
			}
		})
	}
}

// TestAdaptiveRestoreChecksTheSlotsItGets: the AdaptiveScheduler assigns
// the restored state to the graph it builds for its slots
// (AdaptiveScheduler#createExecutionGraphAndRestoreState): a restore
// whose desired parallelism is above the state's max parallelism fails
// only if the slots it gets are, too.
func TestAdaptiveRestoreChecksTheSlotsItGets(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxState    string // pipeline.max-parallelism of the savepoint's job
		wantRunning bool
	}{
		{name: "four slots within the state's max parallelism 4", maxState: "4", wantRunning: true},
		{name: "four slots above the state's max parallelism 3", maxState: "3", wantRunning: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			sc := adaptive("1.19.1", 2)
			e.Observe(key, sc.Observation())
			sp := stopToSavepoint(t, e, clk, running(t, e, clk, flink.JarRunRequest{Parallelism: 2, FlinkConfiguration: map[string]string{"pipeline.max-parallelism": tc.maxState}}))
			id := submit(t, e, flink.JarRunRequest{Parallelism: 8, SavepointPath: sp})
			clk.step(time.Second) // initialized: waits for 8 slots
			if s := jobState(t, e, id); s != flink.JobCreated {
				t.Fatalf("job %s, want CREATED waiting for resources", s)
			}
			clk.step(15 * time.Second) // the 10 s stabilization with 4 free slots
			v := view(t, e, id)
			if got := v.State == flink.JobRunning; got != tc.wantRunning {
				t.Fatalf("job %s (%s), want running %v", v.State, v.FailureCause, tc.wantRunning)
			}
			if !tc.wantRunning && !strings.Contains(v.FailureCause, "The maximum parallelism (3) of the restored state is lower than the configured parallelism (4).") {
				t.Errorf("failure %q", v.FailureCause)
			}
			if tc.wantRunning && v.Vertices[0].MaxParallelism != 4 {
				t.Errorf("max parallelism %d, want the state's 4", v.Vertices[0].MaxParallelism)
			}
		})
	}
}

// TestStopWhoseTasksDoNotFinish: StopWithSavepointTerminationHandlerImpl's
// other ending. The savepoint completes and stays in the history, but a
// task fails instead of finishing: the stop operation fails with the
// global failover's exception and the job restarts from its latest
// checkpoint, not from the savepoint.
func TestStopWhoseTasksDoNotFinish(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
	clk.step(11 * time.Second) // chk-1
	e.SetStopFault(key, StopTasksDoNotFinish)
	tr, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TargetDirectory: "s3://b/sp"})
	if err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second)
	st, _ := e.SavepointStatus(key, id, tr.RequestID)
	if st.Status.ID != flink.OperationCompleted || st.Operation.FailureCause == nil || st.Operation.Location != "" ||
		!strings.Contains(st.Operation.FailureCause.StackTrace, "Inconsistent execution state after stopping with savepoint. At least one execution is still in one of the following states: FAILED. A global fail-over is triggered to recover the job "+id) {
		t.Fatalf("stop operation = %+v %+v", st.Status, st.Operation)
	}
	if s := jobState(t, e, id); s != flink.JobRestarting {
		t.Fatalf("job %s, want RESTARTING", s)
	}
	cp, _ := e.Checkpoints(key, id)
	sp := cp.Latest.Savepoint
	if sp == nil || sp.Status != "COMPLETED" || sp.CheckpointType != "SYNC_SAVEPOINT" || cp.History[0].ID != sp.ID {
		t.Fatalf("latest savepoint %+v, history %+v", sp, cp.History)
	}
	if _, err := e.resolveSnapshotAt(key, sp.ExternalPath); err != nil {
		t.Errorf("the savepoint is gone: %v", err)
	}
	clk.step(5 * time.Second) // 3 s backoff, deploying
	v := view(t, e, id)
	if v.State != flink.JobRunning || v.Restarts != 1 || v.RestoredFrom == nil || v.RestoredFrom.IsSavepoint || v.RestoredFrom.ID != 1 {
		t.Errorf("after the failover: %s, %d restarts, restored from %+v; want chk-1", v.State, v.Restarts, v.RestoredFrom)
	}
}

// TestSlowStopCompletesLater: a stop-with-savepoint that takes longer than
// a caller waits is not abandoned by Flink: it completes on the clock, the
// job ends FINISHED and its savepoint is in the checkpoint history.
func TestSlowStopCompletesLater(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(e *Engine)
		// release is what lets the stop complete once the caller gave up.
		release func(e *Engine, clk *fakeClock)
	}{
		{"slow savepoint", func(e *Engine) { e.SetSavepointDelay(key, 5*time.Minute) }, func(e *Engine, clk *fakeClock) { clk.step(3 * time.Minute) }},
		{"stalled savepoint released", func(e *Engine) { e.SetSavepointFault(key, FaultStall) }, func(e *Engine, clk *fakeClock) {
			e.ClearFaults(key)
			clk.step(time.Millisecond) // past simple()'s web.refresh-interval: the job's details are cached
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), nil).Observation())
			id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
			tc.fault(e)
			tr, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TargetDirectory: "s3://b/sp"})
			if err != nil {
				t.Fatal(err)
			}
			clk.step(2 * time.Minute) // past any caller's patience
			if st, _ := e.SavepointStatus(key, id, tr.RequestID); st.Status.ID != flink.OperationInProgress || jobState(t, e, id) != flink.JobRunning {
				t.Fatalf("after 2 minutes: %+v, job %s", st.Status, jobState(t, e, id))
			}
			tc.release(e, clk)
			st, _ := e.SavepointStatus(key, id, tr.RequestID)
			if st.Status.ID != flink.OperationCompleted || st.Operation.FailureCause != nil || st.Operation.Location == "" {
				t.Fatalf("stop = %+v %+v", st.Status, st.Operation)
			}
			if s := jobState(t, e, id); s != flink.JobFinished {
				t.Errorf("job %s, want FINISHED", s)
			}
			cp, _ := e.Checkpoints(key, id)
			if len(cp.History) == 0 || cp.History[0].ExternalPath != st.Operation.Location || cp.History[0].Status != "COMPLETED" || cp.History[0].CheckpointType != "SYNC_SAVEPOINT" {
				t.Errorf("history = %+v", cp.History)
			}
		})
	}
}

// TestSourceMetricsByKind: a KafkaSource registers pendingRecords only once
// its reader has fetched records; a SourceFunction never does and counts
// no records in.
func TestSourceMetricsByKind(t *testing.T) {
	for _, tc := range []struct {
		name        string
		source      string
		rate        float64
		wantPending bool
		wantIn      bool
	}{
		{name: "kafka, nothing to read", source: "", rate: 0},
		{name: "kafka, reading", source: SourceKafka, rate: 500, wantPending: true, wantIn: true},
		{name: "legacy, reading", source: SourceLegacy, rate: 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk, _, _, srv := newHTTPTest(t, "1.19")
			e.Observe(key, simple(tms(2), nil).Observation())
			w := pipeline(RateShape{Kind: "constant", Base: tc.rate})
			w.Source = tc.source
			if err := e.SetWorkload(key, w); err != nil {
				t.Fatal(err)
			}
			id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
			src := jobDetails(t, e, id).Vertices[0].ID
			path := "/jobs/" + id + "/vertices/" + src + "/subtasks/metrics"
			var names aggregated
			restGet(t, srv, path, &names) // starts the MetricFetcher
			clk.step(time.Second)
			restGet(t, srv, path, &names) // what it fetched as the tasks started
			for _, m := range names {
				if strings.HasSuffix(m.ID, ".pendingRecords") {
					t.Fatalf("pendingRecords before the reader fetched anything: %v", names)
				}
			}
			if len(names) == 0 {
				t.Fatal("no task metrics at all as the tasks started")
			}
			clk.step(70 * time.Second)
			restGet(t, srv, path, &names)
			restGet(t, srv, path, &names)
			has := map[string]bool{}
			for _, m := range names {
				has[m.ID] = true
			}
			if has["Source__orders.pendingRecords"] != tc.wantPending || !has["Source__orders.numRecordsOutPerSecond"] {
				t.Fatalf("metric names %v", names)
			}
			var m aggregated
			restGet(t, srv, path+"?get=numRecordsInPerSecond,Source__orders.numRecordsOutPerSecond", &m)
			_, _, _, in := m.get(t, "numRecordsInPerSecond")
			_, _, _, out := m.get(t, "Source__orders.numRecordsOutPerSecond")
			if (in > 0) != tc.wantIn || (out > 0) != (tc.rate > 0) {
				t.Errorf("records in %v, source out %v", in, out)
			}
		})
	}
}

// TestRequirementsSurviveLeaderFailover: Dispatcher#
// updateJobResourceRequirements writes the requirements into the job
// graph in the HA store, so the leader that recovers the job runs it with
// them.
func TestRequirementsSurviveLeaderFailover(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "1.19")
	sc := adaptive("1.19.1", 2)
	for k, v := range map[string]string{"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo", "high-availability.storageDir": "s3://bucket/ha"} {
		sc.Settings[k] = v
	}
	e.Observe(key, sc.Observation())
	id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
	clk.step(2 * time.Second)
	j := jobDetails(t, e, id)
	if fmt.Sprint(parallelisms(j)) != "[4]" {
		t.Fatalf("parallelism %v", parallelisms(j))
	}
	var er flink.ErrorResponse
	if code := restDo(t, srv, "PUT", "/jobs/"+id+"/resource-requirements", requirements(j, 1, 2), &er); code != 200 {
		t.Fatalf("PUT: HTTP %d %v", code, er)
	}
	clk.step(40 * time.Second) // the rescale, past scaling-interval.min
	if got := fmt.Sprint(parallelisms(jobDetails(t, e, id))); got != "[2]" {
		t.Fatalf("after the PUT: %s", got)
	}
	if err := e.LoseJobManager(key); err != nil {
		t.Fatal(err)
	}
	clk.step(15 * time.Second) // the lease
	clk.step(15 * time.Second) // recovered, waits, runs
	var got map[string]map[string]map[string]int
	restGet(t, srv, "/jobs/"+id+"/resource-requirements", &got)
	j = jobDetails(t, e, id)
	if j.State != flink.JobRunning || fmt.Sprint(parallelisms(j)) != "[2]" || got[j.Vertices[0].ID]["parallelism"]["upperBound"] != 2 {
		t.Errorf("recovered job %s %v, requirements %v; want the updated upper bound 2", j.State, parallelisms(j), got)
	}
}

package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

func TestSavepoints(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     Fault
		stop      bool
		cancel    bool
		wantState flink.JobStatus
		wantLoc   bool
		wantFail  bool
	}{
		{"savepoint", FaultNone, false, false, flink.JobRunning, true, false},
		{"savepoint and cancel", FaultNone, false, true, flink.JobCancelling, true, false},
		{"stop with savepoint", FaultNone, true, false, flink.JobFinished, true, false},
		{"failed savepoint", FaultFail, false, false, flink.JobRunning, false, true},
		{"failed stop keeps the job running", FaultFail, true, false, flink.JobRunning, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), nil).Observation())
			id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
			e.SetSavepointFault(key, tc.fault)
			var tr *flink.TriggerResponse
			var err error
			if tc.stop {
				tr, err = e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TargetDirectory: "s3://b/sp/"})
			} else {
				tr, err = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TargetDirectory: "s3://b/sp/", CancelJob: tc.cancel})
			}
			if err != nil {
				t.Fatal(err)
			}
			clk.step(time.Second)
			st, _ := e.SavepointStatus(key, id, tr.RequestID)
			if st.Status.ID != flink.OperationInProgress || jobState(t, e, id) != flink.JobRunning {
				t.Fatalf("before the delay: %+v, job %s", st, jobState(t, e, id))
			}
			clk.step(time.Second)
			st, _ = e.SavepointStatus(key, id, tr.RequestID)
			if st.Status.ID != flink.OperationCompleted {
				t.Fatalf("after the delay: %+v", st)
			}
			if got := strings.HasPrefix(st.Operation.Location, "s3://b/sp/savepoint-"+id[:6]+"-"); got != tc.wantLoc {
				t.Errorf("location = %q", st.Operation.Location)
			}
			if (st.Operation.FailureCause != nil) != tc.wantFail {
				t.Errorf("failure = %+v", st.Operation.FailureCause)
			}
			if s := jobState(t, e, id); s != tc.wantState {
				t.Errorf("job = %s, want %s", s, tc.wantState)
			}
			v := view(t, e, id)
			if v.SavepointsTriggered != 1 {
				t.Errorf("savepoints triggered = %d", v.SavepointsTriggered)
			}
			if tc.wantLoc && v.LatestSavepoint != st.Operation.Location {
				t.Errorf("latest savepoint = %q", v.LatestSavepoint)
			}
			clk.step(time.Second)
			if tc.cancel && jobState(t, e, id) != flink.JobCanceled {
				t.Errorf("after cancelling: %s", jobState(t, e, id))
			}
			if tc.wantState != flink.JobRunning {
				if ov, _ := e.Overview(key); ov.SlotsAvailable != 2 {
					t.Errorf("slots not freed: %+v", ov)
				}
			}
		})
	}
}

// The savepoint directory comes from the request, else from the key the
// receiving JobManager's minor reads, else the request is refused.
func TestSavepointDirectory(t *testing.T) {
	for _, tc := range []struct {
		version  string
		settings map[string]string
		stop     bool
		want     string // prefix of the location, or the 400's message
	}{
		{"1.19.1", nil, false, "s3://bucket/savepoints/savepoint-"},
		{"1.19.1", map[string]string{"state.savepoints.dir": ""}, false, "Config key [state.savepoints.dir] is not set. Property [target-directory] must be provided."},
		{"1.20.0", map[string]string{"state.savepoints.dir": ""}, true, "Config key [execution.checkpointing.savepoint-dir] is not set. Property [targetDirectory] must be provided."},
		{"1.20.0", nil, false, "s3://bucket/savepoints/savepoint-"}, // the deprecated key, still read
		{"2.2.0", map[string]string{"state.savepoints.dir": "", "execution.checkpointing.savepoint-dir": "s3://other/sp"}, false, "s3://other/sp/savepoint-"},
	} {
		t.Run(tc.version+" "+tc.want, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(1), tc.settings)
			c.Version, c.Env = tc.version, s3Plugin(tc.version)
			e.Observe(key, c.Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			var err error
			var tr *flink.TriggerResponse
			if tc.stop {
				tr, err = e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{})
			} else {
				tr, err = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{})
			}
			if !strings.HasPrefix(tc.want, "s3://") {
				wantErr(t, err, http.StatusBadRequest, tc.want)
				return
			}
			clk.step(2 * time.Second)
			st, _ := e.SavepointStatus(key, id, tr.RequestID)
			if st.Operation == nil || !strings.HasPrefix(st.Operation.Location, tc.want) {
				t.Errorf("savepoint = %+v", st.Operation)
			}
		})
	}
}

// A savepoint of a job that cannot take one is accepted, and its
// operation fails (Dispatcher#triggerSavepointAndGetLocation).
func TestSavepointOfJobThatCannot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e *Engine, clk *fakeClock) string
		want  string
	}{
		{"unknown job", func(t *testing.T, e *Engine, clk *fakeClock) string { return "0123456789abcdef0123456789abcdef" },
			"org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (0123456789abcdef0123456789abcdef)"},
		{"initializing job", func(t *testing.T, e *Engine, clk *fakeClock) string { return submit(t, e, flink.JarRunRequest{}) },
			"UnavailableDispatcherOperationException: Unable to get JobMasterGateway for initializing job."},
		{"tasks waiting for slots", func(t *testing.T, e *Engine, clk *fakeClock) string {
			id := submit(t, e, flink.JarRunRequest{Parallelism: 9})
			clk.step(time.Second)
			return id
		}, "CheckpointException: Not all required tasks are currently running."},
		{"tasks restoring their state (SetRestoreDelay)", func(t *testing.T, e *Engine, clk *fakeClock) string {
			e.SetRestoreDelay(key, time.Minute)
			id := submit(t, e, flink.JarRunRequest{})
			clk.step(30 * time.Second)
			if j := jobDetails(t, e, id); j.State != flink.JobRunning || j.Vertices[0].Status != "INITIALIZING" {
				t.Fatalf("30 s into a one-minute restore: job %s, tasks %s", j.State, j.Vertices[0].Status)
			}
			return id
		}, "CheckpointException: Not all required tasks are currently running."},
		{"finished job", func(t *testing.T, e *Engine, clk *fakeClock) string {
			id := running(t, e, clk, flink.JarRunRequest{})
			_, _ = e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{})
			clk.step(2 * time.Second)
			return id
		}, "FlinkJobNotFoundException: Could not find Flink job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), nil).Observation())
			id := tc.setup(t, e, clk)
			tr, err := e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := e.SavepointStatus(key, id, tr.RequestID)
			if err != nil || st.Status.ID != flink.OperationCompleted || st.Operation.FailureCause == nil || !strings.Contains(st.Operation.FailureCause.StackTrace, tc.want) {
				t.Fatalf("status = %+v, %v; want a failure %q", st, err, tc.want)
			}
		})
	}
}

// TestOperationCache: trigger IDs live in the Dispatcher's memory
// (CompletedOperationCache): deduplicated while in flight or kept, kept
// for rest.async.store-duration after completion, then 404; lost with the
// JobManager process.
func TestOperationCache(t *testing.T) {
	const trig = "0123456789abcdef0123456789abcdef"
	stop := func(e *Engine, id string) error {
		_, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TriggerID: trig})
		return err
	}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		run      func(t *testing.T, e *Engine, clk *fakeClock, id string)
	}{
		{"repeated while in flight: one savepoint", nil, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			e.SetSavepointFault(key, FaultStall)
			for range 3 {
				if err := stop(e, id); err != nil {
					t.Fatal(err)
				}
			}
			clk.step(time.Minute)
			e.ClearFaults(key)
			clk.step(2 * time.Second)
			if v := view(t, e, id); v.SavepointsTriggered != 1 || v.StopsTriggered != 1 || v.State != flink.JobFinished {
				t.Errorf("view = %+v", v)
			}
		}},
		{"kept for the store duration, then gone", map[string]string{"rest.async.store-duration": "30s"}, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			clk.step(2 * time.Second)
			// Repeating a completed trigger within the duration starts
			// nothing and answers the same result.
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			clk.step(29 * time.Second)
			if st, err := e.SavepointStatus(key, id, trig); err != nil || st.Operation.Location == "" {
				t.Fatalf("within the duration: %+v, %v", st, err)
			}
			clk.step(time.Second)
			_, err := e.SavepointStatus(key, id, trig)
			wantErr(t, err, http.StatusNotFound, "There is no savepoint operation with triggerId="+trig+" for job "+id+".")
			if v := view(t, e, id); v.SavepointsTriggered != 1 {
				t.Errorf("savepoints = %d", v.SavepointsTriggered)
			}
			// Once evicted, the same trigger ID is a new operation.
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			if v := view(t, e, id); v.SavepointsTriggered != 2 {
				t.Errorf("after eviction: savepoints = %d", v.SavepointsTriggered)
			}
		}},
		{"a duration under a second keeps results forever", map[string]string{"rest.async.store-duration": "500ms"}, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			clk.step(24 * time.Hour)
			if _, err := e.SavepointStatus(key, id, trig); err != nil {
				t.Fatal(err)
			}
		}},
		{"savepoint and stop share the cache", nil, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			_ = stop(e, id)
			clk.step(3 * time.Second)
			if v := view(t, e, id); v.State != flink.JobRunning || v.StopsTriggered != 0 {
				t.Errorf("a stop under a savepoint's trigger ID stopped the job: %+v", v)
			}
		}},
		{"checkpoint triggers are a cache of their own", nil, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			_, _ = e.TriggerCheckpoint(key, id, flink.CheckpointTriggerRequest{TriggerID: trig})
			if v := view(t, e, id); v.CheckpointsTriggered != 1 || v.SavepointsTriggered != 1 {
				t.Errorf("view = %+v", v)
			}
		}},
		{"expired by the fault", nil, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			if n := e.ExpireOperations(key); n != 0 {
				t.Errorf("expired %d in-flight operations", n)
			}
			clk.step(2 * time.Second)
			if n := e.ExpireOperations(key); n != 1 {
				t.Errorf("expired %d", n)
			}
			_, err := e.SavepointStatus(key, id, trig)
			wantErr(t, err, http.StatusNotFound, "There is no savepoint operation")
		}},
		{"lost with the JobManager process", nil, func(t *testing.T, e *Engine, clk *fakeClock, id string) {
			_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{TriggerID: trig})
			clk.step(2 * time.Second)
			if err := e.LoseJobManager(key); err != nil {
				t.Fatal(err)
			}
			// Without HA the job is gone too, but the answer is about the
			// trigger: the new Dispatcher never heard of it.
			_, err := e.SavepointStatus(key, id, trig)
			wantErr(t, err, http.StatusNotFound, "There is no savepoint operation with triggerId=")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), tc.settings).Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			tc.run(t, e, clk, id)
		})
	}
}

func TestCancel(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	a := running(t, e, clk, flink.JarRunRequest{EntryClass: "com.example.A"})
	if err := e.CancelJob(key, a, "cancel"); err != nil {
		t.Fatal(err)
	}
	clk.step(time.Millisecond) // past the execution graph cache
	if s := jobState(t, e, a); s != flink.JobCancelling {
		t.Fatalf("at once: %s", s)
	}
	clk.step(time.Second)
	if s := jobState(t, e, a); s != flink.JobCanceled {
		t.Fatalf("after the cancel delay: %s", s)
	}
	if err := e.CancelJob(key, a, "CANCEL"); err != nil {
		t.Errorf("cancelling a CANCELED job: %v", err)
	}
	wantErr(t, e.CancelJob(key, a, "stop"), http.StatusPermanentRedirect, `The termination mode "stop" has been removed.`)
	wantErr(t, e.CancelJob(key, a, "halt"), http.StatusBadRequest, `Cannot resolve query parameter (mode) from value "halt".`)
	wantErr(t, e.CancelJob(key, "ffffffffffffffffffffffffffffffff", ""), http.StatusNotFound, "Job could not be found.")
	wantErr(t, e.CancelJob(key, "nope", ""), http.StatusBadRequest, `Cannot resolve path parameter (jobid) from value "nope".`)

	b := running(t, e, clk, flink.JarRunRequest{})
	_, _ = e.StopWithSavepoint(key, b, flink.StopWithSavepointRequest{})
	clk.step(2 * time.Second)
	wantErr(t, e.CancelJob(key, b, ""), http.StatusConflict, "Job cancellation failed because the job has already reached another terminal state (FINISHED).")

	// Slow tasks keep a job CANCELLING.
	c := running(t, e, clk, flink.JarRunRequest{})
	e.SetCancelDelay(key, time.Minute)
	_ = e.CancelJob(key, c, "")
	clk.step(59 * time.Second)
	if s := jobState(t, e, c); s != flink.JobCancelling {
		t.Errorf("slow cancel after 59s: %s", s)
	}
	clk.step(time.Second)
	if s := jobState(t, e, c); s != flink.JobCanceled {
		t.Errorf("slow cancel after 60s: %s", s)
	}
	jobs, _ := e.Jobs(key)
	if len(jobs.Jobs) != 3 || jobs.Jobs[0] != (flink.JobIDWithStatus{ID: a, Status: flink.JobCanceled}) {
		t.Errorf("jobs = %+v", jobs)
	}
	ov, _ := e.JobsOverview(key)
	if len(ov.Jobs) != 3 || ov.Jobs[0].Name != "com.example.A" || ov.Jobs[1].Name != "job.jar" {
		t.Errorf("overview = %+v", ov)
	}
}

// TestRestoreDelayLifted: lowering the restore delay, or clearing the
// faults, ends the restores under way within the new delay, so a test
// that lifts the fault sees the tasks run as the next deployment would.
func TestRestoreDelayLifted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lift   func(e *Engine)
		within time.Duration
	}{
		{"SetRestoreDelay(0)", func(e *Engine) { e.SetRestoreDelay(key, 0) }, 0},
		{"SetRestoreDelay(5s)", func(e *Engine) { e.SetRestoreDelay(key, 5*time.Second) }, 5 * time.Second},
		{"ClearFaults", func(e *Engine) { e.ClearFaults(key) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), nil).Observation())
			e.SetRestoreDelay(key, time.Hour)
			id := submit(t, e, flink.JarRunRequest{})
			clk.step(30 * time.Second)
			if j := jobDetails(t, e, id); j.Vertices[0].Status != "INITIALIZING" {
				t.Fatalf("before the lift: tasks %s", j.Vertices[0].Status)
			}
			tc.lift(e)
			if tc.within > 0 {
				clk.step(tc.within - time.Second)
				if j := jobDetails(t, e, id); j.Vertices[0].Status != "INITIALIZING" {
					t.Fatalf("%v after the lift to %v: tasks %s", tc.within-time.Second, tc.within, j.Vertices[0].Status)
				}
			}
			clk.step(time.Second)
			if j := jobDetails(t, e, id); j.Vertices[0].Status != "RUNNING" {
				t.Errorf("%v after the lift: tasks %s, want RUNNING", tc.within, j.Vertices[0].Status)
			}
		})
	}
}

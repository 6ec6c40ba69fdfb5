package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time       { return f.t }
func (f *fakeClock) step(d time.Duration) { f.t = f.t.Add(d) }
func newClock() *fakeClock                { return &fakeClock{t: time.Unix(1700000000, 0)} }
func obs(tms ...string) Observation {
	return Observation{JobManagerReady: true, JobManagerUID: "jm-1", Version: "1.19.1", TaskManagerUIDs: tms, SlotsPerTaskManager: 2}
}
func (o Observation) withJM(uid string) Observation { o.JobManagerUID = uid; return o }

var key = ClusterKey{Namespace: "team-a", Name: "demo"}

func newTestEngine(t *testing.T) (*Engine, *fakeClock) {
	t.Helper()
	clk := newClock()
	e := NewEngine(EngineOptions{
		CheckpointInterval: 10 * time.Second, CheckpointDelay: time.Second,
		SavepointDelay: 2 * time.Second, RestartDelay: 3 * time.Second, Clock: clk.now,
	})
	return e, clk
}

// submit uploads a jar and runs it.
func submit(t *testing.T, e *Engine, req flink.JarRunRequest) string {
	t.Helper()
	up, err := e.UploadJar(key, "job.jar")
	if err != nil {
		t.Fatal(err)
	}
	id := up.Filename[strings.LastIndex(up.Filename, "/")+1:]
	run, err := e.RunJar(key, id, req)
	if err != nil {
		t.Fatal(err)
	}
	return run.JobID
}

func jobState(t *testing.T, e *Engine, id string) flink.JobStatus {
	t.Helper()
	j, err := e.Job(key, id)
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

func view(t *testing.T, e *Engine, id string) JobView {
	t.Helper()
	v, err := e.View(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range v.Jobs {
		if j.ID == id {
			return j
		}
	}
	t.Fatalf("no job %s", id)
	return JobView{}
}

func TestAvailability(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(e *Engine)
		want503 int // how many of 4 requests get 503
	}{
		{"unknown cluster", func(e *Engine) {}, 4},
		{"JobManager not ready", func(e *Engine) { e.Observe(key, Observation{Version: "1.19.1"}) }, 4},
		{"JobManager ready", func(e *Engine) { e.Observe(key, obs("tm-1")) }, 0},
		{"two injected 503s", func(e *Engine) { e.Observe(key, obs("tm-1")); e.InjectUnavailable(key, 2) }, 2},
		{"503 until cleared", func(e *Engine) { e.Observe(key, obs("tm-1")); e.InjectUnavailable(key, -1) }, 4},
		{"cleared", func(e *Engine) { e.Observe(key, obs("tm-1")); e.InjectUnavailable(key, -1); e.ClearFaults(key) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t)
			tc.setup(e)
			got := 0
			for range 4 {
				if _, err := e.Overview(key); err != nil {
					if statusOf(err) != http.StatusServiceUnavailable {
						t.Fatalf("err = %v, want a 503", err)
					}
					got++
				}
			}
			if got != tc.want503 {
				t.Errorf("503s = %d, want %d", got, tc.want503)
			}
		})
	}
}

func TestOverviewFollowsPods(t *testing.T) {
	e, _ := newTestEngine(t)
	e.Observe(key, obs("tm-1", "tm-2", "tm-3"))
	id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
	ov, err := e.Overview(key)
	if err != nil {
		t.Fatal(err)
	}
	want := flink.ClusterOverview{FlinkVersion: "1.19.1", FlinkCommit: SimulatedFlinkRevision, TaskManagers: 3, SlotsTotal: 6, SlotsAvailable: 2, JobsRunning: 1}
	if *ov != want {
		t.Errorf("overview = %+v, want %+v", *ov, want)
	}
	tms, _ := e.TaskManagers(key)
	free := int32(0)
	for _, tm := range tms.TaskManagers {
		free += tm.FreeSlots
	}
	if len(tms.TaskManagers) != 3 || free != 2 {
		t.Errorf("taskmanagers = %+v", tms)
	}
	if jobState(t, e, id) != flink.JobRunning {
		t.Errorf("job not running")
	}
	cfg, _ := e.DashboardConfiguration(key)
	if cfg.FlinkVersion != "1.19.1" {
		t.Errorf("config version = %q", cfg.FlinkVersion)
	}
}

func TestJobWaitsForSlots(t *testing.T) {
	e, _ := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	id := submit(t, e, flink.JarRunRequest{Parallelism: 3})
	if s := jobState(t, e, id); s != flink.JobCreated {
		t.Fatalf("state with 2 slots = %s, want CREATED", s)
	}
	e.Observe(key, obs("tm-1", "tm-2"))
	if s := jobState(t, e, id); s != flink.JobRunning {
		t.Fatalf("state with 4 slots = %s, want RUNNING", s)
	}
	if v := view(t, e, id); v.Restarts != 0 {
		t.Errorf("scale-up restarted the job %d times", v.Restarts)
	}
}

func TestPeriodicCheckpoints(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	id := submit(t, e, flink.JarRunRequest{})
	clk.step(35 * time.Second)
	cp, err := e.Checkpoints(key, id)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Counts.Completed != 3 || cp.Latest.Completed == nil || cp.Latest.Completed.ID != 3 || len(cp.History) != 3 {
		t.Fatalf("checkpoints = %+v", cp)
	}
	if !strings.HasSuffix(cp.Latest.Completed.ExternalPath, "/chk-3") {
		t.Errorf("path = %s", cp.Latest.Completed.ExternalPath)
	}
	e.SetCheckpointFault(key, FaultFail)
	clk.step(10 * time.Second)
	cp, _ = e.Checkpoints(key, id)
	if cp.Counts.Failed != 1 || cp.Latest.Failed == nil || cp.Latest.Completed.ID != 3 {
		t.Errorf("failed checkpoint not recorded: %+v", cp.Counts)
	}
}

func TestTriggeredCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fault      Fault
		wantDone   bool
		wantFailed bool
	}{
		{"completes", FaultNone, true, false},
		{"fails", FaultFail, true, true},
		{"stalls", FaultStall, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, obs("tm-1"))
			id := submit(t, e, flink.JarRunRequest{})
			e.SetCheckpointFault(key, tc.fault)
			tr, err := e.TriggerCheckpoint(key, id, flink.CheckpointTriggerRequest{CheckpointType: "FULL"})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := e.CheckpointStatus(key, id, tr.RequestID)
			if st.Status.ID != flink.OperationInProgress {
				t.Fatalf("status at once = %+v", st)
			}
			clk.step(2 * time.Second)
			st, _ = e.CheckpointStatus(key, id, tr.RequestID)
			if done := st.Status.ID == flink.OperationCompleted; done != tc.wantDone {
				t.Fatalf("status = %+v", st)
			}
			if tc.wantDone && (st.Operation.FailureCause != nil) != tc.wantFailed {
				t.Errorf("operation = %+v", st.Operation)
			}
			if tc.wantDone && !tc.wantFailed && st.Operation.CheckpointID != 1 {
				t.Errorf("checkpoint id = %d", st.Operation.CheckpointID)
			}
			if v := view(t, e, id); v.CheckpointsTriggered != 1 {
				t.Errorf("triggered = %d", v.CheckpointsTriggered)
			}
		})
	}
}

// TestCheckpointTriggerNeedsFlink117: the REST schema of 1.16 has no POST
// /jobs/{jobid}/checkpoints; 1.17's does.
func TestCheckpointTriggerNeedsFlink117(t *testing.T) {
	for version, want := range map[string]int{"1.15.4": http.StatusNotFound, "1.16.3": http.StatusNotFound, "1.17.1": 0, "1.18.1": 0, "1.19.0": 0, "2.0.0": 0} {
		e, _ := newTestEngine(t)
		o := obs("tm-1")
		o.Version = version
		e.Observe(key, o)
		id := submit(t, e, flink.JarRunRequest{})
		_, err := e.TriggerCheckpoint(key, id, flink.CheckpointTriggerRequest{})
		got := 0
		if err != nil {
			got = statusOf(err)
		}
		if got != want {
			t.Errorf("Flink %s: err = %v, want HTTP %d (0: accepted)", version, err, want)
		}
	}
}

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
		{"savepoint and cancel", FaultNone, false, true, flink.JobCanceled, true, false},
		{"stop with savepoint", FaultNone, true, false, flink.JobFinished, true, false},
		{"failed savepoint", FaultFail, false, false, flink.JobRunning, false, true},
		{"failed stop keeps the job running", FaultFail, true, false, flink.JobRunning, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, obs("tm-1"))
			id := submit(t, e, flink.JarRunRequest{Parallelism: 2})
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
			if tc.wantState.Terminal() {
				ov, _ := e.Overview(key)
				if ov.SlotsAvailable != 2 {
					t.Errorf("slots not freed: %+v", ov)
				}
			}
		})
	}
}

func TestSavepointStallAndTriggerIDs(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	id := submit(t, e, flink.JarRunRequest{})
	e.SetSavepointFault(key, FaultStall)
	const trig = "0123456789abcdef0123456789abcdef"
	for range 3 {
		tr, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{TriggerID: trig})
		if err != nil || tr.RequestID != trig {
			t.Fatalf("stop = %+v, %v", tr, err)
		}
	}
	clk.step(time.Minute)
	if st, _ := e.SavepointStatus(key, id, trig); st.Status.ID != flink.OperationInProgress {
		t.Fatalf("stalled savepoint = %+v", st)
	}
	e.ClearFaults(key)
	if st, _ := e.SavepointStatus(key, id, trig); st.Status.ID != flink.OperationCompleted || st.Operation.Location == "" {
		t.Fatalf("after clearing = %+v", st)
	}
	if v := view(t, e, id); v.SavepointsTriggered != 1 || v.StopsTriggered != 1 || v.State != flink.JobFinished {
		t.Errorf("view = %+v; a repeated trigger ID must not start a second stop", v)
	}
	if _, err := e.SavepointStatus(key, id, "ffffffffffffffffffffffffffffffff"); statusOf(err) != http.StatusNotFound {
		t.Errorf("unknown trigger: %v", err)
	}
	if _, err := e.TriggerSavepoint(key, "ffffffffffffffffffffffffffffffff", flink.SavepointTriggerRequest{}); statusOf(err) != http.StatusNotFound {
		t.Errorf("unknown job: %v", err)
	}
}

func TestRestartsRestoreLatestState(t *testing.T) {
	for _, tc := range []struct {
		name          string
		savepoint     bool // take a savepoint after the checkpoints
		change        Observation
		wantRestart   bool
		wantSavepoint bool
	}{
		{"TaskManager replaced", false, obs("tm-1", "tm-3"), true, false},
		{"TaskManager replaced after a savepoint", true, obs("tm-1", "tm-3"), true, true},
		{"JobManager replaced", false, obs("tm-1", "tm-2").withJM("jm-2"), true, false},
		{"TaskManager added", false, obs("tm-1", "tm-2", "tm-3"), false, false},
		{"nothing changed", false, obs("tm-1", "tm-2"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, obs("tm-1", "tm-2"))
			id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
			clk.step(25 * time.Second) // checkpoints 1 and 2
			wantPath := "/chk-2"
			if tc.savepoint {
				tr, _ := e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{})
				clk.step(2 * time.Second)
				st, _ := e.SavepointStatus(key, id, tr.RequestID)
				wantPath = st.Operation.Location
			}
			e.Observe(key, tc.change)
			if !tc.wantRestart {
				if s := jobState(t, e, id); s != flink.JobRunning {
					t.Fatalf("state = %s", s)
				}
				return
			}
			if s := jobState(t, e, id); s != flink.JobRestarting {
				t.Fatalf("state after the change = %s, want RESTARTING", s)
			}
			clk.step(3 * time.Second)
			if s := jobState(t, e, id); s != flink.JobRunning {
				t.Fatalf("state after the restart delay = %s, want RUNNING", s)
			}
			cp, _ := e.Checkpoints(key, id)
			r := cp.Latest.Restored
			if r == nil || !strings.HasSuffix(r.ExternalPath, wantPath) || r.IsSavepoint != tc.wantSavepoint || cp.Counts.Restored != 1 {
				t.Fatalf("restored = %+v, want %s", r, wantPath)
			}
			if v := view(t, e, id); v.Restarts != 1 || v.RestoredFrom.ExternalPath != r.ExternalPath {
				t.Errorf("view = %+v", v)
			}
		})
	}
}

func TestRestartWaitsForSlotsAndJobManager(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, obs("tm-1", "tm-2"))
	id := submit(t, e, flink.JarRunRequest{Parallelism: 4})
	e.Observe(key, obs("tm-1"))
	clk.step(10 * time.Second)
	if s := jobState(t, e, id); s != flink.JobRestarting {
		t.Fatalf("with 2 of 4 slots = %s", s)
	}
	down := obs("tm-1", "tm-2")
	down.JobManagerReady = false
	e.Observe(key, down)
	if _, err := e.Overview(key); statusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("JobManager down: %v", err)
	}
	e.Observe(key, obs("tm-1", "tm-2"))
	clk.step(3 * time.Second)
	if s := jobState(t, e, id); s != flink.JobRunning {
		t.Fatalf("after JobManager and TaskManagers are back = %s", s)
	}
	if v := view(t, e, id); v.Restarts != 2 {
		t.Errorf("restarts = %d, want 2 (TaskManager lost, JobManager back)", v.Restarts)
	}
}

func TestSubmitFromSavepoint(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	old := submit(t, e, flink.JarRunRequest{})
	clk.step(25 * time.Second)
	tr, _ := e.StopWithSavepoint(key, old, flink.StopWithSavepointRequest{})
	clk.step(2 * time.Second)
	st, _ := e.SavepointStatus(key, old, tr.RequestID)
	id := submit(t, e, flink.JarRunRequest{SavepointPath: st.Operation.Location})
	cp, _ := e.Checkpoints(key, id)
	if r := cp.Latest.Restored; r == nil || r.ExternalPath != st.Operation.Location || !r.IsSavepoint || r.ID != 3 {
		t.Fatalf("restored = %+v", r)
	}
	clk.step(10 * time.Second)
	cp, _ = e.Checkpoints(key, id)
	if cp.Latest.Completed == nil || cp.Latest.Completed.ID != 4 {
		t.Errorf("numbering does not continue from the savepoint: %+v", cp.Latest.Completed)
	}
	external := submit(t, e, flink.JarRunRequest{SavepointPath: "s3://elsewhere/savepoint-1"})
	if v := view(t, e, external); v.RestoredFrom == nil || v.RestoredFrom.ExternalPath != "s3://elsewhere/savepoint-1" {
		t.Errorf("restored = %+v", v.RestoredFrom)
	}
}

func TestForcedJobStates(t *testing.T) {
	for _, tc := range []struct {
		force flink.JobStatus
		now   flink.JobStatus
		later flink.JobStatus
	}{
		{flink.JobFailing, flink.JobFailing, flink.JobFailed},
		{flink.JobFailed, flink.JobFailed, flink.JobFailed},
		{flink.JobRestarting, flink.JobRestarting, flink.JobRunning},
	} {
		t.Run(string(tc.force), func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, obs("tm-1"))
			id := submit(t, e, flink.JarRunRequest{})
			if err := e.SetJobState(key, id, tc.force); err != nil {
				t.Fatal(err)
			}
			if s := jobState(t, e, id); s != tc.now {
				t.Errorf("state = %s, want %s", s, tc.now)
			}
			clk.step(3 * time.Second)
			if s := jobState(t, e, id); s != tc.later {
				t.Errorf("later state = %s, want %s", s, tc.later)
			}
		})
	}
	e, _ := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	id := submit(t, e, flink.JarRunRequest{})
	if err := e.SetJobState(key, id, flink.JobRunning); statusOf(err) != http.StatusBadRequest {
		t.Errorf("forcing RUNNING: %v", err)
	}
}

func TestCancelAndJobLists(t *testing.T) {
	e, _ := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	a := submit(t, e, flink.JarRunRequest{EntryClass: "com.example.A"})
	b := submit(t, e, flink.JarRunRequest{})
	if err := e.CancelJob(key, a, "cancel"); err != nil {
		t.Fatal(err)
	}
	if err := e.CancelJob(key, a, "CANCEL"); err != nil {
		t.Fatalf("cancelling twice: %v", err)
	}
	jobs, _ := e.Jobs(key)
	if len(jobs.Jobs) != 2 || jobs.Jobs[0] != (flink.JobIDWithStatus{ID: a, Status: flink.JobCanceled}) || jobs.Jobs[1].Status != flink.JobRunning {
		t.Errorf("jobs = %+v", jobs)
	}
	ov, _ := e.JobsOverview(key)
	if len(ov.Jobs) != 2 || ov.Jobs[0].Name != "com.example.A" || ov.Jobs[1].JID != b || ov.Jobs[1].Name != "job.jar" {
		t.Errorf("overview = %+v", ov)
	}
	if _, err := e.RunJar(key, "nope.jar", flink.JarRunRequest{}); statusOf(err) != http.StatusBadRequest {
		t.Errorf("unknown jar: %v", err)
	}
	v, _ := e.View(key)
	if v.Requests["PATCH /jobs/{jobid}"] != 2 || v.Requests["POST /jars/{jarid}/run"] != 3 {
		t.Errorf("request counts = %v", v.Requests)
	}
}

// An upgrade may resubmit under the same job ID; the job's counters start
// over, the cluster's totals do not.
func TestResubmitSameJobIDKeepsTotals(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, obs("tm-1"))
	id := submit(t, e, flink.JarRunRequest{})
	if _, err := e.RunJar(key, "nope", flink.JarRunRequest{JobID: id}); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("unknown jar: %v", err)
	}
	up, _ := e.UploadJar(key, "job.jar")
	jar := up.Filename[strings.LastIndex(up.Filename, "/")+1:]
	if _, err := e.RunJar(key, jar, flink.JarRunRequest{JobID: id}); statusOf(err) != http.StatusConflict {
		t.Fatalf("running job ID reused: %v", err)
	}
	tr, _ := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{})
	clk.step(2 * time.Second)
	st, _ := e.SavepointStatus(key, id, tr.RequestID)
	run, err := e.RunJar(key, jar, flink.JarRunRequest{JobID: id, SavepointPath: st.Operation.Location})
	if err != nil || run.JobID != id {
		t.Fatalf("resubmit = %+v, %v", run, err)
	}
	v, _ := e.View(key)
	if len(v.Jobs) != 1 || v.Jobs[0].State != flink.JobRunning || v.Jobs[0].SavepointsTriggered != 0 {
		t.Errorf("jobs = %+v", v.Jobs)
	}
	if want := (Totals{JobsSubmitted: 2, SavepointsTriggered: 1, StopsTriggered: 1}); v.Totals != want {
		t.Errorf("totals = %+v, want %+v", v.Totals, want)
	}
}

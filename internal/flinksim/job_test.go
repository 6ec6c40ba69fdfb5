package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestJobLifecycle walks a submission through INITIALIZING, CREATED and
// RUNNING: the job is RUNNING as soon as scheduling starts, its tasks wait
// for slots, deploy, then run.
func TestJobLifecycle(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	id := submit(t, e, flink.JarRunRequest{Parallelism: 3})
	type step struct {
		after time.Duration
		state flink.JobStatus
		tasks string // "" when the job has no ExecutionGraph yet
	}
	check := func(steps ...step) {
		t.Helper()
		for _, s := range steps {
			clk.step(s.after)
			j := jobDetails(t, e, id)
			tasks := ""
			if len(j.Vertices) > 0 {
				tasks = j.Vertices[0].Status
			}
			if j.State != s.state || tasks != s.tasks {
				t.Fatalf("after %s: %s, tasks %q; want %s, %q", s.after, j.State, tasks, s.state, s.tasks)
			}
		}
	}
	check(step{0, flink.JobInitializing, ""})
	// No JobMaster yet: from 1.18 the Dispatcher has no gateway to ask for
	// the statistics, and the handler answers 500.
	_, err := e.Checkpoints(key, id)
	wantErr(t, err, http.StatusInternalServerError, "UnavailableDispatcherOperationException: Unable to get JobMasterGateway for initializing job.")
	check(step{time.Second, flink.JobRunning, "SCHEDULED"}, step{time.Minute, flink.JobRunning, "SCHEDULED"})
	if cp, _ := e.Checkpoints(key, id); cp.Counts.Completed != 0 {
		t.Fatalf("checkpoints without running tasks: %+v", cp.Counts)
	}
	e.Observe(key, simple(tms(2), nil).Observation())
	// Past the execution graph cache's 1 ms (web.refresh-interval).
	check(step{time.Millisecond, flink.JobRunning, "DEPLOYING"}, step{time.Second, flink.JobRunning, "RUNNING"})
	j := jobDetails(t, e, id)
	for _, s := range []flink.JobStatus{flink.JobInitializing, flink.JobCreated, flink.JobRunning} {
		if j.Timestamps[string(s)] <= 0 {
			t.Errorf("no %s timestamp: %v", s, j.Timestamps)
		}
	}
	if j.Timestamps[string(flink.JobFailed)] != 0 || len(j.Timestamps) != len(jobStatuses) {
		t.Errorf("timestamps = %v", j.Timestamps)
	}
	if v := view(t, e, id); v.Restarts != 0 {
		t.Errorf("a scale-up restarted the job %d times", v.Restarts)
	}
}

// Slots that never come fail the job after slot.request.timeout, and the
// restart strategy decides; without checkpointing there is none.
func TestSlotRequestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		settings  map[string]string
		wantState flink.JobStatus
	}{
		{"no checkpointing: no restarts", map[string]string{"execution.checkpointing.interval": "", "restart-strategy.type": "", "slot.request.timeout": "30000"}, flink.JobFailed},
		{"checkpointing: restarts", map[string]string{"slot.request.timeout": "30000"}, flink.JobRestarting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), tc.settings).Observation())
			id := submit(t, e, flink.JarRunRequest{Parallelism: 3})
			clk.step(30 * time.Second)
			if s := jobState(t, e, id); s != flink.JobRunning {
				t.Fatalf("before the timeout: %s", s)
			}
			clk.step(time.Second + time.Millisecond)
			if s := jobState(t, e, id); s != tc.wantState && !(tc.wantState == flink.JobFailed && s == flink.JobFailing) {
				t.Fatalf("after the timeout: %s, want %s", s, tc.wantState)
			}
			clk.step(time.Second)
			if v := view(t, e, id); !strings.Contains(v.FailureCause, "NoResourceAvailableException") || (tc.wantState == flink.JobFailed && v.State != flink.JobFailed) {
				t.Errorf("view = %+v", v)
			}
		})
	}
}

// Checkpoints follow execution.checkpointing.interval: none when it is
// unset; a completed checkpoint subsumes the oldest beyond num-retained,
// whose files are deleted.
func TestPeriodicCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  string
		settings map[string]string
		want     int64
		retained int
	}{
		{"unset: none", "1.19.1", map[string]string{"execution.checkpointing.interval": ""}, 0, 0},
		{"10s", "1.19.1", nil, 3, 1},
		{"1.17 spelling, 3 retained", "1.17.2", map[string]string{"state.checkpoints.num-retained": "3"}, 3, 3},
		{"1.20 key", "1.20.0", map[string]string{"state.checkpoints.dir": "", "execution.checkpointing.dir": "s3://bucket/checkpoints", "execution.checkpointing.num-retained": "2"}, 3, 2},
		{"2.0 reads the deprecated key", "2.0.0", map[string]string{"state.checkpoints.num-retained": "2"}, 3, 2},
		{"ISO-8601 from 2.1", "2.1.0", map[string]string{"execution.checkpointing.interval": "PT10S"}, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(1), tc.settings)
			c.Version, c.Env = tc.version, s3Plugin(tc.version)
			e.Observe(key, c.Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			clk.step(35 * time.Second)
			cp, err := e.Checkpoints(key, id)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Counts.Completed != tc.want {
				t.Fatalf("completed = %d, want %d", cp.Counts.Completed, tc.want)
			}
			if tc.want == 0 {
				return
			}
			if !strings.HasPrefix(cp.Latest.Completed.ExternalPath, "s3://bucket/checkpoints/"+id+"/chk-") {
				t.Errorf("path = %s", cp.Latest.Completed.ExternalPath)
			}
			kept := 0
			for _, h := range cp.History {
				if _, err := e.resolveSnapshotAt(key, h.ExternalPath); err == nil {
					kept++
				}
			}
			if kept != tc.retained {
				t.Errorf("%d checkpoints still on storage, want %d", kept, tc.retained)
			}
		})
	}
}

// resolveSnapshotAt finds a snapshot by path as the cluster's JobManager
// would, for tests.
func (e *Engine) resolveSnapshotAt(k ClusterKey, pointer string) (*snapshot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	e.advance(c, e.now())
	d := c.resourceManager().d
	s, err := e.resolveSnapshot(d, pointer)
	if err != nil {
		return nil, err
	}
	if ok, missing := s.readable(e.fs); !ok {
		return nil, &apiError{msg: missing}
	}
	return s, nil
}

// A failed checkpoint fails the job over once more than
// execution.checkpointing.tolerable-failed-checkpoints (0 by default) fail
// in a row; a failed savepoint never does.
func TestCheckpointFailuresFailOver(t *testing.T) {
	for _, tc := range []struct {
		name        string
		settings    map[string]string
		fault       func(e *Engine)
		after       time.Duration
		wantRestart bool
	}{
		{"one failed checkpoint, none tolerated", nil, func(e *Engine) { e.SetCheckpointFault(key, FaultFail) }, 12 * time.Second, true},
		{"two failed, two tolerated", map[string]string{"execution.checkpointing.tolerable-failed-checkpoints": "2"}, func(e *Engine) { e.SetCheckpointFault(key, FaultFail) }, 22 * time.Second, false},
		{"three failed, two tolerated", map[string]string{"execution.checkpointing.tolerable-failed-checkpoints": "2"}, func(e *Engine) { e.SetCheckpointFault(key, FaultFail) }, 32 * time.Second, true},
		{"stalled until the checkpoint timeout", map[string]string{"execution.checkpointing.timeout": "15s"}, func(e *Engine) { e.SetCheckpointFault(key, FaultStall) }, 26 * time.Second, true},
		{"stalled within the timeout", nil, func(e *Engine) { e.SetCheckpointFault(key, FaultStall) }, 26 * time.Second, false},
		{"failed savepoints", nil, func(e *Engine) { e.SetSavepointFault(key, FaultFail) }, 40 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), tc.settings).Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			tc.fault(e)
			for range 4 {
				_, _ = e.TriggerSavepoint(key, id, flink.SavepointTriggerRequest{})
				clk.step(tc.after / 4)
			}
			v := view(t, e, id)
			if (v.Restarts > 0) != tc.wantRestart {
				t.Fatalf("restarts = %d, want a restart: %v; %+v", v.Restarts, tc.wantRestart, v)
			}
			if tc.wantRestart && !strings.Contains(v.FailureCause, "Exceeded checkpoint tolerable failure threshold.") {
				t.Errorf("cause = %s", v.FailureCause)
			}
		})
	}
}

// TestTriggeredCheckpoint: POST /jobs/{jobid}/checkpoints (1.17+).
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
			e.Observe(key, simple(tms(1), map[string]string{"execution.checkpointing.interval": ""}).Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			e.SetCheckpointFault(key, tc.fault)
			tr, err := e.TriggerCheckpoint(key, id, flink.CheckpointTriggerRequest{CheckpointType: "FULL"})
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := e.CheckpointStatus(key, id, tr.RequestID); st.Status.ID != flink.OperationInProgress {
				t.Fatalf("status at once = %+v", st)
			}
			clk.step(time.Second)
			st, _ := e.CheckpointStatus(key, id, tr.RequestID)
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

// TestInitializingCheckpointStats: a job still initializing has empty
// statistics where the handler reads its sparse graph, which carries the
// job's checkpointing settings (before 1.18), and a 500 where it asks the
// Dispatcher, which has no JobMaster gateway for it yet (from 1.18).
func TestInitializingCheckpointStats(t *testing.T) {
	for _, version := range []string{"1.17.2", "1.18.1", "2.0.1"} {
		e, _ := newTestEngine(t)
		c := simple(tms(1), nil)
		c.Version, c.Env = version, s3Plugin(version)
		e.Observe(key, c.Observation())
		id := submit(t, e, flink.JarRunRequest{})
		cp, err := e.Checkpoints(key, id)
		if version == "1.17.2" {
			if err != nil || cp.Counts.Total != 0 || cp.Latest.Completed != nil || len(cp.History) != 0 {
				t.Errorf("%s: %+v, %v; want empty statistics", version, cp, err)
			}
			continue
		}
		if statusOf(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), "UnavailableDispatcherOperationException") {
			t.Errorf("%s: %+v, %v; want a 500 from the Dispatcher", version, cp, err)
		}
	}
}

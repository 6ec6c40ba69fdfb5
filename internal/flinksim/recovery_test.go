package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestRestartStrategies: failures go through the strategy the
// configuration names, else Flink's default for the minor: with
// checkpointing, fixed-delay (Integer.MAX_VALUE attempts, 1 s) before 1.19
// and exponential-delay (1 s initial, jitter 0.1) from 1.19; without, none.
func TestRestartStrategies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  string
		settings map[string]string
		// backoffs are the restart delays expected after each failure,
		// ±tolerance; a zero duration means the job FAILS instead.
		backoffs  []time.Duration
		tolerance time.Duration
	}{
		{"1.17 default: fixed delay, 1 s, forever", "1.17.2", map[string]string{"restart-strategy.type": ""},
			[]time.Duration{time.Second, time.Second, time.Second, time.Second}, 0},
		{"1.19 default: exponential from 1 s", "1.19.1", map[string]string{"restart-strategy.type": ""},
			[]time.Duration{time.Second, 1500 * time.Millisecond, 2250 * time.Millisecond}, 250 * time.Millisecond},
		{"2.2 default: exponential from 1 s", "2.2.0", map[string]string{"restart-strategy.type": ""},
			[]time.Duration{time.Second, 1500 * time.Millisecond}, 200 * time.Millisecond},
		{"no checkpointing: no restarts", "1.19.1", map[string]string{"restart-strategy.type": "", "execution.checkpointing.interval": ""},
			[]time.Duration{0}, 0},
		{"fixed-delay, 2 attempts", "1.19.1", map[string]string{"restart-strategy.fixed-delay.attempts": "2"},
			[]time.Duration{3 * time.Second, 3 * time.Second, 0}, 0},
		{"old key restart-strategy", "1.18.1", map[string]string{"restart-strategy.type": "", "restart-strategy": "none"},
			[]time.Duration{0}, 0},
		{"failure-rate", "1.19.1", map[string]string{"restart-strategy.type": "failure-rate", "restart-strategy.failure-rate.max-failures-per-interval": "2",
			"restart-strategy.failure-rate.failure-rate-interval": "1 h", "restart-strategy.failure-rate.delay": "2 s"},
			[]time.Duration{2 * time.Second, 2 * time.Second, 0}, 0},
		{"1.17 exponential doubles", "1.17.2", map[string]string{"restart-strategy.type": "exponential-delay", "restart-strategy.exponential-delay.jitter-factor": "0"},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, 0},
		{"1.19 exponential gives up", "1.19.1", map[string]string{"restart-strategy.type": "exponential-delay", "restart-strategy.exponential-delay.jitter-factor": "0",
			"restart-strategy.exponential-delay.attempts-before-reset-backoff": "2"},
			[]time.Duration{time.Second, 1500 * time.Millisecond, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(1), tc.settings)
			c.Version, c.Env = tc.version, s3Plugin(tc.version)
			e.Observe(key, c.Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			for i, want := range tc.backoffs {
				if err := e.FailJob(key, id, ""); err != nil {
					t.Fatalf("failure %d: %v", i+1, err)
				}
				clk.step(time.Millisecond) // past the execution graph cache
				if want == 0 {
					clk.step(time.Second)
					if s := jobState(t, e, id); s != flink.JobFailed {
						t.Fatalf("failure %d: %s, want FAILED", i+1, s)
					}
					return
				}
				if s := jobState(t, e, id); s != flink.JobRestarting {
					t.Fatalf("failure %d: %s, want RESTARTING", i+1, s)
				}
				step := 50 * time.Millisecond
				waited := time.Duration(0)
				for jobState(t, e, id) == flink.JobRestarting && waited < time.Minute {
					clk.step(step)
					waited += step
				}
				if waited < want-tc.tolerance || waited > want+tc.tolerance+step {
					t.Errorf("failure %d: restarted after %s, want %s ±%s", i+1, waited, want, tc.tolerance)
				}
				clk.step(time.Second) // deploy
			}
		})
	}
}

// TestTaskManagerLoss: a TaskManager that goes fails the tasks it ran; the
// job restores its latest completed checkpoint, never a savepoint taken
// after it (savepoints do not join the checkpoint store). State on a
// TaskManager's own disk is gone with it, so the restore fails and the job
// restarts until its strategy gives up.
func TestTaskManagerLoss(t *testing.T) {
	for _, tc := range []struct {
		name        string
		settings    map[string]string
		savepoint   bool
		change      []string
		wantRestart bool
		wantFailed  bool
	}{
		{"TaskManager replaced", nil, false, []string{"tm-a", "tm-c"}, true, false},
		{"replaced after a savepoint", nil, true, []string{"tm-a", "tm-c"}, true, false},
		{"TaskManager added", nil, false, []string{"tm-a", "tm-b", "tm-c"}, false, false},
		{"nothing changed", nil, false, []string{"tm-a", "tm-b"}, false, false},
		{"state on the pods' own disks", map[string]string{"state.checkpoints.dir": "file:///flink-data/checkpoints", "restart-strategy.fixed-delay.attempts": "3"},
			false, []string{"tm-a", "tm-c"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple([]string{"tm-a", "tm-b"}, tc.settings)
			e.Observe(key, c.Observation())
			id := running(t, e, clk, flink.JarRunRequest{Parallelism: 4})
			clk.step(25 * time.Second) // checkpoints 1 and 2
			if tc.savepoint {
				savepoint(t, e, clk, id, flink.SavepointTriggerRequest{})
			}
			c.TaskManagers = tc.change
			e.Observe(key, c.Observation())
			if !tc.wantRestart {
				if v := view(t, e, id); v.State != flink.JobRunning || v.Restarts != 0 {
					t.Fatalf("view = %+v", v)
				}
				return
			}
			if s := jobState(t, e, id); s != flink.JobRestarting {
				t.Fatalf("state after the loss = %s, want RESTARTING", s)
			}
			clk.step(3 * time.Second)
			if s := jobState(t, e, id); s != flink.JobRunning {
				t.Fatalf("after the backoff = %s, want RUNNING", s)
			}
			clk.step(time.Second)
			if tc.wantFailed {
				clk.step(20 * time.Second)
				v := view(t, e, id)
				if v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "java.io.FileNotFoundException") || v.Restarts != 3 {
					t.Fatalf("view = %+v", v)
				}
				return
			}
			cp, _ := e.Checkpoints(key, id)
			r := cp.Latest.Restored
			if r == nil || !strings.HasSuffix(r.ExternalPath, "/chk-2") || r.IsSavepoint || cp.Counts.Restored != 1 {
				t.Fatalf("restored = %+v, want chk-2", r)
			}
			if v := view(t, e, id); v.Restarts != 1 || v.State != flink.JobRunning {
				t.Errorf("view = %+v", v)
			}
		})
	}
}

// TestJobManagerLoss: a new JobManager process keeps nothing of the old
// one's memory. Without high availability the jobs are gone; with it the
// new leader recovers every job that was not globally terminal, from its
// latest checkpoint, once the crashed leader's lease has expired.
func TestJobManagerLoss(t *testing.T) {
	ha := map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo",
		"high-availability.storageDir": "s3://bucket/ha",
	}
	t.Run("without high availability", func(t *testing.T) {
		e, clk := newTestEngine(t)
		e.Observe(key, simple(tms(1), nil).Observation())
		id := running(t, e, clk, flink.JarRunRequest{})
		if err := e.LoseJobManager(key); err != nil {
			t.Fatal(err)
		}
		jobs, err := e.Jobs(key)
		if err != nil || len(jobs.Jobs) != 0 {
			t.Fatalf("jobs = %+v, %v", jobs, err)
		}
		if v := view(t, e, id); v.Present {
			t.Errorf("view = %+v", v)
		}
	})
	t.Run("with high availability", func(t *testing.T) {
		e, clk := newTestEngine(t)
		e.Observe(key, simple(tms(2), ha).Observation())
		id := running(t, e, clk, flink.JarRunRequest{})
		done := running(t, e, clk, flink.JarRunRequest{})
		_ = e.CancelJob(key, done, "")
		clk.step(25 * time.Second)
		if err := e.LoseJobManager(key); err != nil {
			t.Fatal(err)
		}
		// The crashed leader's lease (15 s by default) must expire first.
		_, err := e.Jobs(key)
		wantErr(t, err, http.StatusServiceUnavailable, "ongoing leader election")
		clk.step(15 * time.Second)
		jobs, err := e.Jobs(key)
		if err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != id {
			t.Fatalf("recovered jobs = %+v, %v", jobs, err)
		}
		clk.step(2 * time.Second) // initializing, deploying
		cp, _ := e.Checkpoints(key, id)
		if s := jobState(t, e, id); s != flink.JobRunning || cp.Latest.Restored == nil || !strings.HasSuffix(cp.Latest.Restored.ExternalPath, "/chk-2") {
			t.Fatalf("recovered job %s restored from %+v", s, cp.Latest.Restored)
		}
		clk.step(11 * time.Second)
		if cp, _ := e.Checkpoints(key, id); cp.Latest.Completed == nil || cp.Latest.Completed.ID != 3 {
			t.Errorf("checkpoint IDs restart instead of continuing: %+v", cp.Latest.Completed)
		}
	})
	// A job restored from a savepoint holds it in its checkpoint store,
	// HA store included (CheckpointCoordinator#restoreSavepoint adds it
	// through addCheckpointAndSubsumeOldestOne), and its first checkpoint
	// subsumes it in both. A new leader restores the HA store's latest:
	// the savepoint before that checkpoint, the checkpoint after it, never
	// the savepoint again once a checkpoint completed.
	for _, tc := range []struct {
		name        string
		run         time.Duration // from the restored job's start to the loss
		wantSuffix  string        // of the path restored; "" is the savepoint's
		wantSavept  bool
		wantRestore int64
	}{
		{"with high availability, lost before the restored job's first checkpoint", 0, "", true, 3},
		{"with high availability, lost after the restored job's first checkpoint", 11 * time.Second, "/chk-4", false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), ha).Observation())
			old := running(t, e, clk, flink.JarRunRequest{})
			clk.step(25 * time.Second)
			sp := stopped(t, e, clk, old)
			id := running(t, e, clk, flink.JarRunRequest{SavepointPath: sp})
			clk.step(tc.run)
			if err := e.LoseJobManager(key); err != nil {
				t.Fatal(err)
			}
			clk.step(15 * time.Second) // the crashed leader's lease
			if _, err := e.Jobs(key); err != nil {
				t.Fatal(err)
			}
			clk.step(2 * time.Second)
			cp, _ := e.Checkpoints(key, id)
			r := cp.Latest.Restored
			want := sp
			if tc.wantSuffix != "" {
				want = tc.wantSuffix
			}
			if r == nil || !strings.HasSuffix(r.ExternalPath, want) || r.ID != tc.wantRestore || r.IsSavepoint != tc.wantSavept {
				t.Fatalf("recovered job restored from %+v; want %s (ID %d, is_savepoint %t)", r, want, tc.wantRestore, tc.wantSavept)
			}
			clk.step(11 * time.Second)
			if cp, _ := e.Checkpoints(key, id); cp.Latest.Completed == nil || cp.Latest.Completed.ID != tc.wantRestore+1 {
				t.Errorf("the recovered job's next checkpoint %+v; want ID %d", cp.Latest.Completed, tc.wantRestore+1)
			}
		})
	}
	t.Run("high availability on the JobManager's own disk", func(t *testing.T) {
		e, clk := newTestEngine(t)
		local := map[string]string{"high-availability.storageDir": "file:///flink-data/ha"}
		for k, v := range ha {
			if _, ok := local[k]; !ok {
				local[k] = v
			}
		}
		e.Observe(key, simple(tms(1), local).Observation())
		running(t, e, clk, flink.JarRunRequest{})
		_ = e.LoseJobManager(key)
		clk.step(15 * time.Second)
		v, _ := e.View(key)
		if _, err := e.Jobs(key); statusOf(err) != 0 || !strings.Contains(v.JobManagers[0].Down, "Could not recover job with job id") {
			t.Fatalf("jobs: %v; JobManager %+v", err, v.JobManagers[0])
		}
	})
}

// TestSubmissionRules: Dispatcher#submitJob refuses a job ID that runs, or
// that the job result store holds as globally terminal. Without high
// availability that store is the process's memory; with it, files that
// job-result-store.delete-on-commit (the default) deletes once the job is
// cleaned up.
func TestSubmissionRules(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name     string
		settings map[string]string
		finish   bool // stop the first job before resubmitting
		newJM    bool // and replace the JobManager
		wantOK   bool
	}{
		{"running", nil, false, false, false},
		{"finished, same process, no HA", nil, true, false, false},
		{"finished, new process, no HA", nil, true, true, true},
		{"finished, HA, delete-on-commit", zookeeperHA, true, false, true},
		{"finished, HA, entries kept", merge(zookeeperHA, map[string]string{"job-result-store.delete-on-commit": "false"}), true, false, false},
		{"finished, HA, entries kept, new process", merge(zookeeperHA, map[string]string{"job-result-store.delete-on-commit": "false"}), true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(2), tc.settings).Observation())
			running(t, e, clk, flink.JarRunRequest{JobID: id})
			if tc.finish {
				_, _ = e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{})
				clk.step(2 * time.Second)
			}
			if tc.newJM {
				_ = e.LoseJobManager(key)
				clk.step(time.Minute)
			}
			_, err := e.RunJar(key, upload(t, e), flink.JarRunRequest{JobID: id})
			if tc.wantOK {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, http.StatusBadRequest, "Could not execute application.")
			if !strings.Contains(err.Error(), "DuplicateJobSubmissionException: Job has already been submitted.") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// TestCleanupTakenOver: with high availability, a JobManager lost while a
// globally terminal job is being cleaned up leaves its result dirty. The
// next leader does not recover the job: a CheckpointResourcesCleanupRunner
// finishes the cleanup, and until the job store forgets it REST shows the
// job only by its result (a sparse graph named "unknown", no vertices, no
// checkpoint statistics). The ID is refused while the result is dirty, and
// after the cleanup as the store's commit setting says.
func TestCleanupTakenOver(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name       string
		keep       bool // job-result-store.delete-on-commit: false
		end        flink.JobStatus
		wantEnd    int64 // end-time > 0 (1) or 0
		acceptLate bool  // the ID is accepted once the cleanup ended
	}{
		{"failed, entries deleted on commit", false, flink.JobFailed, 1, true},
		{"failed, entries kept", true, flink.JobFailed, 1, false},
		{"cancelled, entries kept", true, flink.JobCanceled, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			settings := zookeeperHA
			if tc.keep {
				settings = merge(zookeeperHA, map[string]string{"job-result-store.delete-on-commit": "false"})
			}
			e.Observe(key, simple(tms(2), settings).Observation())
			running(t, e, clk, flink.JarRunRequest{JobID: id})
			clk.step(11 * time.Second)
			if cp, err := e.Checkpoints(key, id); err != nil || cp.Counts.Completed == 0 {
				t.Fatalf("no checkpoint before the end: %+v, %v", cp, err)
			}
			e.SetCleanupDelay(key, time.Hour)
			if tc.end == flink.JobFailed {
				if err := e.SetJobState(key, id, flink.JobFailed); err != nil {
					t.Fatal(err)
				}
			} else if err := e.CancelJob(key, id, ""); err != nil {
				t.Fatal(err)
			}
			clk.step(2 * time.Second)
			if s := jobState(t, e, id); s != tc.end {
				t.Fatalf("job %s before the loss, want %s", s, tc.end)
			}
			if err := e.LoseJobManager(key); err != nil {
				t.Fatal(err)
			}
			clk.step(time.Minute)
			j := jobDetails(t, e, id)
			if j.Name != "unknown" || j.State != tc.end || len(j.Vertices) != 0 || (j.EndTime > 0) != (tc.wantEnd > 0) || j.EndTime < 0 {
				t.Errorf("the new leader shows %q %s, %d vertices, end-time %d; want the result only: \"unknown\" %s, no vertices", j.Name, j.State, len(j.Vertices), j.EndTime, tc.end)
			}
			_, err := e.Checkpoints(key, id)
			wantErr(t, err, http.StatusNotFound, "Checkpointing has not been enabled.")
			if ov, err := e.JobsOverview(key); err != nil || len(ov.Jobs) != 1 || ov.Jobs[0].JID != id {
				t.Errorf("jobs overview %+v, %v; want the job listed", ov, err)
			}
			if v, _ := e.View(key); v.Totals.JobsSubmitted != 1 || len(v.Jobs) != 1 || !v.Jobs[0].Present || v.Jobs[0].State != tc.end {
				t.Errorf("view %+v; want the one job submitted, shown (by its result), %s, not recovered and run", v.Jobs, tc.end)
			}
			_, err = e.RunJar(key, upload(t, e), flink.JarRunRequest{JobID: id})
			wantErr(t, err, http.StatusBadRequest, "DuplicateJobSubmissionException")
			e.SetCleanupDelay(key, 0)
			_, err = e.RunJar(key, upload(t, e), flink.JarRunRequest{JobID: id})
			if tc.acceptLate != (err == nil) {
				t.Errorf("after the cleanup: %v; want accepted %v", err, tc.acceptLate)
			}
		})
	}
}

// zookeeperHA is high availability with ZooKeeper and storage on s3.
var zookeeperHA = map[string]string{
	"high-availability.type": "zookeeper", "high-availability.zookeeper.quorum": "zk:2181",
	"high-availability.storageDir": "s3://bucket/ha",
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// TestRestoreFromPath: a job submitted with a savepoint path restores it,
// continuing its checkpoint numbering; a path that does not exist (never
// written, lost, or on a pod that is gone) fails the job at
// initialization, with no restart.
func TestRestoreFromPath(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		mounts   []Mount
		path     func(sp string) string
		lose     func(e *Engine, sp string)
		wantOK   bool
	}{
		{"savepoint on s3", nil, nil, nil, nil, true},
		{"its _metadata file", nil, nil, func(sp string) string { return sp + "/_metadata" }, nil, true},
		{"never written", nil, nil, func(string) string { return "s3://elsewhere/savepoint-1" }, nil, false},
		{"lost", nil, nil, nil, func(e *Engine, sp string) { _, _ = e.LosePath(key, sp) }, false},
		{"on the JobManager's disk, pod replaced", map[string]string{"state.savepoints.dir": "file:///flink-data/savepoints"}, nil, nil,
			func(e *Engine, sp string) { _ = e.LoseJobManager(key) }, false},
		{"on a shared claim, pod replaced", map[string]string{"state.savepoints.dir": "file:///flink-shared/savepoints"}, []Mount{{Path: "/flink-shared", Claim: "state"}}, nil,
			func(e *Engine, sp string) { _ = e.LoseJobManager(key) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(1), tc.settings)
			c.Mounts = tc.mounts
			e.Observe(key, c.Observation())
			old := running(t, e, clk, flink.JarRunRequest{})
			clk.step(25 * time.Second)
			tr, _ := e.StopWithSavepoint(key, old, flink.StopWithSavepointRequest{})
			clk.step(2 * time.Second)
			st, _ := e.SavepointStatus(key, old, tr.RequestID)
			sp := st.Operation.Location
			if tc.lose != nil {
				tc.lose(e, sp)
			}
			path := sp
			if tc.path != nil {
				path = tc.path(sp)
			}
			id := submit(t, e, flink.JarRunRequest{SavepointPath: path})
			clk.step(time.Second)
			if !tc.wantOK {
				v := view(t, e, id)
				if v.State != flink.JobFailed || v.Restarts != 0 || !strings.Contains(v.FailureCause, "JobInitializationException: Could not start the JobMaster.") ||
					!strings.Contains(v.FailureCause, "Cannot find checkpoint or savepoint file/directory '"+path+"'") {
					t.Fatalf("view = %+v", v)
				}
				ex, err := e.JobExceptions(key, id)
				if err != nil || len(ex.ExceptionHistory.Entries) != 1 || ex.ExceptionHistory.Entries[0].ExceptionName != "org.apache.flink.runtime.client.JobInitializationException" {
					t.Errorf("exceptions = %+v, %v", ex, err)
				}
				return
			}
			clk.step(time.Second)
			cp, _ := e.Checkpoints(key, id)
			if r := cp.Latest.Restored; r == nil || r.ExternalPath != sp || !r.IsSavepoint || r.ID != 3 {
				t.Fatalf("restored = %+v", r)
			}
			clk.step(11 * time.Second)
			if cp, _ = e.Checkpoints(key, id); cp.Latest.Completed == nil || cp.Latest.Completed.ID != 4 {
				t.Errorf("numbering does not continue from the savepoint: %+v", cp.Latest.Completed)
			}
		})
	}
}

// TestRetentionOnTermination: what a job's end leaves of its checkpoints
// (execution.checkpointing.externalized-checkpoint-retention and
// CompletedCheckpoint#shouldBeDiscardedOnShutdown).
func TestRetentionOnTermination(t *testing.T) {
	for _, tc := range []struct {
		retention string
		end       func(e *Engine, id string)
		wantKept  bool
	}{
		{"", func(e *Engine, id string) { _ = e.CancelJob(key, id, "") }, false},
		{"RETAIN_ON_CANCELLATION", func(e *Engine, id string) { _ = e.CancelJob(key, id, "") }, true},
		{"RETAIN_ON_CANCELLATION", func(e *Engine, id string) { _, _ = e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{}) }, false},
		{"DELETE_ON_CANCELLATION", func(e *Engine, id string) { _ = e.CancelJob(key, id, "") }, false},
		{"DELETE_ON_CANCELLATION", func(e *Engine, id string) { _ = e.SetJobState(key, id, flink.JobFailed) }, true},
		{"", func(e *Engine, id string) { _ = e.SetJobState(key, id, flink.JobFailed) }, false},
	} {
		t.Run(tc.retention, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), map[string]string{"execution.checkpointing.externalized-checkpoint-retention": tc.retention}).Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			clk.step(15 * time.Second)
			cp, _ := e.Checkpoints(key, id)
			chk := cp.Latest.Completed.ExternalPath
			tc.end(e, id)
			clk.step(3 * time.Second)
			_, err := e.resolveSnapshotAt(key, chk)
			if kept := err == nil; kept != tc.wantKept {
				t.Fatalf("%s kept: %v, want %v (job %s)", chk, kept, tc.wantKept, jobState(t, e, id))
			}
			if !tc.wantKept {
				return
			}
			// A retained checkpoint restores like a savepoint.
			next := submit(t, e, flink.JarRunRequest{SavepointPath: chk})
			clk.step(2 * time.Second)
			if v := view(t, e, next); v.State != flink.JobRunning || v.RestoredFrom == nil || v.RestoredFrom.ExternalPath != chk {
				t.Errorf("restore from the retained checkpoint: %+v", v)
			}
		})
	}
}

// TestProgramConfiguration: the job's configuration is read when its
// program runs, in the JobManager: a value the environment cannot parse
// fails the submission, one the JobMaster cannot parse fails the job.
func TestProgramConfiguration(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), map[string]string{"execution.checkpointing.interval": "thirty"}).Observation())
	_, err := e.RunJar(key, upload(t, e), flink.JarRunRequest{})
	wantErr(t, err, http.StatusBadRequest, "Could not execute application.")
	if !strings.Contains(err.Error(), "Could not parse value 'thirty' for key 'execution.checkpointing.interval'.") {
		t.Errorf("err = %v", err)
	}
	// The request's flinkConfiguration applies on top.
	id := running(t, e, clk, flink.JarRunRequest{FlinkConfiguration: map[string]string{"execution.checkpointing.interval": "5s"}})
	clk.step(11 * time.Second)
	if cp, _ := e.Checkpoints(key, id); cp.Counts.Completed != 2 {
		t.Errorf("checkpoints = %+v", cp.Counts)
	}
	bad := submit(t, e, flink.JarRunRequest{FlinkConfiguration: map[string]string{"execution.checkpointing.interval": "5s", "restart-strategy.type": "sometimes"}})
	clk.step(time.Second)
	if v := view(t, e, bad); v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "Unknown restart strategy sometimes.") {
		t.Errorf("view = %+v", v)
	}
}

// TestFileSystemPlugins: the official image serves s3 only with its plugin
// linked (ENABLE_BUILT_IN_PLUGINS).
func TestFileSystemPlugins(t *testing.T) {
	e, clk := newTestEngine(t)
	c := simple(tms(1), nil)
	c.Env = nil
	e.Observe(key, c.Observation())
	id := submit(t, e, flink.JarRunRequest{})
	clk.step(time.Second)
	if v := view(t, e, id); v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "Could not find a file system implementation for scheme 's3'") {
		t.Errorf("view = %+v", v)
	}
}

// TestFlinkPath: locations read back as Flink's Path#toString writes
// them, the form a checkpoint's or savepoint's external pointer takes.
func TestFlinkPath(t *testing.T) {
	for in, want := range map[string]string{
		"file:///flink-data/checkpoints/j/chk-3": "file:/flink-data/checkpoints/j/chk-3",
		"file:/flink-data/savepoints/":           "file:/flink-data/savepoints",
		"file:///flink-shared//team-a/x":         "file:/flink-shared/team-a/x",
		"s3://bucket/savepoints/":                "s3://bucket/savepoints",
		"s3://bucket//a/b":                       "s3://bucket/a/b",
		"hdfs://nn:8020/x":                       "hdfs://nn:8020/x",
		"/tmp/x/":                                "/tmp/x",
		"/":                                      "/",
	} {
		if got := flinkPath(in); got != want {
			t.Errorf("flinkPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLocate(t *testing.T) {
	mounts := []Mount{{Path: "/flink-data"}, {Path: "/flink-shared", Claim: "state"}, {Path: "/flink-shared/deeper/", Claim: "other"}}
	for uri, want := range map[string]loc{
		"s3://bucket/a/b":                {"s3://bucket", "/a/b"},
		"S3://bucket/a/":                 {"s3://bucket", "/a"},
		"hdfs://nn:8020/x":               {"hdfs://nn:8020", "/x"},
		"file:///flink-data/sp":          {"pod/uid-1", "/flink-data/sp"},
		"/tmp/x":                         {"pod/uid-1", "/tmp/x"},
		"file:///flink-shared/sp":        {"claim/team-a/state", "/sp"},
		"file:/flink-shared/sp":          {"claim/team-a/state", "/sp"},
		"file:///flink-shared":           {"claim/team-a/state", "/"},
		"file:///flink-shared/deeper/x":  {"claim/team-a/other", "/x"},
		"file:///flink-sharedness/x":     {"pod/uid-1", "/flink-sharedness/x"},
		"file:///flink-shared/../etc/sp": {"pod/uid-1", "/etc/sp"},
	} {
		got, err := locate(uri, "uid-1", "team-a", mounts)
		if err != nil || got != want {
			t.Errorf("locate(%q) = %v, %v; want %v", uri, got, err, want)
		}
	}
}

// TestTaskStartFault: a job RUNNING whose tasks throw as they open fails
// from its tasks, not its status: RUNNING with tasks deploying, then the
// restart strategy decides (none: FAILED). A job already running is not
// touched.
func TestTaskStartFault(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(2), map[string]string{"restart-strategy.type": "none"}).Observation())
	before := running(t, e, clk, flink.JarRunRequest{})
	const cause = "java.lang.IllegalStateException: open failed"
	e.SetTaskStartFault(key, cause)
	id := submit(t, e, flink.JarRunRequest{})
	sawRunning := false
	for waited := time.Duration(0); waited < 5*time.Second && jobState(t, e, id) != flink.JobFailed; waited += 50 * time.Millisecond {
		if j := jobDetails(t, e, id); j.State == flink.JobRunning && j.Vertices[0].Tasks["RUNNING"] == 0 {
			sawRunning = true
		}
		clk.step(50 * time.Millisecond)
	}
	if v := view(t, e, id); v.State != flink.JobFailed || v.FailureCause != cause || !sawRunning {
		t.Fatalf("job %s, cause %q, RUNNING with tasks not running first: %v", v.State, v.FailureCause, sawRunning)
	}
	if s := jobState(t, e, before); s != flink.JobRunning {
		t.Errorf("the job that ran before the fault is %s", s)
	}
	e.ClearFaults(key)
	if id := running(t, e, clk, flink.JarRunRequest{}); id == "" {
		t.Error("no job after the fault was cleared")
	}
}

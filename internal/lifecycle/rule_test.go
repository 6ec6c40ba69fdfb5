package lifecycle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/policy"
)

// TestRestorePoint walks the state rule's every branch: what it allows
// before a stop, and what a job that ended restores from.
func TestRestorePoint(t *testing.T) {
	ended := metav1.NewTime(t0.Add(-time.Minute))
	justEnded := metav1.NewTime(t0.Add(-2 * time.Second))
	done := metav1.NewTime(t0.Add(-time.Minute))
	stop := &v1.SavepointInfo{Path: "s3://sp/stop", JobID: "job-1", Stop: true, CheckpointID: 8, CompletedAt: &done}
	cp := func(id int64) *Checkpoint { return &Checkpoint{ID: id, Path: "s3://cp/chk-" + string(rune('0'+id))} }
	// A job RUNNING whose tasks restore their state after a failover:
	// one of two runs.
	tasksStarting := func() Flink {
		f := running("job-1", 3)
		f.LatestCheckpoint = cp(3)
		f.Vertices[0].Tasks = map[string]int32{"RUNNING": 1, "INITIALIZING": 1}
		return f
	}
	for _, tc := range []struct {
		name      string
		job       v1.JobStatus
		flink     Flink
		retention string
		why       Purpose
		do        Do
		path      string
		reason    string
	}{
		{"nothing ever ran", v1.JobStatus{}, Flink{}, "", ForVersion, Restore, "s3://sp/initial", ""},
		{"Flink unreachable", v1.JobStatus{ID: "job-1"}, Flink{}, "", ForChange, Hold, "", "FlinkUnreachable"},
		{"the checkpoint history unread", v1.JobStatus{ID: "job-1", EndedAt: &ended}, Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, HistoryUnread: true},
			"RETAIN_ON_CANCELLATION", ForLastState, Hold, "", "FlinkUnreachable"},

		{"running, version change: savepoint", v1.JobStatus{ID: "job-1"}, running("job-1", 3), "", ForVersion, TakeSavepoint, "", ""},
		{"running, job change: savepoint", v1.JobStatus{ID: "job-1"}, running("job-1", 3), "", ForChange, TakeSavepoint, "", ""},
		{"running, removal: savepoint", v1.JobStatus{ID: "job-1"}, running("job-1", 3), "", ForRemoval, TakeSavepoint, "", ""},
		{"restarting, version change: waits", v1.JobStatus{ID: "job-1"}, Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting}, "", ForVersion, Hold, "", "WaitingForRunning"},
		{"recovered by a failover, restarting, job change, recovered checkpoint retained: cancel", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, Restored: cp(2)}, "RETAIN_ON_CANCELLATION", ForChange, Cancel, "", ""},
		{"recovered by a failover, restarting, job change, cancel deletes: held", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, Restored: cp(2)}, "DELETE_ON_CANCELLATION", ForChange, Hold, "", "NoStateSurvivesCancel"},
		{"created, a cached history showing a checkpoint, last-state: waits", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCreated, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForLastState, Hold, "", "WaitingForRunning"},
		// INITIALIZING: Flink shows nothing of the checkpoints the new
		// leader is recovering, so nothing may be cancelled on it.
		{"initializing, last-state, nothing shown: waits", v1.JobStatus{ID: "job-1", RestoredFrom: "s3://sp/pre"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobInitializing}, "RETAIN_ON_CANCELLATION", ForLastState, Hold, "", "WaitingForRunning"},
		{"initializing, job change: waits", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobInitializing}, "RETAIN_ON_CANCELLATION", ForChange, Hold, "", "WaitingForRunning"},
		{"initializing, removal: waits", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobInitializing}, "", ForRemoval, Hold, "", "WaitingForRunning"},
		{"created, the adaptive scheduler waiting after a restart, last-state: waits", v1.JobStatus{ID: "job-1", RestoredFrom: "s3://sp/pre", LastCheckpoint: &v1.CheckpointInfo{ID: 7, Path: "s3://cp/chk-7", JobID: "job-1"}},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCreated}, "RETAIN_ON_CANCELLATION", ForLastState, Hold, "", "WaitingForRunning"},
		{"created, the adaptive scheduler waiting, job change: waits", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCreated}, "RETAIN_ON_CANCELLATION", ForChange, Hold, "", "WaitingForRunning"},
		{"initializing, stateless: cancel", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobInitializing}, "", ForStateless, Cancel, "", ""},
		{"initializing, rollback: the failed job is cancelled", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobInitializing}, "", ForRollback, Cancel, "", ""},
		{"recovered by a failover, cancelled before a new checkpoint: the recovered checkpoint", v1.JobStatus{ID: "job-1", EndedAt: &ended},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, Restored: cp(2)}, "RETAIN_ON_CANCELLATION", ForChange, Restore, "s3://cp/chk-2", ""},
		{"restored from what the operator gave, cancelled before a checkpoint: that", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/given"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, Restored: &Checkpoint{ID: 1, Path: "s3://sp/given"}, RestoredSavepoint: true}, "RETAIN_ON_CANCELLATION", ForChange, Restore, "s3://sp/given", ""},
		{"running, tasks restoring, version change: waits", v1.JobStatus{ID: "job-1"}, tasksStarting(), "", ForVersion, Hold, "", "WaitingForRunning"},
		{"running, tasks restoring, job change, checkpoint retained: waits for a savepoint", v1.JobStatus{ID: "job-1"}, tasksStarting(), "RETAIN_ON_CANCELLATION", ForChange, Hold, "", "WaitingForRunning"},
		{"running, tasks restoring, removal: waits", v1.JobStatus{ID: "job-1"}, tasksStarting(), "", ForRemoval, Hold, "", "WaitingForRunning"},
		{"running, tasks restoring, last-state, checkpoint retained: cancel", v1.JobStatus{ID: "job-1"}, tasksStarting(), "RETAIN_ON_CANCELLATION", ForLastState, Cancel, "", ""},
		{"running, tasks restoring, last-state, cancel deletes: held", v1.JobStatus{ID: "job-1"}, tasksStarting(), "DELETE_ON_CANCELLATION", ForLastState, Hold, "", "NoStateSurvivesCancel"},
		{"restarting, job change, checkpoint retained: cancel", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForChange, Cancel, "", ""},
		{"running, last-state, checkpoint retained: cancel", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForLastState, Cancel, "", ""},
		{"running, last-state, no checkpoint: savepoint", v1.JobStatus{ID: "job-1"}, running("job-1", 0), "RETAIN_ON_CANCELLATION", ForLastState, TakeSavepoint, "", ""},
		{"running, last-state, cancel deletes: savepoint", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, LatestCheckpoint: cp(3)}, "DELETE_ON_CANCELLATION", ForLastState, TakeSavepoint, "", ""},
		{"restarting, last-state, cancel deletes: held", v1.JobStatus{ID: "job-1"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, LatestCheckpoint: cp(3)}, "", ForLastState, Hold, "", "NoStateSurvivesCancel"},
		{"restarting, last-state, no checkpoint ever: cancel", v1.JobStatus{ID: "job-1", RestoredFrom: "s3://sp/pre"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting}, "", ForLastState, Cancel, "", ""},
		{"rollback: the failed job is cancelled", v1.JobStatus{ID: "job-1"}, running("job-1", 3), "", ForRollback, Cancel, "", ""},
		{"stop completed, Flink's cache says RUNNING: waits", v1.JobStatus{ID: "job-1", LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/stop", JobID: "job-1", Stop: true, CompletedAt: &justEnded}},
			running("job-1", 3), "", ForVersion, Wait, "", ""},
		{"stop completed long ago, still RUNNING: held", v1.JobStatus{ID: "job-1", LastSavepoint: stop},
			running("job-1", 3), "", ForVersion, Hold, "", "StopNotObserved"},

		{"stopped with a savepoint: that savepoint, at once", v1.JobStatus{ID: "job-1", LastSavepoint: stop, EndedAt: &justEnded},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, LatestCheckpoint: cp(7)}, "", ForVersion, Restore, "s3://sp/stop", ""},
		{"ended within Flink's cache window: waits", v1.JobStatus{ID: "job-1", EndedAt: &justEnded},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForLastState, Wait, "", ""},
		{"ended: the newest retained checkpoint", v1.JobStatus{ID: "job-1", EndedAt: &ended, LastCheckpoint: &v1.CheckpointInfo{ID: 2, Path: "s3://cp/chk-2", JobID: "job-1"}},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForLastState, Restore, "s3://cp/chk-3", ""},
		{"ended: a newer savepoint of the job beats the checkpoint", v1.JobStatus{ID: "job-1", EndedAt: &ended},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, LatestCheckpoint: cp(3), Savepoints: []Checkpoint{{ID: 4, Path: "s3://sp/sp-4"}}}, "RETAIN_ON_CANCELLATION", ForRestart, Restore, "s3://sp/sp-4", ""},
		{"cancelled with DELETE_ON_CANCELLATION: nothing retained, refused", v1.JobStatus{ID: "job-1", EndedAt: &ended},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, CheckpointsCompleted: 3, LatestCheckpoint: cp(3)}, "DELETE_ON_CANCELLATION", ForRestart, Refuse, "", "NoRetainedState"},
		{"failed with DELETE_ON_CANCELLATION: retained", v1.JobStatus{ID: "job-1", EndedAt: &ended},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, CheckpointsCompleted: 3, LatestCheckpoint: cp(3)}, "DELETE_ON_CANCELLATION", ForRestart, Restore, "s3://cp/chk-3", ""},
		{"ended without a checkpoint: the state it started from", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/pre"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed}, "RETAIN_ON_CANCELLATION", ForRestart, Restore, "s3://sp/pre", ""},
		{"ended, version change, newest a checkpoint: refused", v1.JobStatus{ID: "job-1", EndedAt: &ended},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForVersion, Refuse, "", "StateNotPortable"},
		{"ended, shown only by its result (no history): refused", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/pre", CheckpointsCompleted: 2},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, HistoryGone: true}, "RETAIN_ON_CANCELLATION", ForRestart, Refuse, "", "NewestStateUnknown"},
		{"cancelled for last-state, shown only by its result: refused, not its start state", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/pre"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, HistoryGone: true}, "RETAIN_ON_CANCELLATION", ForLastState, Refuse, "", "NewestStateUnknown"},
		{"stopped with a savepoint, shown only by its result: that savepoint", v1.JobStatus{ID: "job-1", LastSavepoint: stop, EndedAt: &justEnded},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, HistoryGone: true}, "", ForVersion, Restore, "s3://sp/stop", ""},
		{"ended, stateless: empty", v1.JobStatus{ID: "job-1", EndedAt: &ended},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForStateless, Restore, "", ""},

		{"lost after a recorded checkpoint: refused, it may be subsumed", v1.JobStatus{ID: "job-1", State: "RUNNING", LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"},
			LastCheckpoint: &v1.CheckpointInfo{ID: 5, Path: "s3://cp/chk-5", JobID: "job-1"}}, Flink{Reachable: true}, "", ForRestart, Refuse, "", "NewestStateUnknown"},
		{"lost before Flink ever showed it: the savepoint it started from", v1.JobStatus{ID: "job-1", SubmittedAt: &ended, RestoredFrom: "s3://sp/old", LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"}},
			Flink{Reachable: true}, "", ForRestart, Restore, "s3://sp/old", ""},
		{"lost after Flink showed it starting: refused, it may have run since", v1.JobStatus{ID: "job-1", State: "INITIALIZING", RestoredFrom: "s3://sp/old", LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"}},
			Flink{Reachable: true}, "", ForRestart, Refuse, "", "NewestStateUnknown"},
		{"lost after it ran, no checkpoint seen: refused, one may have completed unseen", v1.JobStatus{ID: "job-1", State: "RUNNING", RestoredFrom: "s3://sp/old", LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"}},
			Flink{Reachable: true}, "", ForRestart, Refuse, "", "NewestStateUnknown"},
		{"lost, stopped with a savepoint: it", v1.JobStatus{ID: "job-1", State: "FINISHED", LastSavepoint: stop,
			LastCheckpoint: &v1.CheckpointInfo{ID: 7, Path: "s3://cp/chk-7", JobID: "job-1"}}, Flink{Reachable: true}, "", ForVersion, Restore, "s3://sp/stop", ""},
		{"lost with checkpoints, none recorded: refused", v1.JobStatus{ID: "job-1", State: "RUNNING", CheckpointsCompleted: 4}, Flink{Reachable: true}, "", ForRestart, Refuse, "", "NewestStateUnknown"},
		{"ended with an empty history, a checkpoint of it recorded: refused, the adaptive scheduler's sparse graph", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/old",
			LastCheckpoint: &v1.CheckpointInfo{ID: 5, Path: "s3://cp/chk-5", JobID: "job-1"}}, Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled}, "RETAIN_ON_CANCELLATION", ForLastState, Refuse, "", "NewestStateUnknown"},
		{"ended with an empty history, a checkpoint of an older job recorded: the state it started from", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/old",
			LastCheckpoint: &v1.CheckpointInfo{ID: 5, Path: "s3://cp/chk-5", JobID: "job-0"}}, Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled}, "RETAIN_ON_CANCELLATION", ForLastState, Restore, "s3://sp/old", ""},
		{"rollback: its recorded point", v1.JobStatus{ID: "job-1", EndedAt: &ended}, Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, LatestCheckpoint: cp(3)}, "RETAIN_ON_CANCELLATION", ForRollback, Restore, "s3://sp/pre-upgrade", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			spec.Job.InitialSavepointPath = "s3://sp/initial"
			status := &v1.FlinkClusterStatus{Job: &tc.job, Upgrade: &v1.UpgradeStatus{RollbackPath: "s3://sp/pre-upgrade"}}
			// The JobManager has been ready for an hour (TestJobNeverShown
			// varies it).
			in := Input{Spec: spec, Policy: policy.For(spec), Status: status, Deployed: spec.DeepCopy(), Flink: tc.flink, Now: t0, Retention: tc.retention,
				JobManagerSince: t0.Add(-time.Hour)}
			snap, v := RestorePoint(in, &tc.job, tc.why)
			if v.Do != tc.do || snap.Path != tc.path || v.Reason != tc.reason {
				t.Errorf("RestorePoint = %+v, %+v; want %s %q reason %q", snap, v, tc.do, tc.path, tc.reason)
			}
			if (v.Do == Hold || v.Do == Refuse) && v.Message == "" {
				t.Errorf("%s without a message", v.Do)
			}
		})
	}
}

// TestJobNeverShown: a job the operator submitted and Flink never showed
// is sent again from what it started from only where Flink would know it
// had it got it: its JobManager ready since before the submission, or HA.
// A JobManager without HA ready only since may have run it, checkpointed
// and lost it: refused, unless the user names the state.
func TestJobNeverShown(t *testing.T) {
	submitted := metav1.NewTime(t0.Add(-10 * time.Second))
	for _, tc := range []struct {
		name    string
		jmSince time.Time
		ha      bool
		named   string
		ended   bool
		do      Do
		path    string
		reason  string
	}{
		{"JobManager ready before the submission: never got it", t0.Add(-time.Hour), false, "", false, Restore, "s3://sp/old", ""},
		{"JobManager ready in the submission's second: never got it", submitted.Time, false, "", false, Restore, "s3://sp/old", ""},
		{"JobManager ready after the submission: it may have run", t0.Add(-5 * time.Second), false, "", false, Refuse, "", "NewestStateUnknown"},
		{"no ready JobManager read: the decision waits", time.Time{}, false, "", false, Hold, "", "JobManagerUnconfirmed"},
		{"no ready JobManager read, the user names the state", time.Time{}, false, "s3://sp/named", false, Restore, "s3://sp/named", ""},
		{"with HA a new leader recovers what it accepted: never got it", t0.Add(-5 * time.Second), true, "", false, Restore, "s3://sp/old", ""},
		{"with HA, no ready JobManager read: a new leader recovers what it accepted", time.Time{}, true, "", false, Restore, "s3://sp/old", ""},
		{"the user names the state", t0.Add(-5 * time.Second), false, "s3://sp/named", false, Restore, "s3://sp/named", ""},
		{"Flink refused the resend as ended, with HA: it ran unseen", t0.Add(-5 * time.Second), true, "", true, Refuse, "", "NewestStateUnknown"},
		{"Flink refused the resend as ended, its JobManager old: it ran unseen", t0.Add(-time.Hour), false, "", true, Refuse, "", "NewestStateUnknown"},
		{"Flink refused the resend as ended, the user names the state", t0.Add(-time.Hour), true, "s3://sp/named", true, Restore, "s3://sp/named", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			if tc.ha {
				spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
			}
			deployed := spec.DeepCopy()
			if tc.named != "" {
				spec.Job.InitialSavepointPath = tc.named
			}
			job := v1.JobStatus{ID: "job-1", SubmittedAt: &submitted, RestoredFrom: "s3://sp/old", LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"}}
			in := Input{Spec: spec, Policy: policy.For(spec), Status: &v1.FlinkClusterStatus{Job: &job}, Deployed: deployed,
				Flink: Flink{Reachable: true}, Now: t0, JobManagerSince: tc.jmSince, EndedUnseen: tc.ended}
			snap, v := RestorePoint(in, &job, ForRestart)
			if v.Do != tc.do || snap.Path != tc.path || v.Reason != tc.reason {
				t.Errorf("RestorePoint = %+v, %+v; want %s %q reason %q", snap, v, tc.do, tc.path, tc.reason)
			}
			if v.Do != Restore && v.Message == "" {
				t.Errorf("%s without a message", v.Do)
			}
		})
	}
}

// TestStartingAndSparseJobs: Flink shows none of a starting job's
// checkpoints (INITIALIZING; CREATED, the adaptive scheduler waiting for
// slots), and a job that ended there keeps that empty history. The rule
// stops such a job only where the user names the state, and refuses to
// restore one whose empty history contradicts a checkpoint seen of it,
// even where an older savepoint of it is recorded.
func TestStartingAndSparseJobs(t *testing.T) {
	ended := metav1.NewTime(t0.Add(-time.Minute))
	done := metav1.NewTime(t0.Add(-2 * time.Minute))
	periodic := &v1.SavepointInfo{Path: "s3://sp/periodic-10", JobID: "job-1", CheckpointID: 10, CompletedAt: &done, Reason: v1.SavepointPeriodic}
	chk20 := &v1.CheckpointInfo{ID: 20, Path: "s3://cp/chk-20", JobID: "job-1"}
	sparse := v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/old", LastSavepoint: periodic, LastCheckpoint: chk20}
	created := Flink{Reachable: true, JobFound: true, JobState: flink.JobCreated}
	for _, tc := range []struct {
		name   string
		job    v1.JobStatus
		flink  Flink
		why    Purpose
		kind   Change
		named  string
		do     Do
		path   string
		reason string
	}{
		{"failed while waiting for resources, an older savepoint recorded: refused", sparse,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed}, ForRestart, "", "", Refuse, "", "NewestStateUnknown"},
		{"cancelled while waiting, an older savepoint recorded: refused", sparse,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled}, ForChange, "", "", Refuse, "", "NewestStateUnknown"},
		{"sparse end, the user names the state: it", sparse,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled}, ForChange, "", "s3://sp/named", Restore, "s3://sp/named", ""},
		{"ended with a history, no checkpoint since it started, the user names the state: it", v1.JobStatus{ID: "job-1", EndedAt: &ended, RestoredFrom: "s3://sp/old"},
			Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, Restored: &Checkpoint{ID: 1, Path: "s3://sp/old"}, RestoredSavepoint: true}, ForChange, "", "s3://sp/named", Restore, "s3://sp/named", ""},
		{"created, the user names the state: cancel", v1.JobStatus{ID: "job-1", LastCheckpoint: chk20}, created, ForChange, "", "s3://sp/named", Cancel, "", ""},
		{"created, removal: waits", v1.JobStatus{ID: "job-1"}, created, ForRemoval, "", "", Hold, "", "WaitingForRunning"},
		{"created, suspension: waits", v1.JobStatus{ID: "job-1"}, created, ForSuspend, "", "", Hold, "", "WaitingForRunning"},
		{"created, an in-place rescale's rollback: waits", v1.JobStatus{ID: "job-1"}, created, ForRollback, ChangeRescaleInPlace, "", Hold, "", "WaitingForRunning"},
		{"created, a resubmitting rollback: the failed job is cancelled", v1.JobStatus{ID: "job-1"}, created, ForRollback, ChangeRescale, "", Cancel, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := baseSpec()
			deployed := spec.DeepCopy()
			if tc.named != "" {
				spec.Job.InitialSavepointPath = tc.named
			}
			status := &v1.FlinkClusterStatus{Job: &tc.job}
			if tc.kind != "" {
				status.Upgrade = &v1.UpgradeStatus{Kind: string(tc.kind), Phase: v1.UpgradeRollingBack, RollbackPath: "s3://sp/pre-upgrade"}
			}
			in := Input{Spec: spec, Policy: policy.For(spec), Status: status, Deployed: deployed, Flink: tc.flink, Now: t0,
				Retention: "RETAIN_ON_CANCELLATION", JobManagerSince: t0.Add(-time.Hour)}
			snap, v := RestorePoint(in, &tc.job, tc.why)
			if v.Do != tc.do || snap.Path != tc.path || v.Reason != tc.reason {
				t.Errorf("RestorePoint = %+v, %+v; want %s %q reason %q", snap, v, tc.do, tc.path, tc.reason)
			}
			if (v.Do == Hold || v.Do == Refuse) && v.Message == "" {
				t.Errorf("%s without a message", v.Do)
			}
		})
	}
}

// TestRestCacheWindow reads Flink's cache settings as Flink does: a Long
// of milliseconds before 1.20, a Duration after; the checkpoint statistics
// timeout falls back to the refresh interval.
func TestRestCacheWindow(t *testing.T) {
	for _, tc := range []struct {
		cfg  v1.FlinkConfiguration
		want time.Duration
	}{
		{nil, 3 * time.Second},
		{v1.FlinkConfiguration{"web.refresh-interval": "10000"}, 10 * time.Second},
		{v1.FlinkConfiguration{"web.refresh-interval": "1 min"}, time.Minute},
		{v1.FlinkConfiguration{"jobmanager.web.refresh-interval": "500"}, 500 * time.Millisecond},
		{v1.FlinkConfiguration{"web.refresh-interval": "1000", "rest.cache.checkpoint-statistics.timeout": "20s"}, 20 * time.Second},
		{v1.FlinkConfiguration{"rest.cache.checkpoint-statistics.timeout": "1 s"}, 3 * time.Second},
		{v1.FlinkConfiguration{"web.refresh-interval": "soon"}, time.Minute},
	} {
		spec := baseSpec()
		spec.FlinkConfiguration = tc.cfg
		if got := restCacheWindow(spec); got != tc.want {
			t.Errorf("%v: window %s, want %s", tc.cfg, got, tc.want)
		}
	}
}

// TestRemovingTheJobStopsItWithASavepoint (issue 19, path 5): removing
// spec.job stops the job with a savepoint before the pods roll, records
// it, and a returning spec.job restores from it. End to end:
// TestRemovingTheJobKeepsItsState.
func TestRemovingTheJobStopsItWithASavepoint(t *testing.T) {
	w := stableWorld()
	w.gen = 2
	w.spec = baseSpec()
	w.spec.Job = nil
	p := w.decide()
	sp := p.Status.Job.PendingSavepoint
	if p.Status.Upgrade == nil || p.Status.Upgrade.Kind != string(ChangeRemoval) || p.Action.Kind != ActTrigger || sp == nil || !sp.Stop || sp.Reason != v1.SavepointForRemoval {
		t.Fatalf("removal: upgrade %+v action %s pending %+v", p.Status.Upgrade, p.Action.Kind, sp)
	}
	if p.Deploy.Job == nil {
		t.Fatal("the pods roll before the job stopped")
	}
	w.commit(p)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "s3://sp/removed"}}
	p = w.decide()
	if p.Deploy.Job != nil || p.Status.Job.LastSavepoint == nil || p.Status.Job.LastSavepoint.Path != "s3://sp/removed" {
		t.Fatalf("stopped: deploy job %+v last savepoint %+v", p.Deploy.Job, p.Status.Job.LastSavepoint)
	}
	w.commit(p)
	w.flink = Flink{Reachable: true}
	p = w.decide()
	if p.Status.Upgrade != nil || p.Action.Kind != ActNone || p.MarkStable {
		t.Fatalf("rolled out: upgrade %+v action %s stable %v", p.Status.Upgrade, p.Action.Kind, p.MarkStable)
	}
	if c := cond(p, v1.ConditionUpgrading); c == nil || c.Reason != "JobRemoved" {
		t.Fatalf("Upgrading = %+v", c)
	}
	w.commit(p)
	// spec.job returns.
	w.gen, w.spec = 3, baseSpec()
	p = w.decide()
	if p.Status.Upgrade == nil {
		t.Fatalf("re-adding the job started nothing: %+v", p.Action)
	}
	w.commit(p)
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "s3://sp/removed" {
		t.Fatalf("re-added: action %s from %q, want the removal's savepoint", p.Action.Kind, p.Action.RestorePath)
	}
}

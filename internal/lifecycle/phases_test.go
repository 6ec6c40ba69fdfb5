package lifecycle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/policy"
)

// savingWorld is an upgrade to 1.18.1 waiting for its stop-with-savepoint.
func savingWorld(t *testing.T) *world {
	t.Helper()
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"
	w.spec.UpgradePolicy = &v1.UpgradePolicy{SavepointTimeout: "1m", StabilityTimeout: "1m", StableCheckpoints: 2}
	p := w.decide()
	if p.Status.Upgrade == nil || p.Status.Upgrade.Phase != v1.UpgradeSavingState || p.Action.Kind != ActTrigger {
		t.Fatalf("setup: %+v action %s", p.Status.Upgrade, p.Action.Kind)
	}
	w.commit(p)
	return w
}

func hasTransition(p Step, k TransitionKind) bool {
	for _, tr := range p.Transitions {
		if tr.Kind == k {
			return true
		}
	}
	return false
}

// TestForgottenTrigger: Flink answers 404 for the recorded trigger (its
// operation cache expired or its JobManager restarted). The result is
// settled from the job's checkpoint history before anything is sent
// again; without a record, the trigger is sent again only while the job
// runs. A stop whose job ended goes on to the state rule, which reads what
// it left from Flink's history (nothing rolls before); the deadline ends
// only a stop Flink will not complete (issue 19, path 4). Nothing but a
// settled result is concluded from a 404 until Flink's REST caches have
// turned over since it was first seen: a cached "RUNNING" may be a job
// that just finished with the savepoint.
func TestForgottenTrigger(t *testing.T) {
	for _, tc := range []struct {
		name       string
		after      time.Duration
		flink      Flink
		later      *Flink // what Flink says once its caches turned over, when it differs
		wantAction ActionKind
		wantPhase  v1.UpgradePhase // "" means the upgrade ended
		wantPath   string
		wantReason string // of Upgrading, when the upgrade ended
	}{
		{"settled from the history", 10 * time.Minute,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Unknown: true},
				Savepoints: []Checkpoint{{ID: 7, Path: "s3://sp/savepoint-7", TriggeredAt: t0.Add(time.Second)}}},
			nil, ActNone, v1.UpgradeDeploying, "s3://sp/savepoint-7", ""},
		{"a savepoint older than the trigger is not ours", 10 * time.Second,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, Pending: &Operation{Unknown: true},
				Savepoints: []Checkpoint{{ID: 3, Path: "s3://sp/old", TriggeredAt: t0.Add(-time.Hour)}}},
			nil, ActTrigger, v1.UpgradeSavingState, "", ""},
		{"job finished, no record: the history is read once Flink's cache expired, not re-triggered", 10 * time.Second,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Unknown: true}},
			nil, ActNone, v1.UpgradeDeploying, "", ""},
		{"job lost with its JobManager, no state recorded: refused", 10 * time.Second,
			Flink{Reachable: true, Pending: &Operation{Unknown: true}},
			nil, ActNone, "", "", "UpgradeFailed"},
		{"still running, within the deadline: sent again", 10 * time.Second,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, Pending: &Operation{Unknown: true}},
			nil, ActTrigger, v1.UpgradeSavingState, "", ""},
		{"still running, past the deadline: failed, the job untouched", 2 * time.Minute,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, Pending: &Operation{Unknown: true}},
			nil, ActNone, "", "", "SavepointFailed"},
		{"running by a cached read past the deadline, then finished with the savepoint: settled", 2 * time.Minute,
			Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, Pending: &Operation{Unknown: true}},
			&Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Unknown: true},
				Savepoints: []Checkpoint{{ID: 7, Path: "s3://sp/savepoint-7", TriggeredAt: t0.Add(time.Second)}}},
			ActNone, v1.UpgradeDeploying, "s3://sp/savepoint-7", ""},
		{"unreachable past the deadline: held, the stop may complete", 2 * time.Minute,
			Flink{},
			nil, ActNone, v1.UpgradeSavingState, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := savingWorld(t)
			trigger := w.status.Job.PendingSavepoint.TriggerID
			w.now = t0.Add(tc.after)
			w.flink = tc.flink
			p := w.decide()
			if tc.flink.Pending != nil && tc.flink.Pending.Unknown && (tc.wantPath == "" || tc.later != nil) {
				if p.Action.Kind != ActNone || p.Status.Upgrade == nil || p.Status.Upgrade.Phase != v1.UpgradeSavingState || p.Status.Job.PendingSavepoint.ForgottenAt == nil {
					t.Fatalf("first 404: action %s upgrade %+v pending %+v, want a wait for Flink's caches", p.Action.Kind, p.Status.Upgrade, p.Status.Job.PendingSavepoint)
				}
				w.commit(p)
				w.now = w.now.Add(5 * time.Second)
				if tc.later != nil {
					w.flink = *tc.later
				}
				p = w.decide()
			}
			if p.Action.Kind != tc.wantAction {
				t.Errorf("action %s, want %s", p.Action.Kind, tc.wantAction)
			}
			if p.Action.Kind == ActTrigger && p.Status.Job.PendingSavepoint.TriggerID != trigger {
				t.Errorf("sent trigger %s, want the recorded %s", p.Status.Job.PendingSavepoint.TriggerID, trigger)
			}
			switch {
			case tc.wantPhase == "" && p.Status.Upgrade != nil:
				t.Errorf("upgrade still in flight: %+v", p.Status.Upgrade)
			case tc.wantPhase == "":
				if c := cond(p, v1.ConditionUpgrading); c == nil || c.Reason != tc.wantReason || p.Status.LastFailedGeneration != 2 {
					t.Errorf("Upgrading = %+v, failed generation %d", c, p.Status.LastFailedGeneration)
				}
				if p.Deploy.Version != "1.17.1" {
					t.Errorf("deployed %s after a failed savepoint", p.Deploy.Version)
				}
			case p.Deploy.Version != "1.17.1" && tc.wantPath == "":
				t.Errorf("deployed %s before the restore point was read", p.Deploy.Version)
			case p.Status.Upgrade == nil || p.Status.Upgrade.Phase != tc.wantPhase:
				t.Errorf("upgrade %+v, want phase %s", p.Status.Upgrade, tc.wantPhase)
			}
			if tc.wantPath != "" && (p.Status.Job.LastSavepoint == nil || p.Status.Job.LastSavepoint.Path != tc.wantPath || p.Status.Upgrade.RestorePath != tc.wantPath) {
				t.Errorf("savepoint %+v, want %s recorded and restored from", p.Status.Job.LastSavepoint, tc.wantPath)
			}
		})
	}
}

// TestLastStateRestoresTheNewestRetainedCheckpoint (issue 19, path 3): a
// last-state roll takes a checkpoint, cancels the job, and rolls the pods
// only once Flink reports it CANCELED (never while CANCELLING, and a slow
// cancel is waited for, with StateHold saying so, not abandoned: the job
// would be left stopped). The restore point is not the checkpoint the
// trigger reported (Flink's cached history, before the cancel) but the
// newest Flink retains, read once the job has ended and Flink's REST
// caches have expired: with the default retention of one, a checkpoint
// completed during the cancel subsumed the triggered one. End to end:
// TestLastStateUpgradeWithDefaultRetention.
func TestLastStateRestoresTheNewestRetainedCheckpoint(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Job.UpgradeMode = v1.UpgradeLastState
	w.deployed.Job.UpgradeMode = v1.UpgradeLastState
	w.spec.FlinkConfiguration = v1.FlinkConfiguration{"state.backend.type": "rocksdb"}
	w.spec.UpgradePolicy = &v1.UpgradePolicy{SavepointTimeout: "1m", StabilityTimeout: "1m", StableCheckpoints: 2}
	w.flink.LatestCheckpoint = &Checkpoint{ID: 10, Path: "s3://cp/chk-10"}
	p := w.decide()
	if sp := p.Status.Job.PendingSavepoint; sp == nil || !sp.Checkpoint {
		t.Fatalf("start: %+v", sp)
	}
	w.commit(p)
	w.flink.Pending = &Operation{Done: true, Path: "s3://cp/chk-11"}
	p = w.decide()
	if p.Action.Kind != ActCancel || p.Deploy.FlinkConfiguration != nil {
		t.Fatalf("checkpoint done: action %s deploy %v", p.Action.Kind, p.Deploy.FlinkConfiguration)
	}
	w.commit(p)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobCancelling, LatestCheckpoint: &Checkpoint{ID: 11, Path: "s3://cp/chk-11"}}
	for i := 0; i < 8; i++ {
		w.now = w.now.Add(10 * time.Second)
		p = w.decide()
		if p.Action.Kind != ActNone || p.Deploy.FlinkConfiguration != nil || p.Status.Upgrade == nil {
			t.Fatalf("cancelling: action %s, deploy %v, upgrade %+v; want to wait with the old spec", p.Action.Kind, p.Deploy.FlinkConfiguration, p.Status.Upgrade)
		}
		if c := cond(p, v1.ConditionStateHold); (c != nil) != (i >= 6) || c != nil && c.Reason != "StopInProgress" {
			t.Fatalf("after %ds of cancelling: StateHold %+v", (i+1)*10, c)
		}
		w.commit(p)
	}
	// CANCELED, the history still cached from before.
	w.flink.JobState = flink.JobCanceled
	p = w.decide()
	if p.Deploy.FlinkConfiguration != nil || p.Status.Job.EndedAt == nil {
		t.Fatalf("canceled: deployed before the history could be read fresh (ended at %v)", p.Status.Job.EndedAt)
	}
	w.commit(p)
	w.flink.LatestCheckpoint = &Checkpoint{ID: 12, Path: "s3://cp/chk-12"}
	w.now = w.now.Add(4 * time.Second)
	p = w.decide()
	if p.Deploy.FlinkConfiguration == nil || p.Status.Upgrade.RestorePath != "s3://cp/chk-12" {
		t.Fatalf("after the cache window: deploy %v restore %q, want chk-12", p.Deploy.FlinkConfiguration, p.Status.Upgrade.RestorePath)
	}
	w.commit(p)
	w.flink = Flink{Reachable: true}
	if p = w.decide(); p.Action.Kind != ActSubmit || p.Action.RestorePath != "s3://cp/chk-12" {
		t.Fatalf("rolled out: %+v", p.Action)
	}
}

// TestUpgradeWaitsForFlinksAnswer (issue 19, path 1): an upgrade decided
// while Flink does not answer starts nothing (the pods keep what they run,
// StateHold says why) and takes its savepoint once Flink answers; a
// version upgrade of a job that cannot take one never restores from a
// checkpoint. End to end: TestUpgradeDuringRestOutage.
func TestUpgradeWaitsForFlinksAnswer(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"
	w.status.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 9, Path: "s3://cp/chk-9", JobID: "job-1"}
	w.flink = Flink{}
	p := w.decide()
	if p.Status.Upgrade != nil || p.Action.Kind != ActNone || !p.Hold || p.Deploy.Version != "1.17.1" || p.RequeueAfter == 0 {
		t.Fatalf("unreachable: upgrade %+v action %s hold %v deploy %s requeue %s", p.Status.Upgrade, p.Action.Kind, p.Hold, p.Deploy.Version, p.RequeueAfter)
	}
	if c := cond(p, v1.ConditionStateHold); c == nil || c.Reason != "FlinkUnreachable" {
		t.Fatalf("StateHold = %+v", c)
	}
	w.commit(p)
	w.flink = running("job-1", 11)
	p = w.decide()
	if sp := p.Status.Job.PendingSavepoint; p.Action.Kind != ActTrigger || sp == nil || !sp.Stop || cond(p, v1.ConditionStateHold) != nil {
		t.Fatalf("Flink answers: action %s pending %+v", p.Action.Kind, sp)
	}

	for _, tc := range []struct {
		name   string
		flink  Flink
		do     Do
		reason string
	}{
		{"restarting: waits to take a savepoint", Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting}, Hold, "WaitingForRunning"},
		{"failed, newest state a checkpoint: refused", Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, CheckpointsCompleted: 9,
			LatestCheckpoint: &Checkpoint{ID: 9, Path: "s3://cp/chk-9"}}, Refuse, "StateNotPortable"},
		{"lost after checkpoints: refused, the newest is unknown", Flink{Reachable: true}, Refuse, "NewestStateUnknown"},
	} {
		w := stableWorld()
		w.gen, w.spec = 2, baseSpec()
		w.spec.Version = "1.18.1"
		w.status.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 9, Path: "s3://cp/chk-9", JobID: "job-1"}
		w.status.Job.EndedAt = &metav1.Time{Time: t0.Add(-time.Minute)}
		w.flink = tc.flink
		_, v := RestorePoint(Input{Spec: w.spec, Policy: policy.For(w.spec), Status: &w.status, Deployed: w.deployed, Flink: w.flink, Now: w.now, Retention: "RETAIN_ON_CANCELLATION"}, w.status.Job, ForVersion)
		if v.Do != tc.do || v.Reason != tc.reason {
			t.Errorf("%s: %+v, want %s %s", tc.name, v, tc.do, tc.reason)
		}
		p := w.decide()
		if p.Status.Upgrade != nil || p.Deploy.Version != "1.17.1" || p.Action.Kind != ActNone {
			t.Errorf("%s: upgrade %+v deploy %s action %s", tc.name, p.Status.Upgrade, p.Deploy.Version, p.Action.Kind)
		}
	}
}

// TestJobLostWithItsJobManager: without HA a JobManager restart forgets
// the job. It is submitted again, under a new ID, from the newest state the
// operator saw: the latest checkpoint when it is newer than the savepoint.
func TestJobLostWithItsJobManager(t *testing.T) {
	w := stableWorld()
	saved := metav1.NewTime(t0.Add(-time.Hour))
	w.status.Job.LastSavepoint = &v1.SavepointInfo{Path: "s3://sp/savepoint-1", TriggerID: "t", JobID: "job-1", TriggeredAt: saved, CompletedAt: &saved}
	w.flink.LatestCheckpoint = &Checkpoint{ID: 42, Path: "s3://cp/chk-42", TriggeredAt: t0}
	p := w.decide()
	if cp := p.Status.Job.LastCheckpoint; cp == nil || cp.Path != "s3://cp/chk-42" || cp.JobID != "job-1" {
		t.Fatalf("checkpoint not recorded: %+v", cp)
	}
	w.commit(p)
	w.now = t0.Add(time.Minute)
	w.flink = Flink{Reachable: true}
	// Flink forgot a job that completed checkpoints: chk-42 may have been
	// subsumed since it was recorded, so nothing is restored until the
	// user names the state.
	p = w.decide()
	if p.Action.Kind != ActNone || p.Facts.StateHold == nil || p.Facts.StateHold.Reason != "NewestStateUnknown" ||
		!strings.Contains(p.Facts.StateHold.Message, "s3://cp") {
		t.Fatalf("lost job: action %s from %q, hold %+v", p.Action.Kind, p.Action.RestorePath, p.Facts.StateHold)
	}
	w.commit(p)
	// The user names the newest checkpoint of the job's directory.
	submitted := w.nameState("s3://cp/chk-57")
	if submitted.Action.Kind != ActSubmit || submitted.Action.RestorePath != "s3://cp/chk-57" || submitted.Status.Job.ID == "job-1" {
		t.Fatalf("after the user named the state: action %s from %q as %s", submitted.Action.Kind, submitted.Action.RestorePath, submitted.Status.Job.ID)
	}

	// A job that ran with no checkpoint of its own seen, only a savepoint:
	// checkpoints may have completed after it unseen (the operator reads
	// Flink's cached history every poll), so it is held like the rest.
	w = stableWorld()
	w.status.Job.CheckpointsCompleted = 0
	w.status.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 1, Path: "s3://cp/chk-1", JobID: "job-0", ObservedAt: metav1.NewTime(t0.Add(-2 * time.Hour))}
	w.status.Job.LastSavepoint = &v1.SavepointInfo{Path: "s3://sp/savepoint-1", TriggerID: "t", JobID: "job-1", TriggeredAt: saved, CompletedAt: &saved}
	w.flink = Flink{Reachable: true}
	if p = w.decide(); p.Action.Kind == ActSubmit || cond(p, v1.ConditionStateHold) == nil || cond(p, v1.ConditionStateHold).Reason != "NewestStateUnknown" {
		t.Errorf("restored from %q (%s), want NewestStateUnknown", p.Action.RestorePath, p.Action.Kind)
	}
}

// rollingBackWorld is a failed upgrade whose rollback job was submitted.
func rollingBackWorld(t *testing.T) *world {
	t.Helper()
	w := savingWorld(t)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "s3://sp/pre"}}
	w.commit(w.decide()) // savepoint done, old job finished: deploy
	w.commit(w.decide()) // rolled out: submit
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "java.lang.IllegalStateException: bad"}
	p := w.decide()
	if p.Status.Upgrade == nil || p.Status.Upgrade.Phase != v1.UpgradeRollingBack {
		t.Fatalf("setup: %+v", p.Status.Upgrade)
	}
	if c := cond(p, v1.ConditionUpgrading); c == nil || c.Reason != "UpgradeFailed" {
		t.Fatalf("Upgrading = %+v", c)
	}
	w.commit(p)
	p = w.decide() // stable spec rolled out: submit the rollback's job
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "s3://sp/pre" {
		t.Fatalf("setup: rollback submission %s from %q", p.Action.Kind, p.Action.RestorePath)
	}
	w.commit(p)
	return w
}

// TestRollbackThatFails ends in a condition, an event and a transition,
// both when the restored job fails and when it never runs.
func TestRollbackThatFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		flink Flink
	}{
		{"the restored job fails", time.Second, Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "java.io.FileNotFoundException: s3://sp/pre"}},
		{"the restored job never runs", 2 * time.Minute, Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting}},
		{"the restored tasks never all run", 2 * time.Minute, Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning,
			Vertices: []flink.JobDetailsVertex{{ID: "v", Parallelism: 2, Tasks: map[string]int32{"RUNNING": 1, "INITIALIZING": 1}}}}},
		{"Flink unreachable until the timeout", 2 * time.Minute, Flink{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := rollingBackWorld(t)
			w.now = w.now.Add(tc.after)
			w.flink = tc.flink
			p := w.decide()
			if p.Status.Upgrade != nil || p.Status.LastFailedGeneration != 2 || !hasTransition(p, RollbackFailed) {
				t.Fatalf("upgrade %+v, failed generation %d, transitions %v", p.Status.Upgrade, p.Status.LastFailedGeneration, p.Transitions)
			}
			if c := cond(p, v1.ConditionRollingBack); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "RollbackFailed" {
				t.Errorf("RollingBack = %+v", c)
			}
			if c := cond(p, v1.ConditionRolledBack); c == nil || c.Reason != "RollbackFailed" {
				t.Errorf("RolledBack = %+v", c)
			}
			if len(p.Events) == 0 || !p.Events[len(p.Events)-1].Warning || p.Events[len(p.Events)-1].Reason != "RollbackFailed" {
				t.Errorf("events %+v", p.Events)
			}
			w.commit(p)
			// Nothing more happens until the spec changes.
			if p = w.decide(); p.Action.Kind != ActNone || p.Status.Upgrade != nil {
				t.Errorf("after the failure: action %s upgrade %+v", p.Action.Kind, p.Status.Upgrade)
			}
		})
	}
}

// TestRollbackWaitsForTheRestoredTasks: the rollback's job is RUNNING
// while its tasks still deploy and restore; it has not finished until
// they run, and a restore that fails then fails the rollback.
func TestRollbackWaitsForTheRestoredTasks(t *testing.T) {
	w := rollingBackWorld(t)
	deploying := running("", 0)
	deploying.Vertices[0].Tasks = map[string]int32{"RUNNING": 1, "DEPLOYING": 1}
	w.flink = deploying
	p := w.decide()
	if p.Status.Upgrade == nil || p.Status.Upgrade.Phase != v1.UpgradeRollingBack || hasTransition(p, RollbackSucceeded) {
		t.Fatalf("tasks deploying: upgrade %+v, transitions %v", p.Status.Upgrade, p.Transitions)
	}
	w.commit(p)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "java.io.FileNotFoundException: s3://sp/pre/chk-1/state"}
	if p = w.decide(); !hasTransition(p, RollbackFailed) {
		t.Fatalf("restore failed: upgrade %+v, transitions %v", p.Status.Upgrade, p.Transitions)
	}
	w = rollingBackWorld(t)
	w.flink = running("", 0)
	if p = w.decide(); !hasTransition(p, RollbackSucceeded) {
		t.Fatalf("tasks running: upgrade %+v, transitions %v", p.Status.Upgrade, p.Transitions)
	}
}

// TestNewestState orders checkpoints and savepoints as Flink numbers them,
// not by when the operator happened to see them.
func TestNewestState(t *testing.T) {
	early, late := metav1.NewTime(t0), metav1.NewTime(t0.Add(time.Hour))
	cp := func(id int64, job string, seen metav1.Time) *v1.CheckpointInfo {
		return &v1.CheckpointInfo{ID: id, Path: "chk-" + job, JobID: job, ObservedAt: seen}
	}
	sp := func(job string, stop bool, id int64, done metav1.Time) *v1.SavepointInfo {
		return &v1.SavepointInfo{Path: "sp-" + job, JobID: job, Stop: stop, CheckpointID: id, TriggeredAt: done, CompletedAt: &done}
	}
	for _, tc := range []struct {
		name    string
		current string
		cp      *v1.CheckpointInfo
		sp      *v1.SavepointInfo
		want    string
	}{
		{"nothing held: the initial savepoint", "j1", nil, nil, "initial"},
		{"a stop-with-savepoint is the job's last state, however late its checkpoint was seen", "j1", cp(5, "j1", late), sp("j1", true, 0, early), "sp-j1"},
		{"the current job's checkpoint beats the savepoint it started from", "j2", cp(3, "j2", early), sp("j1", true, 6, late), "chk-j2"},
		{"a checkpoint of an older job loses to the current job's savepoint", "j2", cp(9, "j1", late), sp("j2", false, 2, early), "sp-j2"},
		{"same job: the counter decides", "j1", cp(8, "j1", early), sp("j1", false, 7, late), "chk-j1"},
		{"same job: the counter decides the other way", "j1", cp(6, "j1", late), sp("j1", false, 7, early), "sp-j1"},
		{"only a checkpoint", "j1", cp(1, "j1", early), nil, "chk-j1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &v1.JobStatus{ID: tc.current, LastCheckpoint: tc.cp, LastSavepoint: tc.sp}
			if got := newestState(job, &v1.JobSpec{InitialSavepointPath: "initial"}); got != tc.want {
				t.Errorf("newestState = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFlinkProgressOnly(t *testing.T) {
	at := metav1.NewTime(t0)
	recorded := func() *v1.FlinkClusterStatus {
		return &v1.FlinkClusterStatus{ObservedGeneration: 1, Job: &v1.JobStatus{ID: "job-1", State: "RUNNING", SubmittedAt: &at, CheckpointsCompleted: 3,
			LastCheckpoint: &v1.CheckpointInfo{ID: 3, Path: "s3://cp/job-1/chk-3", JobID: "job-1", ObservedAt: at}}}
	}
	for _, tc := range []struct {
		name string
		// retained is state.checkpoints.num-retained; 0 stands for 10.
		retained int32
		mutate   func(recorded, next *v1.FlinkClusterStatus)
		want     bool
	}{
		{"unchanged", 0, func(_, _ *v1.FlinkClusterStatus) {}, true},
		{"more checkpoints of the same job", 0, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 7
			n.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 7, Path: "s3://cp/job-1/chk-7", JobID: "job-1", ObservedAt: metav1.NewTime(t0.Add(time.Minute))}
		}, true},
		{"retained 3: one newer checkpoint, the recorded one still kept", 3, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 4
			n.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 4, Path: "s3://cp/job-1/chk-4", JobID: "job-1", ObservedAt: metav1.NewTime(t0.Add(time.Minute))}
		}, true},
		{"retained 3: two newer checkpoints, the recorded one next to go", 3, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 5
			n.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 5, Path: "s3://cp/job-1/chk-5", JobID: "job-1", ObservedAt: metav1.NewTime(t0.Add(time.Minute))}
		}, false},
		{"retained 1: a newer checkpoint subsumed the recorded one", 1, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 4
			n.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 4, Path: "s3://cp/job-1/chk-4", JobID: "job-1", ObservedAt: metav1.NewTime(t0.Add(time.Minute))}
		}, false},
		{"retained 1: more checkpoints counted, the same one latest", 1, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 4
		}, true},
		{"a just-submitted job INITIALIZING", 0, func(r, n *v1.FlinkClusterStatus) {
			r.Job.State, r.Job.CheckpointsCompleted, r.Job.LastCheckpoint = "", 0, nil
			n.Job.State, n.Job.CheckpointsCompleted, n.Job.LastCheckpoint = "INITIALIZING", 0, nil
		}, true},
		{"a just-submitted job RUNNING", 0, func(r, n *v1.FlinkClusterStatus) {
			r.Job.State, r.Job.CheckpointsCompleted, r.Job.LastCheckpoint = "", 0, nil
			n.Job.LastCheckpoint = nil
		}, false},
		{"the job's first checkpoint", 0, func(r, _ *v1.FlinkClusterStatus) { r.Job.LastCheckpoint = nil }, false},
		{"a checkpoint of another job", 0, func(r, _ *v1.FlinkClusterStatus) {
			r.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 9, Path: "s3://cp/job-0/chk-9", JobID: "job-0", ObservedAt: at}
		}, false},
		{"the job state", 0, func(_, n *v1.FlinkClusterStatus) { n.Job.State = "FAILED" }, false},
		{"a new job", 0, func(_, n *v1.FlinkClusterStatus) { n.Job.ID = "job-2" }, false},
		{"a recorded step", 0, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 4
			n.Job.PendingSavepoint = &v1.SavepointInfo{TriggerID: "t-1"}
		}, false},
		{"another field with progress", 0, func(_, n *v1.FlinkClusterStatus) {
			n.Job.CheckpointsCompleted = 4
			n.ObservedGeneration = 2
		}, false},
		{"no job recorded", 0, func(r, _ *v1.FlinkClusterStatus) { r.Job = nil }, false},
	} {
		r, n := recorded(), recorded()
		tc.mutate(r, n)
		retained := tc.retained
		if retained == 0 {
			retained = 10
		}
		if got := FlinkProgressOnly(r, n, retained); got != tc.want {
			t.Errorf("%s: FlinkProgressOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUpgradeBeforeTheFirstSubmission: a new spec that arrives before the
// first job was ever submitted (a re-created cluster patched at once) has
// no job to stop; once the pods run it, its job is submitted. Before, the
// upgrade asked the state rule again at every step and never submitted
// (found by the fault-schedule test, seed 1).
func TestUpgradeBeforeTheFirstSubmission(t *testing.T) {
	first := baseSpec()
	w := &world{gen: 2, deployed: first, stable: nil, rolled: true, now: t0}
	next := baseSpec()
	next.Version = "1.18.1"
	w.spec = next
	w.flink = Flink{Reachable: true}
	submitted := false
	for i := 0; i < 6 && !submitted; i++ {
		p := w.decide()
		submitted = p.Action.Kind == ActSubmit
		w.commit(p)
		w.now = w.now.Add(Poll)
	}
	if !submitted {
		t.Fatalf("no submission after 6 steps: upgrade %+v, job %+v", w.status.Upgrade, w.status.Job)
	}
	if w.status.Upgrade == nil || w.status.Upgrade.Phase != v1.UpgradeVerifying || w.deployed.Version != "1.18.1" {
		t.Errorf("after the submission: upgrade %+v, deployed %s", w.status.Upgrade, w.deployed.Version)
	}
}

// TestJobLostBeforeTheFirstLook: a job submitted and never seen that Flink
// does not know is sent again under its ID when its JobManager has been
// ready since before the submission (an operator restart between record
// and send); when the JobManager became ready only after, it may have run
// the job and checkpointed, so it is held until the user names the state.
func TestJobLostBeforeTheFirstLook(t *testing.T) {
	submitted := metav1.NewTime(t0.Add(-10 * time.Second))
	world := func(jmSince time.Time) *world {
		w := stableWorld()
		w.status.Job = &v1.JobStatus{ID: "job-1", SubmittedAt: &submitted, RestoredFrom: "s3://sp/old",
			LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"}}
		w.flink, w.jmSince = Flink{Reachable: true}, jmSince
		return w
	}
	if p := world(t0.Add(-time.Hour)).decide(); p.Action.Kind != ActSubmit || p.Status.Job.ID != "job-1" || p.Action.RestorePath != "s3://sp/old" {
		t.Errorf("JobManager ready before the submission: action %s from %q as %s; want job-1 sent again from s3://sp/old", p.Action.Kind, p.Action.RestorePath, p.Status.Job.ID)
	}
	// No ready JobManager pod read: held and looked at again, neither
	// sent nor refused.
	unread := world(time.Time{})
	unread.jmUnread = true
	p := unread.decide()
	if p.Action.Kind != ActNone || cond(p, v1.ConditionStateHold) == nil || cond(p, v1.ConditionStateHold).Reason != "JobManagerUnconfirmed" || p.RequeueAfter != Poll {
		t.Errorf("no JobManager pod read: action %s, hold %+v, requeue %s; want JobManagerUnconfirmed, requeued at %s", p.Action.Kind, cond(p, v1.ConditionStateHold), p.RequeueAfter, Poll)
	}
	unread.commit(p)
	unread.jmUnread, unread.now = false, unread.now.Add(Poll)
	if p := unread.decide(); p.Action.Kind != ActSubmit || p.Action.RestorePath != "s3://sp/old" || cond(p, v1.ConditionStateHold) != nil {
		t.Errorf("the pod read at the next look, ready before the submission: action %s from %q, hold %+v; want sent again, the hold gone", p.Action.Kind, p.Action.RestorePath, cond(p, v1.ConditionStateHold))
	}
	w := world(t0.Add(-5 * time.Second))
	p = w.decide()
	if p.Action.Kind == ActSubmit || cond(p, v1.ConditionStateHold) == nil || cond(p, v1.ConditionStateHold).Reason != "NewestStateUnknown" {
		t.Fatalf("JobManager ready since after the submission: action %s from %q, hold %+v; want NewestStateUnknown", p.Action.Kind, p.Action.RestorePath, cond(p, v1.ConditionStateHold))
	}
	w.commit(p)
	if sent := w.nameState("s3://cp/chk-3"); sent.Action.Kind != ActSubmit || sent.Action.RestorePath != "s3://cp/chk-3" {
		t.Errorf("after the user named the state: action %s from %q", sent.Action.Kind, sent.Action.RestorePath)
	}
}

// TestJobEndedUnseen: with HA, a job never seen and not found is sent
// again; Flink refusing it as already ended (EndedUnseen) holds it,
// through a spec change too, until the user names the state.
func TestJobEndedUnseen(t *testing.T) {
	submitted := metav1.NewTime(t0.Add(-time.Hour))
	w := stableWorld()
	w.spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	w.deployed, w.stable = w.spec.DeepCopy(), w.spec.DeepCopy()
	w.status.Job = &v1.JobStatus{ID: "job-1", SubmittedAt: &submitted, RestoredFrom: "s3://sp/old",
		LastSavepoint: &v1.SavepointInfo{Path: "s3://sp/old", JobID: "job-0"}}
	w.flink = Flink{Reachable: true}
	if p := w.decide(); p.Action.Kind != ActSubmit || p.Status.Job.ID != "job-1" {
		t.Fatalf("with HA, never seen: action %s as %s; want job-1 sent again", p.Action.Kind, p.Status.Job.ID)
	}
	w.ended = true
	p := w.decide()
	if p.Action.Kind != ActNone || cond(p, v1.ConditionStateHold) == nil || cond(p, v1.ConditionStateHold).Reason != "NewestStateUnknown" {
		t.Fatalf("refused as ended: action %s, hold %+v; want NewestStateUnknown", p.Action.Kind, cond(p, v1.ConditionStateHold))
	}
	w.commit(p)
	w.gen, w.spec = w.gen+1, w.spec.DeepCopy()
	w.spec.Job.Parallelism++
	for i := 0; i < 4; i++ {
		p := w.decide()
		if p.Action.Kind == ActSubmit {
			t.Fatalf("a spec change sent the job from %q, unseen since it ended", p.Action.RestorePath)
		}
		w.commit(p)
		w.now = w.now.Add(Poll)
	}
	if sent := w.nameState("s3://cp/chk-9"); sent.Action.Kind != ActSubmit || sent.Action.RestorePath != "s3://cp/chk-9" {
		t.Errorf("after the user named the state: action %s from %q", sent.Action.Kind, sent.Action.RestorePath)
	}
}

// nameState is the user's answer to NewestStateUnknown: a new generation
// whose spec.job.initialSavepointPath is path. It returns the step that
// submits the job, deciding a few polls until one does.
func (w *world) nameState(path string) Step {
	w.gen, w.spec = w.gen+1, baseSpec()
	w.spec.Job.InitialSavepointPath = path
	var sent Step
	for i := 0; i < 6 && sent.Action.Kind != ActSubmit; i++ {
		sent = w.decide()
		w.commit(sent)
		w.now = w.now.Add(Poll)
	}
	return sent
}

// TestGateNamesAJobFlinkDidNotReport: a gate that times out while Flink
// does not report the job says so, not "no saved state" (a state path's
// word, which its message said until 2026-12-07).
func TestGateNamesAJobFlinkDidNotReport(t *testing.T) {
	w := savingWorld(t)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "s3://sp/pre"}}
	w.commit(w.decide()) // savepoint done, old job finished: deploy
	w.commit(w.decide()) // rolled out: submit
	if w.status.Upgrade == nil || w.status.Upgrade.Phase != v1.UpgradeVerifying {
		t.Fatalf("setup: upgrade %+v", w.status.Upgrade)
	}
	w.flink = Flink{}
	w.now = w.now.Add(time.Hour)
	p := w.decide()
	c := cond(p, v1.ConditionUpgrading)
	if c == nil || c.Reason != "UpgradeFailed" || !strings.Contains(c.Message, "(state unknown: Flink did not report the job, 0 checkpoints)") {
		t.Errorf("Upgrading = %+v", c)
	}
}

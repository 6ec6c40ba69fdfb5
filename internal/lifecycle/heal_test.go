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

// steadyWorld is a job that ran and checkpointed, now in the given state.
func steadyWorld(state flink.JobStatus) *world {
	spec := baseSpec()
	spec.Healing = &v1.HealingSpec{RestoreAttempts: 2, Backoff: "10s"}
	w := &world{gen: 1, spec: spec, deployed: spec, stable: spec, rolled: true, now: t0}
	w.status.Job = &v1.JobStatus{ID: "job-1", State: "RUNNING", CheckpointsCompleted: 3,
		LastCheckpoint: &v1.CheckpointInfo{ID: 3, Path: "s3://cp/job-1/chk-3", JobID: "job-1"}}
	w.flink = Flink{Reachable: true, JobFound: true, JobState: state, CheckpointsCompleted: 3, FailureCause: "java.lang.RuntimeException: bad record",
		LatestCheckpoint: &Checkpoint{ID: 4, Path: "s3://cp/job-1/chk-4"}, EndedAt: t0}
	return w
}

func TestFailedJobIsRestoredFromItsLatestCheckpointWithBackoff(t *testing.T) {
	w := steadyWorld(flink.JobFailed)
	// Within the backoff: nothing yet, a look again when it ends.
	p := w.decide()
	if p.Action.Kind != ActNone || p.RequeueAfter != 10*time.Second {
		t.Fatalf("within the backoff: %+v, requeue %s", p.Action, p.RequeueAfter)
	}
	w.commit(p) // records when the job was first seen FAILED
	w.now = t0.Add(10 * time.Second)
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "s3://cp/job-1/chk-4" {
		t.Fatalf("restore: %+v", p.Action)
	}
	if h := p.Status.Healing; h == nil || h.Restores != 1 || h.FailedJob != "job-1" {
		t.Fatalf("healing %+v", p.Status.Healing)
	}
	if !hasEvent(p, "JobRestored", "attempt 1 of 2") {
		t.Errorf("events %+v", p.Events)
	}
	w.commit(p)
	// The restored job fails too; the second backoff is twice the first.
	w.flink.EndedAt = w.now
	w.now = w.now.Add(15 * time.Second)
	if p = w.decide(); p.Action.Kind != ActNone {
		t.Fatalf("second backoff: %+v", p.Action)
	}
	w.commit(p)
	w.now = w.now.Add(5 * time.Second)
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Status.Healing.Restores != 2 {
		t.Fatalf("second restore: %+v %+v", p.Action, p.Status.Healing)
	}
	w.commit(p)
	// Attempts exhausted: left failed, with the reason, once.
	w.now = w.now.Add(time.Hour)
	p = w.decide()
	if p.Action.Kind != ActNone || !strings.Contains(p.Status.Healing.Exhausted, "bad record") || !hasEvent(p, "HealingExhausted", "after 2 restores") {
		t.Fatalf("exhausted: %+v %+v", p.Action, p.Status.Healing)
	}
	w.commit(p)
	if p = w.decide(); len(p.Events) != 0 || p.Action.Kind != ActNone {
		t.Fatalf("said twice: %+v", p.Events)
	}
}

func TestHealingOffLeavesAFailedJobFailed(t *testing.T) {
	w := steadyWorld(flink.JobFailed)
	w.spec.Healing.RestoreAttempts = 0
	w.now = t0.Add(time.Hour)
	if p := w.decide(); p.Action.Kind != ActNone || p.RequeueAfter != 0 {
		t.Fatalf("%+v", p)
	}
}

func TestRestoresAreForgottenOnceTheJobCheckpoints(t *testing.T) {
	w := steadyWorld(flink.JobRunning)
	w.status.Job.ID = "job-2"
	last := metav1.NewTime(t0.Add(-5 * time.Minute))
	w.status.Healing = &v1.HealingStatus{Restores: 2, FailedJob: "job-1", LastRestore: &last}
	// Five minutes after the restore: not yet the 10m window.
	if p := w.decide(); p.Status.Healing.Restores != 2 {
		t.Fatalf("forgotten too soon: %+v", p.Status.Healing)
	}
	w.now = t0.Add(5 * time.Minute)
	if p := w.decide(); p.Status.Healing.Restores != 0 {
		t.Fatalf("%+v", p.Status.Healing)
	}
}

// TestHealRequestRestoresTheNewestRetainedCheckpoint (issue 19, path 2): a
// running job healed by a cancel restores from the checkpoint Flink
// retains after the cancel, read once Flink's REST caches have expired:
// not the one recorded before (subsumed by a checkpoint completed during
// the cancel), and only because the cancel keeps it
// (RETAIN_ON_CANCELLATION). Where the job's checkpoints would not survive a
// cancel it is stopped with a savepoint instead; where it can do neither,
// nothing happens and StateHold says why. End to end:
// TestHealRestoresTheCheckpointTheCancelKept (Flink's default retention of
// one checkpoint).
func TestHealRequestRestoresTheNewestRetainedCheckpoint(t *testing.T) {
	w := steadyWorld(flink.JobRunning)
	w.heal = "no checkpoint completed for 3 intervals"
	p := w.decide()
	if p.Action.Kind != ActCancel || !hasEvent(p, "JobRestored", "no checkpoint completed") || p.Status.Healing.Restores != 1 {
		t.Fatalf("%+v %+v", p.Action, p.Events)
	}
	w.commit(p)
	// Flink reports the job CANCELED; a checkpoint completed during the
	// cancel subsumed chk-4, but Flink's cached history still shows it.
	w.flink.JobState = flink.JobCanceled
	w.now = w.now.Add(2 * time.Second)
	p = w.decide()
	if p.Action.Kind != ActNone || p.RequeueAfter == 0 {
		t.Fatalf("restored from a history read before Flink's caches expired: %+v", p.Action)
	}
	w.commit(p)
	w.now = w.now.Add(2 * time.Second)
	if p = w.decide(); p.Action.Kind != ActNone {
		t.Fatalf("within the cache window: %+v", p.Action)
	}
	w.flink.LatestCheckpoint = &Checkpoint{ID: 5, Path: "s3://cp/job-1/chk-5"}
	w.now = w.now.Add(2 * time.Second)
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "s3://cp/job-1/chk-5" {
		t.Fatalf("want the newest retained checkpoint chk-5: %+v", p.Action)
	}
	w.commit(p)
	// Still unhealthy right away: the backoff holds the next attempt.
	w.flink = running("", 0)
	w.now = w.now.Add(time.Second)
	if p = w.decide(); p.Action.Kind != ActNone {
		t.Fatalf("within the backoff: %+v", p.Action)
	}

	for _, tc := range []struct {
		name      string
		retention string
		state     flink.JobStatus
		action    ActionKind
		reason    string // StateHold's
	}{
		{"DELETE_ON_CANCELLATION, RUNNING: stopped with a savepoint", "DELETE_ON_CANCELLATION", flink.JobRunning, ActTrigger, ""},
		{"DELETE_ON_CANCELLATION, RESTARTING: held", "DELETE_ON_CANCELLATION", flink.JobRestarting, ActNone, "NoStateSurvivesCancel"},
		{"RETAIN_ON_CANCELLATION, RESTARTING: cancelled", "", flink.JobRestarting, ActCancel, ""},
	} {
		w := steadyWorld(tc.state)
		w.heal, w.retention = "restart loop", tc.retention
		p := w.decide()
		if p.Action.Kind != tc.action {
			t.Errorf("%s: action %s, want %s", tc.name, p.Action.Kind, tc.action)
		}
		if sp := p.Status.Job.PendingSavepoint; tc.action == ActTrigger && (sp == nil || !sp.Stop || sp.Reason != v1.SavepointForHeal) {
			t.Errorf("%s: pending %+v, want a stop-with-savepoint for the heal", tc.name, sp)
		}
		c := cond(p, v1.ConditionStateHold)
		switch {
		case tc.reason == "" && c != nil:
			t.Errorf("%s: StateHold %+v", tc.name, c)
		case tc.reason != "" && (c == nil || c.Reason != tc.reason || p.Status.Healing.Restores != 0):
			t.Errorf("%s: StateHold %+v, restores %d; want %s and no attempt counted", tc.name, c, p.Status.Healing.Restores, tc.reason)
		}
	}
}

// A rescale the autopilot asks for is an upgrade of kind Rescale: state
// saved first, and a failure does not mark the generation failed, so the
// autopilot may rescale again once it has reverted its target.
func TestRescaleTakesTheUpgradePath(t *testing.T) {
	w := steadyWorld(flink.JobRunning)
	next := w.spec.DeepCopy()
	next.Job.Parallelism, next.TaskManager.Replicas = 4, 2
	w.rescale = &Rescale{Parallelism: 4, TaskManagers: 2, Pending: 4}
	p := w.decide()
	if p.Status.Upgrade == nil || p.Status.Upgrade.Kind != string(ChangeRescale) || p.Status.Upgrade.Phase != v1.UpgradeSavingState || p.Action.Kind != ActTrigger {
		t.Fatalf("%+v %+v", p.Status.Upgrade, p.Action)
	}
	w.commit(p)
	w.status.Upgrade.Phase = v1.UpgradeVerifying
	w.status.Upgrade.TargetGeneration = 1
	s := newStep(Input{Generation: 1, Spec: w.spec, Status: &w.status, Deployed: w.spec, Now: w.now, Policy: policy.For(w.spec)})
	s.endUpgrade(true)
	if s.Status.LastFailedGeneration != 0 {
		t.Fatalf("a failed rescale marked generation %d failed", s.Status.LastFailedGeneration)
	}
	// The same difference without the autopilot is the user's job change.
	w2 := steadyWorld(flink.JobRunning)
	w2.spec = next
	if p := w2.decide(); p.Status.Upgrade == nil || p.Status.Upgrade.Kind != string(ChangeJob) {
		t.Fatalf("user change: %+v", p.Status.Upgrade)
	}
}

func hasEvent(p Step, reason, text string) bool {
	for _, e := range p.Events {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// The step settles the autopilot's rescale in flight: done when the job
// runs at its parallelism with the upgrade over, failed (with why and the
// parallelism to revert to) when its gate fails, neither while it verifies.
func TestTheStepSettlesTheAutopilotsRescale(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flink   Flink
		pending int32
		want    Settlement
	}{
		{"at the new parallelism, gate passed", Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, CheckpointsCompleted: 5, Parallelism: 4}, 4, Settlement{Done: true}},
		{"still at the old parallelism", Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, CheckpointsCompleted: 5, Parallelism: 2}, 4, Settlement{}},
		{"job failed: rolled back", Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "boom", Parallelism: 4}, 4,
			Settlement{Failed: true, RevertTo: 2, Why: "Generation 1 failed its gate (the job failed: boom); rolling back to the last stable spec"}},
		{"nothing in flight", Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, CheckpointsCompleted: 5, Parallelism: 4}, 0, Settlement{}},
	} {
		w := stableWorld()
		w.stable.Job.Parallelism = 2
		w.deployed = w.spec.DeepCopy()
		w.deployed.Job.Parallelism, w.deployed.TaskManager.Replicas = 4, 2
		w.rescale = &Rescale{Parallelism: 4, TaskManagers: 2, Pending: tc.pending}
		w.status.Upgrade = &v1.UpgradeStatus{Kind: string(ChangeRescale), Phase: v1.UpgradeVerifying, TargetGeneration: 1,
			StartedAt: metav1.NewTime(t0), PhaseStartedAt: metav1.NewTime(t0), RollbackPath: "s3://sp/1"}
		w.flink = tc.flink
		if got := w.decide().Rescale; got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// inPlaceWorld is a stable job rescaled in place to parallelism 4, its
// resource requirements sent.
func inPlaceWorld(t *testing.T) *world {
	w := stableWorld()
	yes := true
	w.spec.Version = "1.19.1"
	w.spec.UpgradePolicy = &v1.UpgradePolicy{StableCheckpoints: 5, StabilityTimeout: "1m", AutoRollback: &yes}
	w.deployed, w.stable = w.spec.DeepCopy(), w.spec.DeepCopy()
	w.inPlace = true
	w.status.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 10, Path: "s3://cp/job-1/chk-10", JobID: "job-1"}
	w.flink.LatestCheckpoint = &Checkpoint{ID: 10, Path: "s3://cp/job-1/chk-10"}
	w.rescale = &Rescale{Parallelism: 4, TaskManagers: 2, Pending: 4}
	p := w.decide()
	if p.Status.Upgrade == nil || p.Status.Upgrade.Kind != string(ChangeRescaleInPlace) {
		t.Fatalf("setup: %+v", p.Status.Upgrade)
	}
	w.commit(p)
	p = w.decide()
	if p.Action.Kind != ActRescale {
		t.Fatalf("setup: %s %+v", p.Action.Kind, p.Status.Upgrade)
	}
	w.commit(p)
	return w
}

// An in-place rescale whose gate fails: the same job checkpointed (chk-11,
// chk-12) since chk-10 was recorded at the rescale's start, and Flink
// retains only the newest (num-retained defaults to 1). The rollback
// restores chk-12, the state the job left, never the subsumed chk-10.
func TestInPlaceRollbackRestoresTheNewestRetainedCheckpoint(t *testing.T) {
	w := inPlaceWorld(t)
	w.now = w.now.Add(10 * time.Second)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "boom", CheckpointsCompleted: 12,
		LatestCheckpoint: &Checkpoint{ID: 12, Path: "s3://cp/job-1/chk-12"}, EndedAt: w.now}
	if p := w.submission(t, 10, 5*time.Second); p.Action.RestorePath != "s3://cp/job-1/chk-12" {
		t.Errorf("rollback submitted from %q; Flink retains only chk-12 (upgrade %+v)", p.Action.RestorePath, p.Status.Upgrade)
	}
}

// An in-place rescale superseded by a new spec while verifying: the job
// ran on to chk-12 and stopped with a savepoint for the new spec, which
// then fails its gate. The rollback restores that savepoint, the state
// before the new spec, never chk-10, recorded at the rescale's start.
func TestSupersededInPlaceRescaleRollsBackToTheStoppedJobsState(t *testing.T) {
	w := inPlaceWorld(t)
	w.flink = running("job-1", 12)
	w.flink.Parallelism = 4
	w.flink.LatestCheckpoint = &Checkpoint{ID: 12, Path: "s3://cp/job-1/chk-12"}
	w.gen = 2
	w.spec = w.spec.DeepCopy()
	w.spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": "x"}
	p := w.decide()
	w.commit(p)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, CheckpointsCompleted: 12,
		LatestCheckpoint: &Checkpoint{ID: 12, Path: "s3://cp/job-1/chk-12"}, Pending: &Operation{Done: true, Path: "s3://sp/job-1-stop"}}
	for range 20 {
		w.now = w.now.Add(2 * time.Second)
		p = w.decide()
		if p.Action.Kind == ActSubmit {
			w.commit(p)
			if p.Status.Upgrade.Phase == v1.UpgradeRollingBack {
				if p.Action.RestorePath != "s3://sp/job-1-stop" {
					t.Errorf("rollback submitted from %q (job-1 ran on to chk-12 and stopped with s3://sp/job-1-stop)", p.Action.RestorePath)
				}
				return
			}
			w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "boom"}
			continue
		}
		w.commit(p)
	}
	t.Fatalf("no rollback: %+v", w.status.Upgrade)
}

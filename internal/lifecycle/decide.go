package lifecycle

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// Decide makes one step of the lifecycle of a cluster with a job: the
// phase the status is in picks one function. A phase that moves the
// upgrade on returns true, and the phase it moved to decides in the same
// step, from the same observation: no phase calls another. Every move goes
// forward (supersede, steady, a start, deploying is the longest chain), so
// the bound only guards the loop.
func Decide(in Input) Step {
	in.Spec = Target(in.Spec, in.Autopilot)
	s := newStep(in)
	for range maxChain {
		if !phaseOf(s)(s) {
			break
		}
	}
	settle(s)
	return *s
}

// Target is the spec to run: the user's, with the autopilot's parallelism
// and TaskManagers when it sets them (r, Input.Autopilot).
func Target(user *v1.FlinkClusterSpec, r *Rescale) *v1.FlinkClusterSpec {
	if r == nil || r.Parallelism == 0 || user.Job == nil {
		return user
	}
	spec := user.DeepCopy()
	spec.Job.Parallelism, spec.TaskManager.Replicas = r.Parallelism, r.TaskManagers
	spec.Job.VertexParallelism = r.Vertices
	return spec
}

// rescaling: the spec carries the autopilot's parallelism, so a difference
// in parallelism alone is its rescale.
func rescaling(in Input) bool { return in.Autopilot != nil && in.Autopilot.Parallelism > 0 }

// settle concludes the autopilot's rescale in flight from what the step
// did: failed when the rescale upgrade the step started from was rolled
// back or gave up, done when no upgrade is left and the job runs at the
// rescale's parallelism.
func settle(s *Step) {
	in := s.in
	if in.Autopilot == nil || in.Autopilot.Pending == 0 {
		return
	}
	if up := in.Status.Upgrade; up != nil && IsRescale(up.Kind) {
		for _, t := range s.Transitions {
			switch t.Kind {
			case RollbackSucceeded, RollbackFailed, UpgradeFailed:
				s.Rescale.Failed = true
			}
		}
	}
	if s.Rescale.Failed {
		for _, e := range s.Events {
			if e.Warning {
				s.Rescale.Why = e.Message
				break
			}
		}
		if in.LastStable != nil && in.LastStable.Job != nil {
			s.Rescale.RevertTo = in.LastStable.Job.Parallelism
		}
		return
	}
	s.Rescale.Done = s.upgrade() == nil && in.Flink.JobFound && in.Flink.JobState == flink.JobRunning && in.Flink.Parallelism == in.Autopilot.Pending
}

const maxChain = 6

// phaseOf is the phase function for the status as the step has it.
func phaseOf(s *Step) func(*Step) bool {
	in, up := s.in, s.upgrade()
	switch {
	case in.Deployed == nil:
		return first
	case up == nil:
		return steady
	case up.TargetGeneration != in.Generation:
		return supersede
	case up.Phase == v1.UpgradeSavingState:
		return savingState
	case up.Phase == v1.UpgradeDeploying && Change(up.Kind) == ChangeRescaleInPlace:
		return inPlace
	case up.Phase == v1.UpgradeDeploying:
		return deploying
	case up.Phase == v1.UpgradeVerifying:
		return verifying
	case up.Phase == v1.UpgradeRollingBack:
		return rollingBack
	}
	return unknownPhase
}

// unknownPhase: a phase this operator does not know: stop, say so, touch
// nothing.
func unknownPhase(s *Step) bool {
	s.setUpgrading(metav1.ConditionFalse, "UnknownPhase", fmt.Sprintf("status.upgrade.phase %q is not a phase of this operator; the upgrade is abandoned", s.upgrade().Phase))
	s.endUpgrade(true)
	return false
}

// first deploys a cluster that runs nothing yet: no state to protect. A
// new cluster's pods may already run that spec, ready before any status
// was written (a status that would only say Creating is not written,
// internal/controller comingUp): then its job is submitted in the same
// step, as steady would one step later, and the step's one write records
// the spec and the job's ID together, before the submission. A status that
// records a job or an upgrade without a deployed spec is not a new
// cluster's: it is deployed first, and steady takes it from there.
func first(s *Step) bool {
	s.Deploy = s.in.Spec
	s.setUpgrading(metav1.ConditionFalse, "NoUpgrade", "No upgrade in flight")
	if job := s.job(); s.in.Spec.Job != nil && s.in.RolledOut && job.ID == "" && job.PendingSavepoint == nil && s.upgrade() == nil {
		runJob(s)
	}
	return false
}

// steady handles a cluster with no upgrade in flight.
func steady(s *Step) bool {
	in := s.in
	if in.Spec.Job == nil {
		// spec.job removed: its job stops with a savepoint first, recorded
		// for a returning spec.job, then the pods roll.
		if in.Deployed.Job != nil && in.Status.LastFailedGeneration != in.Generation {
			return startUpgrade(s, ChangeRemoval)
		}
		s.Deploy = in.Spec
		return false
	}
	change := Classify(in.Deployed, in.Spec)
	switch {
	case change == ChangeNone && in.Drift && in.Status.LastFailedGeneration != in.Generation:
		// The same spec, rendered differently: the pods must roll, so the
		// job's state is made safe first, as for a configuration change.
		s.event(false, "RenderingChanged", "The operator renders this cluster differently from what its pods run (an operator upgrade or a platform setting); rolling them through the state-safe upgrade path")
		return startUpgrade(s, ChangeConfigRoll)
	case change == ChangeNone:
		// Drift here is after a failed generation (see below).
		s.Hold = in.Drift
	case change == ChangeScale:
		// Scaling changes the replica count only; Flink reschedules from
		// its latest checkpoint by itself.
		s.Deploy = in.Spec
	case change == ChangeJob && rescaling(in) && parallelismOnly(in.Deployed, in.Spec) && in.InPlace && alive(in):
		return startInPlace(s)
	case change == ChangeJob && rescaling(in) && parallelismOnly(in.Deployed, in.Spec):
		return startUpgrade(s, ChangeRescale)
	case in.Status.LastFailedGeneration == in.Generation:
		// This generation failed and was rolled back or abandoned:
		// retrying it would fail the same way. A new spec clears it.
		// Meanwhile the pods keep what they run, even where this operator
		// renders them differently: rolling them would skip the state rule.
		s.Hold = in.Drift
	default:
		return startUpgrade(s, change)
	}
	if s.job().PendingSavepoint != nil {
		s.follow()
		return false
	}
	runJob(s)
	return false
}

// runJob keeps the job in its desired state and serves savepoint requests.
func runJob(s *Step) {
	in, job, spec := s.in, s.job(), s.in.Spec.Job
	if !in.RolledOut || !in.Flink.Reachable {
		return
	}
	wasSeen := job.State != "" && job.State != "SUSPENDED" && !flink.JobStatus(job.State).Terminal()
	s.observe()
	healed(s)
	wantRunning := spec.State != v1.JobStateSuspended
	switch {
	case wantRunning && !alive(in):
		switch {
		case in.Flink.JobFound && in.Flink.JobState == flink.JobFailed:
			// Past Flink's restart strategy: restored from its latest
			// state a bounded number of times, then left failed (and the
			// cluster Degraded) until the user changes something.
			heal(s)
			return
		case neverGot(in, job):
			s.resubmit()
			return
		}
		from, v := s.restorePoint(ForRestart)
		if v.Do != Restore {
			return
		}
		if !in.Flink.JobFound && wasSeen {
			// Flink lost a job it ran: a JobManager restart without high
			// availability forgets every job. Restore from the newest
			// state held, never from less.
			s.transition(Transition{Kind: JobLost})
			s.event(true, "JobLost", "Flink no longer knows job %s (a JobManager restart without high availability loses its jobs); restoring from %s", job.ID, orUnknown(from.Path))
			s.submit(from.Path, "Restored")
			return
		}
		s.submit(from.Path, "Submitted")
	case wantRunning && in.Heal != "" && in.Flink.JobState != flink.JobCancelling:
		healRunning(s)
	case !wantRunning && alive(in):
		switch _, v := s.restorePoint(ForSuspend); v.Do {
		case TakeSavepoint:
			s.trigger(v1.SavepointForSuspend, true, false)
		case Cancel:
			if in.Flink.JobState != flink.JobCancelling {
				s.act(ActCancel, "")
			}
			s.requeue(Poll)
		}
	case !wantRunning:
		job.State = "SUSPENDED"
	case spec.SavepointTriggerNonce != job.LastSavepointNonce:
		s.trigger(v1.SavepointManual, false, false)
	case in.Policy.SavepointInterval > 0 && in.Flink.JobState == flink.JobRunning:
		if periodicSavepointDue(s) {
			s.trigger(v1.SavepointPeriodic, false, false)
		}
	}
	markStable(s)
}

// periodicSavepointDue reports whether spec.job.savepointInterval has
// passed since the last savepoint or the submission; if not, it requeues
// for when it will have.
func periodicSavepointDue(s *Step) bool {
	in, job := s.in, s.job()
	since := job.SubmittedAt
	if sp := job.LastSavepoint; sp != nil && sp.CompletedAt != nil && (since == nil || sp.CompletedAt.After(since.Time)) {
		since = sp.CompletedAt
	}
	if since == nil {
		return false
	}
	if wait := since.Add(in.Policy.SavepointInterval).Sub(in.Now); wait > 0 {
		s.requeue(wait)
		return false
	}
	return true
}

// markStable records the deployed spec as stable once the job proved itself
// outside an upgrade (its first run, say).
func markStable(s *Step) {
	in, job := s.in, s.job()
	if starting(in.Flink.JobState) && s.Action.Kind == ActNone {
		// Nothing else wakes the reconcile when it turns RUNNING but the
		// health poller, a poll interval later.
		s.requeue(Poll)
		return
	}
	if in.Flink.JobState != flink.JobRunning || job.ID == "" || s.Action.Kind != ActNone {
		return
	}
	if job.CheckpointsCompleted < int64(in.Policy.Upgrade.StableCheckpoints) {
		s.requeue(Poll * 2)
		return
	}
	if in.Status.LastFailedGeneration == in.Generation {
		return
	}
	s.MarkStable = true
}

// startUpgrade begins a state-safe change, as far as the state rule allows:
// while it holds, nothing starts and the pods keep what they run.
func startUpgrade(s *Step, change Change) bool {
	in, job := s.in, s.job()
	// The job as Flink has it, whatever the rule answers: a refusal ends
	// here, and the phases that follow do not all read it.
	s.recordJob()
	snap, v := s.restorePoint(purposeOf(change, modeOf(in)))
	switch v.Do {
	case Hold, Wait:
		return false
	case Refuse:
		if change != ChangeRescale {
			s.Status.LastFailedGeneration = in.Generation
		}
		s.transition(Transition{Kind: UpgradeFailed})
		s.setUpgrading(metav1.ConditionFalse, v.Reason, fmt.Sprintf("The %s to generation %d was refused: %s. Change the spec to try again", change, in.Generation, v.Message))
		s.event(true, "UpgradeRefused", "The %s to generation %d was refused: %s", change, in.Generation, v.Message)
		return false
	}
	now := s.now()
	s.Status.Upgrade = &v1.UpgradeStatus{Kind: string(change), TargetGeneration: in.Generation, StartedAt: now}
	if s.rolledBack() == metav1.ConditionTrue {
		s.setRolledBack(metav1.ConditionFalse, "NewSpec", fmt.Sprintf("Generation %d is being rolled out", in.Generation))
	}
	s.transition(Transition{Kind: UpgradeStarted})
	s.event(false, "UpgradeStarted", "Started %s to generation %d", change, in.Generation)
	checkpoint := false
	switch v.Do {
	case Restore:
		// Nothing runs: the rule named the newest state it left.
		s.Status.Upgrade.RestorePath = snap.Path
		s.toPhase(v1.UpgradeDeploying)
		return true
	case Cancel:
		_, checkpoint = needsState(change, modeOf(in), in.Deployed.Version)
		if !checkpoint || in.Flink.JobState != flink.JobRunning {
			s.toPhase(v1.UpgradeDeploying)
			return true
		}
	}
	// A savepoint first, or, for a last-state roll of a RUNNING job, a
	// fresh checkpoint: less to replay; the restore point is still read
	// from Flink after the cancel.
	s.toPhase(v1.UpgradeSavingState)
	if job.PendingSavepoint == nil {
		s.trigger(upgradeReason(change, checkpoint), !checkpoint, checkpoint)
	} else {
		// A periodic or manual savepoint is in flight; the upgrade's own
		// trigger waits for it rather than racing it.
		s.requeue(Poll)
	}
	return false
}

// purposeOf names what a change must carry the job's state across.
func purposeOf(change Change, mode v1.UpgradeMode) Purpose {
	switch {
	case change == ChangeRemoval:
		return ForRemoval
	case mode == v1.UpgradeStateless:
		return ForStateless
	case change == ChangeUpgrade:
		return ForVersion
	case change == ChangeConfigRoll && mode == v1.UpgradeLastState:
		return ForLastState
	}
	return ForChange
}

// modeOf is the job's upgrade mode: the spec's, or the deployed one's
// when spec.job was removed.
func modeOf(in Input) v1.UpgradeMode {
	switch {
	case in.Spec.Job != nil:
		return in.Spec.Job.UpgradeMode
	case in.Deployed != nil && in.Deployed.Job != nil:
		return in.Deployed.Job.UpgradeMode
	}
	return v1.UpgradeSavepoint
}

// upgradeReason is why an upgrade's savepoint or checkpoint is taken.
func upgradeReason(change Change, checkpoint bool) v1.SavepointReason {
	switch {
	case checkpoint:
		return v1.CheckpointForUpgrade
	case change == ChangeRemoval:
		return v1.SavepointForRemoval
	}
	return v1.SavepointForUpgrade
}

// forUpgrade: a savepoint or checkpoint taken by an upgrade.
func forUpgrade(r v1.SavepointReason) bool {
	return r == v1.SavepointForUpgrade || r == v1.CheckpointForUpgrade || r == v1.SavepointForRemoval
}

// savingState waits for the savepoint or checkpoint that makes state safe.
func savingState(s *Step) bool {
	in := s.in
	if s.job().PendingSavepoint == nil {
		// The upgrade waited for another savepoint; ask the rule again.
		s.toPhase(v1.UpgradeDeploying)
		return true
	}
	result, done := s.follow()
	switch {
	case result == inFlight:
		return false
	case result == failed && (alive(in) || !in.Flink.Reachable):
		// The job runs on, untouched: a savepoint or checkpoint does not
		// stop it, and a failed stop-with-savepoint leaves it running.
		untouched(s)
		return false
	case result == completed && !forUpgrade(done.Reason):
		// Another savepoint finished; the upgrade's own comes next.
		s.requeue(Poll)
		return false
	}
	// The state is saved, or the job ended anyway: the rule reads the
	// newest state it left.
	s.toPhase(v1.UpgradeDeploying)
	return true
}

// untouched ends an upgrade whose state could not be saved while its job
// runs on (recordJob: no phase polls it after this).
func untouched(s *Step) {
	target := s.upgrade().TargetGeneration
	s.recordJob()
	s.endUpgrade(true)
	s.transition(Transition{Kind: UpgradeFailed})
	s.setUpgrading(metav1.ConditionFalse, "SavepointFailed",
		fmt.Sprintf("The upgrade to generation %d did not start: the job's state could not be saved (see the SavepointFailed event); the job runs on, untouched. Change the spec to retry", target))
}

// deploying stops the old job as the state rule allows, records the state
// it restores from, rolls the pods, and submits the new job once they run
// the new spec. The restore point is settled (the old job seen ended, its
// state read) before anything rolls: a JobManager without HA forgets the
// old job, and its history with it, when it restarts.
func deploying(s *Step) bool {
	in, up, job := s.in, s.upgrade(), s.job()
	// A job that was never submitted has nothing to stop: once the pods
	// run the new spec it is submitted (from the initial savepoint). An
	// ended job whose restore point this upgrade has not recorded asks the
	// rule too: a spec that supersedes an upgrade and equals the deployed
	// one finds the pods as they are, and the job the superseded upgrade
	// stopped (fault schedule 30: a removal's cancel, then spec.job back;
	// the job was submitted without the state the cancel kept).
	if !specEqual(in.Deployed, in.Spec) || job.ID != "" && (job.EndedAt == nil || up.RestorePath == "") {
		snap, v := s.restorePoint(purposeOf(Change(up.Kind), modeOf(in)))
		switch v.Do {
		case TakeSavepoint:
			// The job runs (again): its state is saved first.
			s.toPhase(v1.UpgradeSavingState)
			if job.PendingSavepoint == nil {
				s.trigger(upgradeReason(Change(up.Kind), false), true, false)
			}
		case Cancel:
			if in.Flink.JobState != flink.JobCancelling {
				s.act(ActCancel, "")
			}
			if limit := in.Policy.Upgrade.SavepointTimeout; timedOut(up.PhaseStartedAt, limit, in.Now) {
				// A cancel always ends in Flink; giving up here would leave
				// a job stopped with nothing to restore it.
				s.hold(Verdict{Do: Hold, Reason: "StopInProgress", Message: fmt.Sprintf(
					"Job %s has not stopped within %s (state %s); the operator waits for Flink to report it ended before it rolls the pods", job.ID, limit, jobState(in.Flink))})
			}
			s.requeue(Poll)
		case Refuse:
			abandon(s, v.Message)
		case Restore:
			up.RestorePath = snap.Path
			if up.RollbackPath == "" {
				up.RollbackPath = snap.Path
			}
			if specEqual(in.Deployed, in.Spec) {
				// The pods run this spec already: submit it below.
				break
			}
			s.Deploy = in.Spec
			s.requeue(Poll)
			return false
		}
		if v.Do != Restore {
			return false
		}
	}
	s.Deploy = in.Spec
	if !in.RolledOut {
		s.requeue(Poll)
		return false
	}
	if in.Spec.Job == nil {
		removed(s)
		return false
	}
	// The job is submitted and verified in one phase: its ID is recorded
	// with the phase change, before the submission.
	s.submit(up.RestorePath, "Restored")
	up.CheckpointsAtRestore = 0
	s.toPhase(v1.UpgradeVerifying)
	return false
}

// removed ends the removal of spec.job: the job stopped, its state is
// recorded in status.job, the pods run the spec without it.
func removed(s *Step) {
	in, up := s.in, s.upgrade()
	from := up.RestorePath
	s.endUpgrade(false)
	s.setUpgrading(metav1.ConditionFalse, "JobRemoved", fmt.Sprintf(
		"spec.job was removed: job %s stopped and its state, %s, is recorded in status.job; adding spec.job again restores from it", s.job().ID, orUnknown(from)))
	s.transition(Transition{Kind: UpgradeSucceeded})
	s.event(false, "JobRemoved", "Generation %d runs without a job; job %s stopped with its state at %s", in.Generation, s.job().ID, orUnknown(from))
}

// abandon ends an upgrade that could not start its rollout.
func abandon(s *Step, why string) {
	target := s.upgrade().TargetGeneration
	s.endUpgrade(true)
	s.transition(Transition{Kind: UpgradeFailed})
	s.setUpgrading(metav1.ConditionFalse, "UpgradeFailed", fmt.Sprintf("The upgrade to generation %d stopped: %s", target, why))
	s.event(true, "UpgradeFailed", "The upgrade to generation %d stopped: %s", target, why)
}

// verifying is the stability gate: the job RUNNING with N checkpoints
// completed since the restore, within the deadline.
func verifying(s *Step) bool {
	in, up, job := s.in, s.upgrade(), s.job()
	if in.Flink.Reachable && in.RolledOut && neverGot(in, job) {
		s.resubmit()
	}
	s.observe()
	need, limit := int64(in.Policy.Upgrade.StableCheckpoints), in.Policy.Upgrade.StabilityTimeout
	// A rescale is done when the job runs at the new parallelism, too (the
	// adaptive scheduler runs each vertex at min(upper bound, slots)).
	atParallelism := !IsRescale(up.Kind) || in.Spec.Job.Parallelism == 0 || runsAt(in.Flink, in.Spec.Job)
	if in.Flink.Reachable && in.Flink.JobFound && in.Flink.JobState == flink.JobRunning && atParallelism &&
		in.Flink.CheckpointsCompleted-up.CheckpointsAtRestore >= need {
		s.endUpgrade(false)
		s.Status.LastFailedGeneration = 0
		s.setUpgrading(metav1.ConditionFalse, "UpgradeSucceeded",
			fmt.Sprintf("Generation %d is stable: the job runs and completed %d checkpoints", in.Generation, need))
		s.setRolledBack(metav1.ConditionFalse, "NotRolledBack", "The current spec passed its gate")
		s.transition(Transition{Kind: UpgradeSucceeded})
		s.event(false, "UpgradeSucceeded", "Generation %d passed the stability gate", in.Generation)
		s.MarkStable = true
		return false
	}
	jobFailed := in.Flink.JobFound && in.Flink.JobState == flink.JobFailed
	if !jobFailed && !timedOut(up.PhaseStartedAt, limit, in.Now) {
		s.requeue(Poll)
		return false
	}
	why := fmt.Sprintf("the job did not run with %d checkpoints within %s (state %s, %d checkpoints)",
		need, limit, jobState(in.Flink), in.Flink.CheckpointsCompleted-up.CheckpointsAtRestore)
	if jobFailed {
		why = "the job failed: " + orNone(in.Flink.FailureCause, "no cause reported")
	}
	s.transition(Transition{Kind: UpgradeFailed})
	if !in.Policy.Upgrade.AutoRollback || in.LastStable == nil {
		s.endUpgrade(true)
		s.setUpgrading(metav1.ConditionFalse, "UpgradeFailed", fmt.Sprintf("Generation %d failed its gate: %s; no rollback (disabled or no stable spec)", in.Generation, why))
		s.event(true, "UpgradeFailed", "Generation %d failed its gate: %s", in.Generation, why)
		return false
	}
	s.event(true, "RollingBack", "Generation %d failed its gate (%s); rolling back to the last stable spec", in.Generation, why)
	s.toPhase(v1.UpgradeRollingBack)
	// The failed job's submission is over; the rollback's own is recorded
	// when it is made, and its absence is what says "stop the failed job".
	job.SubmittedAt = nil
	s.setUpgrading(metav1.ConditionFalse, "UpgradeFailed", fmt.Sprintf("Generation %d failed its gate: %s", in.Generation, why))
	from := orUnknown(rollbackPoint(up))
	if Change(up.Kind) == ChangeRescaleInPlace {
		from = "the newest state the job leaves" // read once it stopped (RestorePoint)
	}
	s.setRollingBack(metav1.ConditionTrue, "GateFailed", fmt.Sprintf("Rolling back to the last stable spec and restoring from %s", from))
	return true
}

// rollingBack stops the failed job, returns the pods to the last stable
// spec and restores the job from the state saved before the upgrade (no
// HA metadata needed). It ends within the stability timeout either way.
func rollingBack(s *Step) bool {
	in, up, job := s.in, s.upgrade(), s.job()
	if limit := in.Policy.Upgrade.StabilityTimeout; timedOut(up.PhaseStartedAt, limit, in.Now) {
		state := jobState(in.Flink)
		if in.Flink.JobState == flink.JobRunning && !in.Flink.TasksRunning() {
			state += ", its tasks not all running yet: waiting for slots or restoring its state, which goes on"
		}
		rollbackFailed(s, fmt.Sprintf("it did not finish within %s (job state %s)", limit, state))
		return false
	}
	if job.SubmittedAt == nil {
		// The failed job first; then the pods; then the rollback's job.
		if !specEqual(in.Deployed, in.LastStable) || job.EndedAt == nil {
			switch snap, v := s.restorePoint(ForRollback); v.Do {
			case Cancel:
				if in.Flink.JobState != flink.JobCancelling {
					s.act(ActCancel, "")
				}
				s.requeue(Poll)
			case Restore:
				// The rollback point, or an in-place rescale's newest state.
				up.RollbackPath = snap.Path
				s.Deploy = in.LastStable
				s.requeue(Poll)
			}
			return false
		}
		s.Deploy = in.LastStable
		if !in.RolledOut {
			s.requeue(Poll)
			return false
		}
		s.submit(rollbackPoint(up), "RolledBack")
		return false
	}
	s.Deploy = in.LastStable
	if in.Flink.Reachable && neverGot(in, job) {
		s.resubmit()
	}
	s.observe()
	switch {
	case in.Flink.TasksRunning():
		// Its tasks, not the job's status: a rollback whose job turned
		// RUNNING and then failed restoring its state did not finish.
		s.endUpgrade(true)
		s.setRollingBack(metav1.ConditionFalse, "RollbackComplete", "The rollback finished")
		s.setRolledBack(metav1.ConditionTrue, "GateFailed",
			fmt.Sprintf("Generation %d failed its gate; running the last stable spec restored from %s. Change the spec to try again", in.Generation, orUnknown(rollbackPoint(up))))
		s.transition(Transition{Kind: RollbackSucceeded})
		s.event(false, "RolledBack", "Rolled back to the last stable spec; the job runs from %s", orUnknown(rollbackPoint(up)))
	case in.Flink.JobFound && in.Flink.JobState.Terminal():
		rollbackFailed(s, fmt.Sprintf("the restored job is %s: %s", in.Flink.JobState, orUnknown(in.Flink.FailureCause)))
	default:
		s.requeue(Poll)
	}
	return false
}

// rollbackFailed ends a rollback that did not bring the job back: a
// condition, an event and a transition, never a wait.
func rollbackFailed(s *Step, why string) {
	in, up := s.in, s.upgrade()
	s.endUpgrade(true)
	s.setRollingBack(metav1.ConditionFalse, "RollbackFailed", "The rollback failed: "+why)
	s.setRolledBack(metav1.ConditionFalse, "RollbackFailed",
		fmt.Sprintf("Generation %d failed its gate and the rollback to the last stable spec failed too: %s (restoring from %s). Change the spec to try again", in.Generation, why, orUnknown(rollbackPoint(up))))
	s.transition(Transition{Kind: RollbackFailed})
	s.event(true, "RollbackFailed", "The rollback to the last stable spec failed: %s", why)
}

// supersede handles a new spec during an upgrade: the user's newest spec
// wins, from the newest state of whatever job runs now (the old one, the
// one being verified, the rollback's): the state rule takes a savepoint of
// it while it runs, or reads the newest state it left. A rollback returns
// to the state recorded before the first of the superseded upgrades.
func supersede(s *Step) bool {
	in, up := s.in, s.upgrade()
	if up.Phase == v1.UpgradeSavingState && s.job().PendingSavepoint != nil {
		// Let the savepoint finish: the new spec starts from it.
		result, _ := s.follow()
		switch {
		case result == inFlight:
			return false
		case result == failed && (alive(in) || !in.Flink.Reachable):
			// The upgrade is over, its job untouched; the new generation
			// starts afresh, from steady.
			untouched(s)
			return true
		}
	}
	if up.Phase == v1.UpgradeRollingBack {
		s.setRollingBack(metav1.ConditionFalse, "Superseded", fmt.Sprintf("Generation %d replaced the rollback", in.Generation))
	}
	s.transition(Transition{Kind: UpgradeSuperseded})
	s.event(false, "UpgradeSuperseded", "Generation %d supersedes the upgrade to generation %d", in.Generation, up.TargetGeneration)
	if up.RollbackPath == "" && Change(up.Kind) != ChangeRescaleInPlace {
		// An in-place rescale's restore point is a checkpoint of a job
		// that runs on: the state before the new spec is what the rule
		// reads when it stops that job (deploying).
		up.RollbackPath = up.RestorePath
	}
	up.RestorePath = supersededRestore(s)
	up.TargetGeneration = in.Generation
	up.Kind = string(Classify(in.Deployed, in.Spec))
	if in.Spec.Job == nil {
		up.Kind = string(ChangeRemoval)
	}
	s.toPhase(v1.UpgradeDeploying)
	return true
}

// supersededRestore is the restore point a superseding spec keeps: where
// deploying submits from without asking the rule again (the spec equal to
// the deployed one and the job ended), it must be the state the recorded
// job left, never one a job ran from since.
func supersededRestore(s *Step) string {
	in, up, job := s.in, s.upgrade(), s.job()
	switch {
	case job.ID == "":
		// Never submitted: the newest spec's initial savepoint, as the
		// rule answers for it (RestorePoint).
		return initialSavepoint(in)
	case up.Phase == v1.UpgradeRollingBack && job.SubmittedAt == nil:
		// The rollback's own job is not submitted yet: it restores the
		// rollback point, as rollingBack would; the failed job's state was
		// written by the spec that failed (perhaps a newer Flink).
		return rollbackPoint(up)
	case up.Phase != v1.UpgradeDeploying || Change(up.Kind) == ChangeRescaleInPlace:
		// The state a job now running started from (verifying, a
		// rollback's job, an in-place rescale's), not the state it will
		// leave: the rule reads that once the job is stopped (fault
		// schedule 278: spec.job removed and declared again as deployed
		// while the cancel settled; the job was submitted from the
		// savepoint its predecessor had started it from, not from its own
		// checkpoint).
		return ""
	}
	// Deploying: the state of a job already stopped.
	return up.RestorePath
}

func specEqual(a, b *v1.FlinkClusterSpec) bool {
	return a != nil && b != nil && Classify(a, b) == ChangeNone
}

// runsAt says the job runs at the spec's parallelism: its widest vertex
// at the job's, and each vertex the spec names at its own.
func runsAt(f Flink, job *v1.JobSpec) bool {
	if f.Parallelism != job.Parallelism {
		return false
	}
	for _, want := range job.VertexParallelism {
		for _, v := range f.Vertices {
			if v.ID == want.ID && v.Parallelism != want.Parallelism {
				return false
			}
		}
	}
	return true
}

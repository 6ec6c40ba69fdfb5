package lifecycle

import (
	"fmt"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

func (s *Step) healing() *v1.HealingStatus {
	if s.Status.Healing == nil {
		s.Status.Healing = &v1.HealingStatus{}
	}
	return s.Status.Healing
}

// heal restores a job that exhausted Flink's restart strategy (FAILED)
// from the newest state held, its latest completed checkpoint as a rule,
// after a backoff that doubles with each attempt; past the attempts it
// stays failed, with the reason, and the cluster is Degraded.
func heal(s *Step) {
	in, job := s.in, s.job()
	attempts, backoff := in.Policy.Healing.RestoreAttempts, in.Policy.Healing.Backoff
	if attempts == 0 {
		return
	}
	h := s.healing()
	// The backoff counts towards the wait for Flink's caches.
	s.sawEnd()
	cause := job.FailureCause
	if cause == "" {
		cause = "no root exception reported"
	}
	if h.Restores >= attempts {
		if h.Exhausted == "" {
			h.Exhausted = fmt.Sprintf("Job %s failed past its restart strategy after %d restores from its latest checkpoint: %s. Change the spec to try again", job.ID, h.Restores, cause)
			s.transition(Transition{Kind: HealingExhausted})
			s.event(true, "HealingExhausted", "%s", h.Exhausted)
		}
		return
	}
	failedAt := in.Flink.EndedAt
	if failedAt.IsZero() || failedAt.After(in.Now) {
		failedAt = in.Now
	}
	if due := failedAt.Add(backoff << h.Restores); in.Now.Before(due) {
		s.requeue(due.Sub(in.Now))
		return
	}
	from, v := s.restorePoint(ForRestart)
	if v.Do != Restore {
		return
	}
	h.Restores++
	now := s.now()
	h.LastRestore, h.FailedJob = &now, job.ID
	s.transition(Transition{Kind: JobRestored})
	s.event(true, "JobRestored", "Job %s failed past its restart strategy (%s); restoring it from %s, attempt %d of %d", job.ID, cause, orUnknown(from.Path), h.Restores, attempts)
	s.submit(from.Path, "Restored")
}

// healRunning restarts a running job the autopilot found unhealthy (a
// restart loop, stalled checkpoints) from its latest state; it counts
// against the same attempts. The state rule decides how: a cancel where
// the job's checkpoints survive it (RETAIN_ON_CANCELLATION, rendered for
// every job), the next step then restoring from the newest checkpoint
// Flink retains, read after the job ended; a stop-with-savepoint where
// they would not; neither, with the StateHold condition, where the job can
// do neither. Flink's own restart strategy restores the same checkpoint;
// the cancel is for what it does not reset (the job's restart budget).
func healRunning(s *Step) {
	in, job := s.in, s.job()
	attempts, backoff := in.Policy.Healing.RestoreAttempts, in.Policy.Healing.Backoff
	h := s.healing()
	if attempts == 0 || h.Restores >= attempts || !alive(in) {
		return
	}
	if h.LastRestore != nil && in.Now.Before(h.LastRestore.Add(backoff<<h.Restores)) {
		s.requeue(h.LastRestore.Add(backoff << h.Restores).Sub(in.Now))
		return
	}
	_, v := s.restorePoint(ForLastState)
	if v.Do != Cancel && v.Do != TakeSavepoint {
		return
	}
	h.Restores++
	now := s.now()
	h.LastRestore, h.FailedJob = &now, job.ID
	s.transition(Transition{Kind: JobRestored})
	if v.Do == TakeSavepoint {
		s.event(true, "JobRestored", "Job %s: %s; stopping it with a savepoint to restore from it (its checkpoints would not survive a cancel), attempt %d of %d", job.ID, in.Heal, h.Restores, attempts)
		s.trigger(v1.SavepointForHeal, true, false)
		return
	}
	s.event(true, "JobRestored", "Job %s: %s; cancelling it to restore from its latest retained checkpoint, attempt %d of %d", job.ID, in.Heal, h.Restores, attempts)
	s.act(ActCancel, "")
	s.requeue(Poll)
}

// healed forgets past restores once the restored job has run and
// checkpointed for the restart-loop window: a job that fails again soon
// after each restore (a poison record past every checkpoint) still
// reaches its bound.
func healed(s *Step) {
	h, job := s.Status.Healing, s.job()
	if h == nil || (h.Restores == 0 && h.Exhausted == "") {
		return
	}
	settled := h.LastRestore == nil || !s.in.Now.Before(h.LastRestore.Add(s.in.Policy.Healing.LoopWindow))
	if s.in.Flink.JobState == flink.JobRunning && job.CheckpointsCompleted > 0 && job.ID != h.FailedJob && settled {
		h.Restores, h.Exhausted = 0, ""
	}
}

// startInPlace begins a rescale through the adaptive scheduler: no
// savepoint (the job restarts from its latest checkpoint by itself, and
// keeps its ID); a rollback restores the newest state held now.
func startInPlace(s *Step) bool {
	in := s.in
	// The rollback's restore point: the checkpoint Flink reports now, not
	// only the last one written.
	s.observe()
	s.Status.Upgrade = &v1.UpgradeStatus{Kind: string(ChangeRescaleInPlace), TargetGeneration: in.Generation, StartedAt: s.now(),
		RestorePath: newestState(s.job(), in.Spec.Job)}
	s.transition(Transition{Kind: UpgradeStarted})
	s.event(false, "UpgradeStarted", "Started an in-place rescale to parallelism %d (adaptive scheduler)", in.Spec.Job.Parallelism)
	s.toPhase(v1.UpgradeDeploying)
	return true
}

// inPlace scales the TaskManagers first, then sets the job's resource
// requirements, then hands over to the stability gate, which also waits
// for the new parallelism.
func inPlace(s *Step) bool {
	in, up := s.in, s.upgrade()
	s.Deploy = in.Spec
	if !specEqual(in.Deployed, in.Spec) || !in.RolledOut || starting(in.Flink.JobState) {
		// A starting job shows no checkpoint count (the adaptive
		// scheduler's sparse graph, rule.go beforeStop): the gate's
		// baseline is read once it runs, or it would count checkpoints
		// completed before the rescale.
		s.requeue(Poll)
		return false
	}
	s.Action = Action{Kind: ActRescale, Parallelism: in.Spec.Job.Parallelism}
	up.CheckpointsAtRestore = in.Flink.CheckpointsCompleted
	s.toPhase(v1.UpgradeVerifying)
	s.requeue(Poll)
	return false
}

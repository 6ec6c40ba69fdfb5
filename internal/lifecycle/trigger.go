package lifecycle

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// settleMargin is how much earlier than the recorded trigger time a
// savepoint in Flink's history may have been triggered and still be ours:
// the operator's and the JobManager's clocks differ a little.
const settleMargin = 30 * time.Second

// trigger records a savepoint (or checkpoint) request before it is sent.
func (s *Step) trigger(reason v1.SavepointReason, stop, checkpoint bool) {
	job := s.job()
	job.PendingSavepoint = &v1.SavepointInfo{
		TriggerID:   triggerID(s.in.UID, job.ID, string(reason), s.in.Now),
		JobID:       job.ID,
		Reason:      reason,
		Stop:        stop,
		Checkpoint:  checkpoint,
		TriggeredAt: s.now(),
	}
	s.act(ActTrigger, "")
	what := "savepoint"
	switch {
	case checkpoint:
		what = "checkpoint"
	case stop:
		what = "stop-with-savepoint"
	}
	s.event(false, "SavepointTriggered", "Triggered %s %s of job %s (%s)", what, job.PendingSavepoint.TriggerID, job.ID, reason)
	s.requeue(Poll)
}

// outcome of a trigger in flight.
type outcome int

const (
	inFlight outcome = iota
	completed
	failed
)

// follow moves the pending trigger one step. Every path is bounded by the
// savepoint timeout, and a trigger Flink forgot is settled from Flink's
// own record (the job's checkpoint history) before it is sent again.
func (s *Step) follow() (outcome, *v1.SavepointInfo) {
	in, job := s.in, s.job()
	sp := job.PendingSavepoint
	op := in.Flink.Pending
	if op != nil && op.Done {
		if op.Path == "" {
			return s.triggerFailed(sp, op.Failure)
		}
		return s.triggerDone(sp, op.Path)
	}
	if op != nil && op.Unknown {
		if path := settled(in, sp); path != "" {
			return s.triggerDone(sp, path)
		}
		// Flink forgets a trigger's result some time after the operation
		// ended, while its job status and checkpoint history may be
		// cached reads from before (DefaultExecutionGraphCache, the
		// checkpoint statistics cache): a job still "RUNNING" may have
		// just finished with the savepoint. Nothing is concluded, or sent
		// again, until those caches have turned over.
		if wait := forgottenLeft(s, sp); wait > 0 {
			s.requeue(wait)
			return inFlight, nil
		}
	} else if op != nil {
		sp.ForgottenAt = nil
	}
	if limit := in.Policy.Upgrade.SavepointTimeout; timedOut(sp.TriggeredAt, limit, in.Now) {
		if !sp.Stop || !stopMayComplete(in, op) {
			return s.triggerFailed(sp, fmt.Sprintf("it did not complete within %s", limit))
		}
		// Flink may still complete the stop, and the job would then be
		// stopped with a savepoint nobody restores: the deadline does not
		// abandon it, it is followed to Flink's answer.
		s.hold(Verdict{Do: Hold, Reason: "StopInProgress", Message: fmt.Sprintf(
			"The stop-with-savepoint %s of job %s has not completed within %s; Flink may still complete it, so the operator follows it to Flink's answer", sp.TriggerID, sp.JobID, limit)})
	}
	switch {
	case !in.Flink.Reachable || op == nil:
		// Nothing known this time (Flink unreachable, or the status read
		// failed); look again.
	case op.Unknown && !alive(in):
		// The caller reads the state of a job that ended from Flink's
		// history (RestorePoint), where the savepoint shows once Flink's
		// cache of it has expired.
		return s.triggerFailed(sp, fmt.Sprintf("Flink does not know it and job %s no longer runs (state %s); the state it left is read from its checkpoint history", sp.JobID, orUnknown(string(in.Flink.JobState))))
	case op.Unknown:
		// Never sent, or forgotten before it completed: send it again
		// under the recorded ID.
		s.act(ActTrigger, "")
	}
	s.requeue(Poll)
	return inFlight, nil
}

// forgottenLeft records when Flink was first seen not to know the trigger
// and says how long its REST caches may still answer from before that.
func forgottenLeft(s *Step, sp *v1.SavepointInfo) time.Duration {
	if sp.ForgottenAt == nil {
		now := s.now()
		sp.ForgottenAt = &now
	}
	return sp.ForgottenAt.Add(restCacheWindow(s.in.Deployed) + time.Second).Sub(s.in.Now)
}

// stopMayComplete: Flink may still complete a stop-with-savepoint past the
// operator's deadline: its answer is not known (unreachable, or the status
// read failed), the operation is in flight, or Flink forgot it while the
// job is neither running on nor ended (StopWithSavepointTerminationHandler
// ends it FINISHED with the savepoint, or fails it over, which ends the
// operation failed). A forgotten stop of a RUNNING job will not complete.
func stopMayComplete(in Input, op *Operation) bool {
	switch {
	case !in.Flink.Reachable || op == nil:
		return true
	case !op.Unknown:
		return !op.Done
	}
	return alive(in) && in.Flink.JobState != flink.JobRunning
}

// settled finds, in Flink's checkpoint history, the result of a trigger
// Flink no longer remembers: a savepoint triggered after the recorded
// request and not yet recorded by the operator; for a checkpoint trigger,
// a checkpoint completed after it (a newer one serves a last-state
// restore as well).
func settled(in Input, sp *v1.SavepointInfo) string {
	after := sp.TriggeredAt.Add(-settleMargin)
	if sp.Checkpoint {
		if cp := in.Flink.LatestCheckpoint; cp != nil && !cp.TriggeredAt.Before(after) {
			return cp.Path
		}
		return ""
	}
	known := map[string]bool{}
	for _, h := range in.Status.Job.SavepointHistory {
		known[h.Path] = true
	}
	for _, c := range in.Flink.Savepoints {
		if c.Path != "" && !known[c.Path] && !c.TriggeredAt.Before(after) {
			return c.Path
		}
	}
	return ""
}

func (s *Step) triggerDone(sp *v1.SavepointInfo, path string) (outcome, *v1.SavepointInfo) {
	in, job := s.in, s.job()
	done := *sp
	done.Path = path
	now := s.now()
	done.CompletedAt = &now
	for _, c := range in.Flink.Savepoints {
		if c.Path == path {
			done.CheckpointID = c.ID
		}
	}
	job.PendingSavepoint = nil
	if !done.Checkpoint {
		job.LastSavepoint = &done
		job.SavepointHistory = append([]v1.SavepointInfo{done}, job.SavepointHistory...)
		if keep := in.Policy.Upgrade.SavepointRetention; len(job.SavepointHistory) > keep {
			job.SavepointHistory = job.SavepointHistory[:keep]
		}
	}
	if done.Reason == v1.SavepointManual {
		job.LastSavepointNonce = in.Spec.Job.SavepointTriggerNonce
	}
	if done.Stop {
		job.State = string(flink.JobFinished)
	}
	s.transition(Transition{Kind: SavepointCompleted, Reason: done.Reason, Took: in.Now.Sub(done.TriggeredAt.Time)})
	s.event(false, "SavepointCompleted", "The %s %s completed at %s", done.Reason, kindOf(done), done.Path)
	// The next step follows from the new status, which is our own write
	// and wakes nothing by itself.
	s.requeue(Poll)
	return completed, &done
}

// triggerFailed records a failed trigger. A manual one consumes its nonce
// so the failure is not retried in a loop; the caller decides what the
// failure means for its phase.
func (s *Step) triggerFailed(sp *v1.SavepointInfo, cause string) (outcome, *v1.SavepointInfo) {
	in := s.in
	s.job().PendingSavepoint = nil
	if sp.Reason == v1.SavepointManual {
		s.job().LastSavepointNonce = in.Spec.Job.SavepointTriggerNonce
	}
	s.transition(Transition{Kind: SavepointFailed, Reason: sp.Reason})
	s.event(true, "SavepointFailed", "The %s %s %s failed: %s", sp.Reason, kindOf(*sp), sp.TriggerID, cause)
	return failed, nil
}

func kindOf(sp v1.SavepointInfo) string {
	if sp.Checkpoint {
		return "checkpoint"
	}
	return "savepoint"
}

func timedOut(start metav1.Time, limit time.Duration, now time.Time) bool {
	return !start.IsZero() && now.Sub(start.Time) > limit
}

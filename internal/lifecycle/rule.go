package lifecycle

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// Purpose is why a job is to be stopped, cancelled or replaced; it decides
// which state may carry the job across.
type Purpose string

const (
	// ForVersion: a new Flink version or image. Only a savepoint crosses
	// versions: Flink guarantees savepoint compatibility across versions,
	// not checkpoint compatibility.
	ForVersion Purpose = "version change"
	// ForRemoval: spec.job removed. The job stops with a savepoint while
	// it runs, which a returning spec.job restores from.
	ForRemoval Purpose = "job removal"
	// ForSuspend: spec.job.state suspended; as ForRemoval.
	ForSuspend Purpose = "suspension"
	// ForChange: a new spec on the same version (a job change, a rescale,
	// savepoint mode): a savepoint while the job runs, its newest retained
	// checkpoint when it cannot take one.
	ForChange Purpose = "change"
	// ForLastState: a last-state roll or a heal: the job restarts from its
	// latest checkpoint, which a cancel keeps.
	ForLastState Purpose = "last-state restart"
	// ForRestart: the job ended or was lost by itself; it starts again from
	// the newest state it left.
	ForRestart Purpose = "restart"
	// ForRollback: a failed upgrade returns to the state recorded before it
	// (Input.Status.Upgrade's rollback point), the one exception to "the
	// newest": the failed job's own state is what is being undone.
	ForRollback Purpose = "rollback"
	// ForStateless: upgradeMode stateless: the job restarts empty, by the
	// user's choice; only the stop must be confirmed.
	ForStateless Purpose = "stateless restart"
)

// Do is what the rule allows now.
type Do string

const (
	// Hold: the rule cannot be decided or met yet; nothing is stopped.
	// Verdict.Reason and Message say why (they become the StateHold
	// condition).
	Hold Do = "Hold"
	// Wait: the answer is moments away (Flink's REST caches); nothing is
	// stopped and no condition is set.
	Wait Do = "Wait"
	// Refuse: the rule cannot be met for this change; it is not carried out.
	Refuse Do = "Refuse"
	// TakeSavepoint: the job runs; stop it with a savepoint, then ask again.
	TakeSavepoint Do = "TakeSavepoint"
	// Cancel: the job's state survives a cancel (a retained checkpoint);
	// cancel it, then ask again once it has ended.
	Cancel Do = "Cancel"
	// Restore: the job has ended (or never ran); restore from Snapshot.
	Restore Do = "Restore"
)

// Verdict is the rule's answer.
type Verdict struct {
	Do      Do
	Reason  string
	Message string
	// After is how long a Wait lasts.
	After time.Duration
}

// Snapshot is the state a job restores from; an empty Path is none.
type Snapshot struct {
	Path      string
	Savepoint bool
	// ID is Flink's checkpoint ID (savepoints share the counter); 0 when
	// unknown.
	ID int64
}

// RestorePoint is the state rule, the one place it is written:
//
// Datapilot never stops, cancels or replaces a job unless the state it will
// restore from is confirmed to exist, is the newest the job can have, and
// will survive the stop; it restores only from a snapshot Flink reported
// complete and still retains; and a decision that needs Flink's answer
// waits for it instead of guessing.
//
// Every phase asks it before a stop, a cancel or a submission that replaces
// a job, with job as the phase has it. In order:
//
//   - No job was ever submitted: nothing to protect (the initial savepoint).
//   - Flink does not answer (nor for the job's checkpoint history): Hold. Whether the job runs, and what it last
//     saved, is Flink's to say (an upgrade decided blind would skip its
//     savepoint and restore a checkpoint a later cancel deletes).
//   - The job is starting (INITIALIZING, or CREATED: the adaptive
//     scheduler waiting for slots): Hold until it runs, since Flink shows
//     none of its checkpoints until then; a new initialSavepointPath in
//     the spec stops it (Cancel) and is restored where Flink shows nothing
//     newer.
//   - The job runs: a savepoint is taken first (TakeSavepoint) where the
//     purpose needs one and the job is RUNNING; a cancel is allowed only
//     where a completed checkpoint exists and the running configuration
//     keeps it on cancel (RETAIN_ON_CANCELLATION, CheckpointProperties);
//     otherwise Hold, or Refuse where waiting cannot help.
//   - The job ended: the restore point is read from Flink's checkpoint
//     history no sooner than Flink's REST caches after the operator first
//     saw the end (Wait until then): the job's stop-with-savepoint if it
//     stopped with one, else the newest of its retained latest checkpoint
//     and its completed savepoints, else the state it started from. An
//     empty history that contradicts a checkpoint recorded of the job (it
//     ended before it ran again) is refused. A version change refuses a
//     checkpoint.
//   - Flink forgot the job (a JobManager without HA restarted): the newest
//     state the operator recorded from Flink; Flink can no longer be asked
//     whether it retains it.
//   - A rollback restores its recorded point, once the failed job is gone.
func RestorePoint(in Input, job *v1.JobStatus, why Purpose) (Snapshot, Verdict) {
	switch {
	case job.ID == "":
		return Snapshot{Path: initialSavepoint(in), Savepoint: true}, Verdict{Do: Restore}
	case !in.Flink.Reachable:
		return Snapshot{}, Verdict{Do: Hold, Reason: "FlinkUnreachable", Message: fmt.Sprintf(
			"Flink's REST API does not answer; the %s of job %s waits for it, since whether the job runs and what state it last completed is Flink's to say", why, job.ID)}
	case in.Flink.JobFound && in.Flink.HistoryUnread:
		return Snapshot{}, Verdict{Do: Hold, Reason: "FlinkUnreachable", Message: fmt.Sprintf(
			"Flink did not answer for the checkpoint history of job %s; the %s waits for it, since the state to restore from is read there", job.ID, why)}
	case alive(in):
		return beforeStop(in, job, why)
	case why == ForRollback && !rescalingInPlace(in):
		return Snapshot{Path: rollbackPoint(in.Status.Upgrade)}, Verdict{Do: Restore}
	case why == ForStateless:
		return Snapshot{}, Verdict{Do: Restore}
	case !in.Flink.JobFound:
		return lost(in, job, why)
	}
	return afterStop(in, job, why)
}

// beforeStop answers for a job Flink runs.
func beforeStop(in Input, job *v1.JobStatus, why Purpose) (Snapshot, Verdict) {
	// running: Flink would take a savepoint of the job now. A RUNNING job
	// whose tasks are still starting (TasksStarting: deploying, restoring
	// state after a failover) would fail it, and a failed upgrade savepoint
	// ends the upgrade until the spec changes: a change that needs a
	// savepoint waits for them, as the upgrade mode asks (a cancel would
	// do where the checkpoint survives it, but the user chose savepoints;
	// tasks that never run fail the job after slot.request.timeout, and a
	// RESTARTING job takes the cancel path).
	tasksStarting := in.Flink.TasksStarting()
	running := in.Flink.JobState == flink.JobRunning && !tasksStarting
	switch {
	case why == ForStateless || why == ForRollback && !rescalingInPlace(in):
		return Snapshot{}, Verdict{Do: Cancel}
	case stopped(job):
		// Flink reported the job's stop-with-savepoint complete, which it
		// does only once the tasks finished: an answer that it still runs
		// is its cache of the job's details (web.refresh-interval).
		return Snapshot{}, stopNotSeen(in, job)
	case starting(in.Flink.JobState) && chosenRestore(in) != "":
		// The user named the state to restore from (afterStop takes it
		// where Flink shows nothing newer): the way out of a job that
		// never gets to run, such as one waiting for slots that never
		// come.
		return Snapshot{}, Verdict{Do: Cancel}
	case starting(in.Flink.JobState):
		// Flink shows none of the job's checkpoints until it runs (a
		// history read now is older, from its cache), so its newest state
		// cannot be read, and a job cancelled now ends with an empty
		// history while its checkpoints stay on storage.
		// INITIALIZING: its JobMaster is being built, and after a
		// failover with HA recovers the checkpoints completed before
		// (DefaultExecutionGraphFactory#createAndRestoreExecutionGraph);
		// Flink answers the sparse graph's empty statistics before 1.18,
		// a 500 from 1.18. CREATED: the AdaptiveScheduler waits for
		// resources or builds its graph (StateWithoutExecutionGraph's
		// sparse graph, CheckpointStatsSnapshot#empty), after every
		// restart and rescale too; the DefaultScheduler is CREATED only
		// for a moment, and shows what it restored. Wait for it to run
		// (a JobMaster that cannot be built fails the job).
		return Snapshot{}, Verdict{Do: Hold, Reason: "WaitingForRunning", Message: fmt.Sprintf(
			"The %s of job %s waits for it to run: it is %s, and until it runs Flink shows none of its checkpoints (%s), so its newest state cannot be read, and a cancel now would end it with no record of them. To stop it now, set spec.job.initialSavepointPath to the state to restore from (it started from %s)", why, job.ID, in.Flink.JobState, notRunningYet(in.Flink.JobState), orUnknown(job.RestoredFrom))}
	}
	switch why {
	case ForVersion:
		if running {
			return Snapshot{}, Verdict{Do: TakeSavepoint}
		}
		return Snapshot{}, Verdict{Do: Hold, Reason: "WaitingForRunning", Message: fmt.Sprintf(
			"The %s needs a savepoint of job %s, which Flink takes only of a RUNNING job whose tasks run (it is %s); waiting for it to run", why, job.ID, stateOf(in.Flink))}
	case ForChange, ForRemoval, ForSuspend:
		if running {
			return Snapshot{}, Verdict{Do: TakeSavepoint}
		}
		if tasksStarting {
			return Snapshot{}, Verdict{Do: Hold, Reason: "WaitingForRunning", Message: fmt.Sprintf(
				"The %s needs a savepoint of job %s, which Flink takes only while all its tasks run (it is %s); waiting for them", why, job.ID, stateOf(in.Flink))}
		}
	}
	// ForLastState, ForRestart, and a job that is not RUNNING: a cancel
	// keeps the newest state when its checkpoints survive, or when it has
	// none (it restarts from the snapshot it started from, as Flink would
	// restart it); a RUNNING job that cannot be cancelled safely is stopped
	// with a savepoint instead.
	switch {
	case survivesCancel(in, job):
		return Snapshot{}, Verdict{Do: Cancel}
	case running:
		return Snapshot{}, Verdict{Do: TakeSavepoint}
	case ownLatest(in, job) == nil:
		return Snapshot{}, Verdict{Do: Cancel}
	}
	return Snapshot{}, Verdict{Do: Hold, Reason: "NoStateSurvivesCancel", Message: fmt.Sprintf(
		"Job %s is %s, so it cannot take a savepoint, and a cancel would delete its checkpoints (%s is %s, not RETAIN_ON_CANCELLATION); waiting for it to run", job.ID, stateOf(in.Flink), flink.LastStateRetentionKey, orUnknown(in.Retention))}
}

// notRunningYet says why a starting job shows no checkpoints.
func notRunningYet(s flink.JobStatus) string {
	if s == flink.JobInitializing {
		return "its JobManager is building it; after a JobManager failover it recovers those completed before"
	}
	return "the adaptive scheduler waits for slots or builds its execution graph, as after every restart and rescale"
}

// stateOf is the job's state as a hold names it.
func stateOf(f Flink) string {
	if f.TasksStarting() {
		return "RUNNING, some of its tasks still deploying or restoring their state"
	}
	return string(f.JobState)
}

// stopped: the job's own stop-with-savepoint completed.
func stopped(job *v1.JobStatus) bool {
	sp := job.LastSavepoint
	return sp != nil && sp.Stop && sp.JobID == job.ID && sp.Path != "" && sp.CompletedAt != nil
}

// stopNotSeen waits out Flink's cache of a job whose stop completed, then
// holds: a job RUNNING past it is not the one Flink said it stopped.
func stopNotSeen(in Input, job *v1.JobStatus) Verdict {
	if wait := job.LastSavepoint.CompletedAt.Add(restCacheWindow(in.Deployed) + time.Second).Sub(in.Now); wait > 0 {
		return Verdict{Do: Wait, After: wait}
	}
	return Verdict{Do: Hold, Reason: "StopNotObserved", Message: fmt.Sprintf(
		"Flink reported the stop-with-savepoint of job %s complete at %s, yet still reports the job %s; waiting for Flink to report it ended", job.ID, job.LastSavepoint.Path, in.Flink.JobState)}
}

// survivesCancel: the job has a completed checkpoint and the configuration
// the pods run keeps it when the job is cancelled. (Under rendering drift
// the pods may run an older rendering; every drift starts an upgrade that
// takes a savepoint of a RUNNING job first.)
func survivesCancel(in Input, job *v1.JobStatus) bool {
	cp := ownLatest(in, job)
	return in.Retention == "RETAIN_ON_CANCELLATION" && cp != nil && cp.Path != ""
}

// ownLatest is the job's newest checkpoint of its own that a cancel's
// retention decides on: its latest completed one, else the one its
// current run recovered after a failover (Flink.Restored, when the
// operator did not give it).
func ownLatest(in Input, job *v1.JobStatus) *Checkpoint {
	if cp := in.Flink.LatestCheckpoint; cp != nil {
		return cp
	}
	if r := in.Flink.Restored; r != nil && !in.Flink.RestoredSavepoint && r.Path != job.RestoredFrom {
		return r
	}
	return nil
}

// afterStop answers for a job Flink reports ended.
func afterStop(in Input, job *v1.JobStatus, why Purpose) (Snapshot, Verdict) {
	// A stop-with-savepoint is the job's last state: it ended FINISHED
	// right after it, and its path is the operation's result, not a
	// cached read.
	if sp := job.LastSavepoint; sp != nil && sp.Stop && sp.JobID == job.ID && sp.Path != "" && in.Flink.JobState == flink.JobFinished {
		return Snapshot{Path: sp.Path, Savepoint: true, ID: sp.CheckpointID}, Verdict{Do: Restore}
	}
	if in.Flink.HistoryGone {
		// Nothing in Flink says which checkpoint is the newest any more,
		// nor whether there is one: the retention kept what it keeps in
		// the checkpoint storage, which only the user can read.
		return namedOrUnknown(in, fmt.Sprintf(
			"Flink shows job %s %s only by its result, without its checkpoint history (a JobManager took over while the job was being cleaned up), so what it last completed is known only to the checkpoint storage (the highest chk-N under the job's ID; %d checkpoints as last seen), else the job started from %s. Set spec.job.initialSavepointPath to the state to restore from",
			job.ID, in.Flink.JobState, job.CheckpointsCompleted, orUnknown(job.RestoredFrom)))
	}
	if wait := settleLeft(in, job); wait > 0 {
		return Snapshot{}, Verdict{Do: Wait, After: wait}
	}
	if sparseEnd(in, job) {
		// Before the savepoints the operator recorded: checkpoints may
		// have completed after them.
		return namedOrUnknown(in, fmt.Sprintf(
			"Flink shows job %s %s with no checkpoint history, though it completed checkpoint %d (%s) as last seen: it ended before it ran again (its adaptive scheduler waiting for resources, or its JobMaster failing to start after a failover), where Flink shows none of its checkpoints, so the newest is known only to the checkpoint storage (the highest chk-N under the job's ID), and the one last recorded may have been subsumed since. Set spec.job.initialSavepointPath to the state to restore from",
			job.ID, in.Flink.JobState, job.LastCheckpoint.ID, job.LastCheckpoint.Path))
	}
	best := newestRetained(in, job)
	switch {
	case best.Path != "":
	case in.Flink.CheckpointsCompleted > 0:
		return Snapshot{}, Verdict{Do: Refuse, Reason: "NoRetainedState", Message: fmt.Sprintf(
			"Job %s completed %d checkpoints, yet Flink retains none now that it is %s (%s is %s); restoring it without them would lose its state. Set spec.job.initialSavepointPath to the state to start from, or change the spec",
			job.ID, in.Flink.CheckpointsCompleted, in.Flink.JobState, flink.LastStateRetentionKey, orUnknown(in.Retention))}
	case chosenRestore(in) != "":
		// No checkpoint since it started, and the user named the state
		// for this change (as to stop a job that never ran, see
		// beforeStop).
		best = Snapshot{Path: in.Spec.Job.InitialSavepointPath, Savepoint: true}
	default:
		// No checkpoint since it started: Flink restarts such a job from
		// the snapshot it was restored from, and so does the operator.
		best = Snapshot{Path: job.RestoredFrom, Savepoint: isSavepointPath(job, job.RestoredFrom)}
	}
	return portable(best, job, why)
}

// sparseEnd: Flink shows the ended job with no checkpoint, none restored,
// yet the operator saw it complete one. Its graph is the sparse one of an
// AdaptiveScheduler state without an ExecutionGraph (WaitingForResources,
// CreatingExecutionGraph: StateWithoutExecutionGraph#cancel and a failed
// graph creation end the job with it), or of a JobMaster that failed to
// start after a failover (JobInitializationException), which shows
// nothing of what the job left on storage; a graph the job ran in keeps
// its history across restarts (one CheckpointStatsTracker per scheduler),
// and a new leader's shows what it recovered (latest.restored). Reached
// where the rule cancelled on a cached answer of the job running, or the
// job failed there by itself (the resource wait timeout).
func sparseEnd(in Input, job *v1.JobStatus) bool {
	f, cp := in.Flink, job.LastCheckpoint
	return cp != nil && cp.JobID == job.ID && f.Restored == nil && f.LatestCheckpoint == nil && f.CheckpointsCompleted == 0 && len(f.Savepoints) == 0
}

// newestRetained is the newest of the ended job's retained latest
// checkpoint and its completed savepoints, by Flink's shared counter.
func newestRetained(in Input, job *v1.JobStatus) Snapshot {
	var best Snapshot
	consider := func(c Snapshot) {
		if c.Path != "" && (best.Path == "" || c.ID > best.ID || c.ID == best.ID && c.Savepoint) {
			best = c
		}
	}
	if cp := in.Flink.LatestCheckpoint; cp != nil && retainedAfter(in.Retention, in.Flink.JobState) {
		consider(Snapshot{Path: cp.Path, ID: cp.ID})
	}
	for _, sp := range in.Flink.Savepoints {
		consider(Snapshot{Path: sp.Path, Savepoint: true, ID: sp.ID})
	}
	if sp := job.LastSavepoint; sp != nil && sp.JobID == job.ID && sp.CheckpointID > 0 {
		consider(Snapshot{Path: sp.Path, Savepoint: true, ID: sp.CheckpointID})
	}
	if r := in.Flink.Restored; r != nil && r.Path != job.RestoredFrom && (in.Flink.RestoredSavepoint || retainedAfter(in.Retention, in.Flink.JobState)) {
		// The current run restored a snapshot the operator did not give
		// it: a failover's recovery of the job's own latest checkpoint
		// (fault schedule 18: cancelled before its first new checkpoint,
		// the job was submitted without state). The job owns it, so the
		// retention decides whether it outlived the end; a snapshot the
		// operator gave is not the job's (NO_CLAIM) and is the fallback
		// below.
		consider(Snapshot{Path: r.Path, Savepoint: in.Flink.RestoredSavepoint, ID: r.ID})
	}
	return best
}

// retainedAfter: the checkpoints of a job that ended in state survive the
// end under the retention policy (CheckpointProperties).
func retainedAfter(retention string, state flink.JobStatus) bool {
	switch retention {
	case "RETAIN_ON_CANCELLATION":
		return true
	case "DELETE_ON_CANCELLATION":
		return state == flink.JobFailed
	}
	return false
}

// lost answers for a job Flink no longer knows.
func lost(in Input, job *v1.JobStatus, why Purpose) (Snapshot, Verdict) {
	if neverGot(in, job) {
		return Snapshot{Path: job.RestoredFrom, Savepoint: isSavepointPath(job, job.RestoredFrom)}, Verdict{Do: Restore}
	}
	var spec *v1.JobSpec
	if spec = in.Spec.Job; spec == nil {
		spec = &v1.JobSpec{}
	}
	if stopped(job) {
		// Its own stop-with-savepoint ended it: nothing came after.
		return portable(Snapshot{Path: job.LastSavepoint.Path, Savepoint: true}, job, why)
	}
	if job.CheckpointsCompleted > 0 || checkpointsDir(job) != "" || ran(job) || neverReached(job) {
		// Flink may have completed checkpoints of this job and forgot it
		// (its JobManager went without HA): nothing in Flink says which is
		// the newest any more, and the one the operator last recorded may
		// have been subsumed since (CheckpointCoordinator deletes what
		// state.checkpoints.num-retained no longer keeps): restoring it
		// would rewind the job, or fail it on a deleted checkpoint. A job
		// seen running with none recorded is no different: the first
		// checkpoint may come at once (CheckpointCoordinator's first
		// trigger waits a random delay from the minimum pause, 0 by
		// default), and the operator reads the history only every poll,
		// through Flink's cache of it (fault schedule 70: two checkpoints
		// completed unseen in the 3 s before the loss, and the job was
		// restored from the older savepoint it had started from). So is a
		// job never seen whose JobManager became ready only after the
		// submission (neverGot). The user names the state, by changing
		// spec.job.initialSavepointPath.
		if p := chosenRestore(in); p != "" {
			return Snapshot{Path: p, Savepoint: true}, Verdict{Do: Restore}
		}
		if in.EndedUnseen {
			return Snapshot{}, Verdict{Do: Refuse, Reason: "NewestStateUnknown", Message: fmt.Sprintf(
				"Flink refused to run job %s again: it ran and ended while the operator was not looking (its job result store records it), and Flink no longer shows it, so what it last completed is known only to the checkpoint storage (the highest chk-N under the job's ID), else the job started from %s. Set spec.job.initialSavepointPath to the state to restore from",
				job.ID, orUnknown(job.RestoredFrom))}
		}
		if neverReached(job) && !in.Deployed.HighAvailable() && in.JobManagerSince.IsZero() {
			// Which JobManager answered is not known yet: its pod read
			// failed, or no pod is Ready while one answers (a restarted
			// process before the kubelet posts it). Refusing now would
			// refuse a job Flink may simply never have got; the next
			// look reads the pod again.
			return Snapshot{}, Verdict{Do: Hold, Reason: "JobManagerUnconfirmed", Message: fmt.Sprintf(
				"Flink does not know job %s, submitted at %s and never seen since; whether it ever got it depends on when its JobManager, without high availability, became ready, and no ready JobManager pod could be read: the decision waits for it",
				job.ID, job.SubmittedAt.UTC().Format(time.RFC3339))}
		}
		if neverReached(job) {
			return Snapshot{}, Verdict{Do: Refuse, Reason: "NewestStateUnknown", Message: fmt.Sprintf(
				"Flink does not know job %s, submitted at %s and never seen since: its JobManager, without high availability, has been ready only since %s, so it may have run the job, completed checkpoints and lost them. The newest state is known only to the checkpoint storage (the highest chk-N under the job's ID), else the job started from %s. Set spec.job.initialSavepointPath to the state to restore from; enable highAvailability so Flink recovers its jobs itself",
				job.ID, job.SubmittedAt.UTC().Format(time.RFC3339), in.JobManagerSince.UTC().Format(time.RFC3339), orUnknown(job.RestoredFrom))}
		}
		return Snapshot{}, Verdict{Do: Refuse, Reason: "NewestStateUnknown", Message: fmt.Sprintf(
			"Flink no longer knows job %s (a JobManager without high availability forgets its jobs), which ran and completed %d checkpoints as last seen, perhaps more since; the newest is known only to the checkpoint storage (the highest chk-N in %s), and the one last recorded, %s, may be older or deleted since. Set spec.job.initialSavepointPath to the state to restore from; enable highAvailability so Flink recovers its jobs itself",
			job.ID, job.CheckpointsCompleted, orUnknown(checkpointsDir(job)), orUnknown(newestState(job, &v1.JobSpec{})))}
	}
	path := newestState(job, &v1.JobSpec{})
	if path == "" && job.CheckpointsCompleted == 0 {
		path = spec.InitialSavepointPath
	}
	return portable(Snapshot{Path: path, Savepoint: isSavepointPath(job, path)}, job, why)
}

// namedOrUnknown answers where Flink cannot say what the job last saved:
// the state the user named for this change, else a refusal that asks for
// it (why says what Flink shows).
func namedOrUnknown(in Input, why string) (Snapshot, Verdict) {
	if p := chosenRestore(in); p != "" {
		return Snapshot{Path: p, Savepoint: true}, Verdict{Do: Restore}
	}
	return Snapshot{}, Verdict{Do: Refuse, Reason: "NewestStateUnknown", Message: why}
}

// chosenRestore is the restore point the user named for this change: a
// spec.job.initialSavepointPath changed from the deployed job's.
func chosenRestore(in Input) string {
	if in.Spec.Job == nil || in.Spec.Job.InitialSavepointPath == "" {
		return ""
	}
	if in.Deployed == nil || in.Deployed.Job == nil || in.Deployed.Job.InitialSavepointPath == in.Spec.Job.InitialSavepointPath {
		return ""
	}
	return in.Spec.Job.InitialSavepointPath
}

// ran: Flink was seen to have the job, in any state, so its tasks may have
// run and checkpointed since, unseen: a job last seen INITIALIZING can run
// and complete a checkpoint within one poll (fault schedule 127: lost 2.7 s
// after its start, two checkpoints completed, none seen).
func ran(job *v1.JobStatus) bool {
	return job.State != ""
}

// checkpointsDir is the directory of the job's recorded checkpoints, where
// Flink writes chk-N for each one it completes.
func checkpointsDir(job *v1.JobStatus) string {
	if cp := job.LastCheckpoint; cp != nil && cp.JobID == job.ID {
		if i := strings.LastIndex(cp.Path, "/"); i > 0 {
			return cp.Path[:i]
		}
	}
	return ""
}

// portable refuses a checkpoint where only a savepoint may restore.
func portable(s Snapshot, job *v1.JobStatus, why Purpose) (Snapshot, Verdict) {
	if why == ForVersion && s.Path != "" && !s.Savepoint {
		return Snapshot{}, Verdict{Do: Refuse, Reason: "StateNotPortable", Message: fmt.Sprintf(
			"The newest state of job %s is the checkpoint %s, and a %s restores only from a savepoint (checkpoints do not cross Flink versions); run the job on its current spec so it can take one, or set upgradeMode: stateless to start without state", job.ID, s.Path, why)}
	}
	return s, Verdict{Do: Restore}
}

// isSavepointPath: path is one of the job's recorded savepoints or the
// spec's initial one.
func isSavepointPath(job *v1.JobStatus, path string) bool {
	if path == "" {
		return false
	}
	if sp := job.LastSavepoint; sp != nil && sp.Path == path {
		return true
	}
	for _, h := range job.SavepointHistory {
		if h.Path == path {
			return true
		}
	}
	return false
}

func initialSavepoint(in Input) string {
	if in.Spec.Job == nil {
		return ""
	}
	return in.Spec.Job.InitialSavepointPath
}

// rescalingInPlace: the upgrade in flight rescales the job in place. Its job keeps
// its ID, code and checkpoints, so a rollback of it restores the newest
// state the job leaves, like any stop of the same job: the checkpoint
// recorded at its start is subsumed as the job runs on (deleted past
// state.checkpoints.num-retained).
func rescalingInPlace(in Input) bool {
	up := in.Status.Upgrade
	return up != nil && Change(up.Kind) == ChangeRescaleInPlace
}

// rollbackPoint is the state a rollback returns to.
func rollbackPoint(up *v1.UpgradeStatus) string {
	if up == nil {
		return ""
	}
	if up.RollbackPath != "" {
		return up.RollbackPath
	}
	return up.RestorePath
}

// settleLeft is how long the operator still waits before it trusts Flink's
// checkpoint history of an ended job. DefaultExecutionGraphCache serves a
// job's details for web.refresh-interval, and from 1.18 the checkpoint
// statistics are cached for rest.cache.checkpoint-statistics.timeout:
// right after a job ends, its history can lack the last checkpoint. A
// read made that long after the operator first saw the end (EndedAt,
// recorded to the second, hence the extra second) is computed after it.
func settleLeft(in Input, job *v1.JobStatus) time.Duration {
	if job.EndedAt == nil {
		return Poll
	}
	return job.EndedAt.Add(restCacheWindow(in.Deployed) + time.Second).Sub(in.Now)
}

// restCacheWindow is the longest Flink caches a REST answer the rule reads,
// by the configuration the pods run.
func restCacheWindow(spec *v1.FlinkClusterSpec) time.Duration {
	const def = 3 * time.Second
	if spec == nil {
		return def
	}
	cfg := spec.FlinkConfiguration
	refresh := def
	for _, k := range []string{"jobmanager.web.refresh-interval", "web.refresh-interval"} {
		if v, ok := cfg[k]; ok {
			refresh = flinkDuration(string(v))
		}
	}
	stats := refresh // RestOptions: it falls back to web.refresh-interval
	if v, ok := cfg["rest.cache.checkpoint-statistics.timeout"]; ok {
		stats = flinkDuration(string(v))
	}
	return max(refresh, stats)
}

// flinkDuration reads a duration as Flink does: a bare number is
// milliseconds (web.refresh-interval is a Long before 1.20), else a number
// and a unit (TimeUtils#parseDuration). A value that does not parse waits
// a minute: too long is safe, too short is not.
func flinkDuration(v string) time.Duration {
	v = strings.TrimSpace(v)
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(ms) * time.Millisecond
	}
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != ' ' })
	if i <= 0 {
		return time.Minute
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[:i]), 10, 64)
	if err != nil {
		return time.Minute
	}
	units := map[string]time.Duration{
		"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
		"us": time.Microsecond, "µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond, "microsecond": time.Microsecond, "microseconds": time.Microsecond,
		"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
		"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
		"min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
		"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	unit, ok := units[strings.ToLower(strings.TrimSpace(v[i:]))]
	if !ok {
		return time.Minute
	}
	return time.Duration(n) * unit
}

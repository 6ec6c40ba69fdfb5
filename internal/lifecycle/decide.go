package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// Flink is what the controller read from the Flink REST API this reconcile.
type Flink struct {
	// Reachable: the REST API answered.
	Reachable bool
	// JobFound: Flink knows status.job.id.
	JobFound bool
	// JobState is the state of status.job.id.
	JobState flink.JobStatus
	// CheckpointsCompleted is the job's completed-checkpoint count.
	CheckpointsCompleted int64
	// LatestCheckpointPath is the job's latest completed checkpoint.
	LatestCheckpointPath string
	// Pending is the state of status.job.pendingSavepoint in Flink.
	Pending *Operation
}

// Operation is a savepoint or checkpoint trigger as Flink reports it.
type Operation struct {
	// Unknown: Flink has no such trigger (never sent, or the JobManager
	// restarted); the controller sends it (again, idempotently).
	Unknown bool
	Done    bool
	// Path of the completed savepoint or checkpoint.
	Path string
	// Failure, when Done without a path.
	Failure string
}

// Input is everything a decision depends on.
type Input struct {
	Generation int64
	UID        string
	Spec       *v1.FlinkClusterSpec
	Status     *v1.FlinkClusterStatus
	// Deployed and LastStable are decoded from the status.
	Deployed   *v1.FlinkClusterSpec
	LastStable *v1.FlinkClusterSpec
	// RolledOut: the children match Deployed, every pod is ready and the
	// REST API answers.
	RolledOut bool
	Flink     Flink
	Now       time.Time
}

// ActionKind is a side effect for the controller to perform.
type ActionKind string

const (
	ActNone ActionKind = ""
	// ActTrigger sends status.job.pendingSavepoint's trigger (idempotent:
	// Flink joins a repeated trigger ID).
	ActTrigger ActionKind = "Trigger"
	// ActSubmit uploads the jar and runs it with status.job.id as job ID.
	ActSubmit ActionKind = "Submit"
	// ActCancel cancels status.job.id.
	ActCancel ActionKind = "Cancel"
)

// Event is an event to record.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Plan is the decision. The controller writes Status before performing
// Action or applying Deploy, so a restart between the two resumes the same
// plan instead of starting another.
type Plan struct {
	Deploy *v1.FlinkClusterSpec
	Status v1.FlinkClusterStatus
	Action ActionKind
	// RestorePath is the savepoint or checkpoint ActSubmit restores from.
	RestorePath string
	Events      []Event
	// RequeueAfter asks to look again; zero means wait for events.
	RequeueAfter time.Duration
	// MarkStable asks the controller to record Deploy as the last stable spec.
	MarkStable bool
}

// Poll is how often an operation in flight is looked at.
const Poll = 2 * time.Second

// maxResubmitBackoff bounds the wait between submissions of a job that does
// not reach Flink.
const maxResubmitBackoff = 5 * time.Minute

// Decide makes one step of the lifecycle of a cluster with spec.job.
func Decide(in Input) Plan {
	p := Plan{Status: *in.Status.DeepCopy(), Deploy: in.Deployed}
	if p.Status.Job == nil {
		p.Status.Job = &v1.JobStatus{}
	}
	d := &decider{in: in, p: &p}
	switch {
	case in.Deployed == nil:
		// First deployment: nothing to protect yet.
		p.Deploy = in.Spec
		d.setUpgrading(metav1.ConditionFalse, "NoUpgrade", "No upgrade in flight")
	case p.Status.Upgrade != nil:
		d.continueUpgrade()
	default:
		d.steady()
	}
	return p
}

type decider struct {
	in Input
	p  *Plan
}

func (d *decider) job() *v1.JobStatus { return d.p.Status.Job }

func (d *decider) event(warning bool, reason, format string, args ...any) {
	d.p.Events = append(d.p.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (d *decider) requeue(after time.Duration) {
	if d.p.RequeueAfter == 0 || after < d.p.RequeueAfter {
		d.p.RequeueAfter = after
	}
}

func (d *decider) now() metav1.Time { return metav1.NewTime(d.in.Now.Truncate(time.Second)) }

// steady handles a cluster with no upgrade in flight.
func (d *decider) steady() {
	in := d.in
	change := Classify(in.Deployed, in.Spec)
	blocked := in.Status.LastFailedGeneration == in.Generation
	switch {
	case change == ChangeNone:
	case change == ChangeScale:
		// Scaling changes the replica count only; Flink reschedules from
		// its latest checkpoint by itself.
		d.p.Deploy = in.Spec
	case blocked:
		// This generation failed its gate and was rolled back: retrying it
		// would fail the same way. A new spec clears it.
	default:
		d.startUpgrade(change)
		return
	}
	if pending := d.job().PendingSavepoint; pending != nil {
		d.followSavepoint(pending)
		return
	}
	d.runJob()
}

// runJob keeps the job in its desired state and serves savepoint requests.
func (d *decider) runJob() {
	in, job, spec := d.in, d.job(), d.in.Spec.Job
	if !in.RolledOut || !in.Flink.Reachable {
		return
	}
	wantRunning := spec.State != v1.JobStateSuspended
	alive := in.Flink.JobFound && !in.Flink.JobState.Terminal()
	if in.Flink.JobFound {
		job.State = string(in.Flink.JobState)
		job.CheckpointsCompleted = in.Flink.CheckpointsCompleted
	}
	switch {
	case wantRunning && !alive:
		if in.Flink.JobFound && in.Flink.JobState == flink.JobFailed {
			// A failed job stays failed until the user changes something:
			// resubmitting in a loop would hide the failure.
			return
		}
		if !in.Flink.JobFound && job.ID != "" && job.SubmittedAt != nil && job.RestoredFrom == restorePathFor(job, spec) {
			// The recorded job never reached Flink (a failed jar download,
			// a restart) or Flink lost it: submit it again under the same
			// ID and from the same state, without a status write, backing
			// off as the failure lasts.
			d.p.Action = ActSubmit
			d.p.RestorePath = restorePathFor(job, spec)
			d.requeue(min(max(in.Now.Sub(job.SubmittedAt.Time), Poll), maxResubmitBackoff))
			return
		}
		d.submit(restorePathFor(job, spec), "Submitted")
	case !wantRunning && alive:
		d.trigger(v1.SavepointForSuspend, true, false)
	case !wantRunning:
		job.State = "SUSPENDED"
	case spec.SavepointTriggerNonce != job.LastSavepointNonce:
		d.trigger(v1.SavepointManual, false, false)
	case spec.SavepointInterval != "" && in.Flink.JobState == flink.JobRunning:
		interval, err := time.ParseDuration(spec.SavepointInterval)
		if err != nil {
			return
		}
		since := job.SubmittedAt
		if job.LastSavepoint != nil && job.LastSavepoint.CompletedAt != nil && (since == nil || job.LastSavepoint.CompletedAt.After(since.Time)) {
			since = job.LastSavepoint.CompletedAt
		}
		if since == nil {
			return
		}
		if wait := since.Add(interval).Sub(in.Now); wait > 0 {
			d.requeue(wait)
			return
		}
		d.trigger(v1.SavepointPeriodic, false, false)
	}
	d.markStable()
}

// markStable records the deployed spec as stable once the job proved itself
// outside an upgrade (its first run, say).
func (d *decider) markStable() {
	in, job := d.in, d.job()
	if in.Flink.JobState != flink.JobRunning || job.ID == "" {
		return
	}
	if job.CheckpointsCompleted < int64(stableCheckpoints(in.Spec)) {
		d.requeue(Poll * 2)
		return
	}
	if in.Status.LastFailedGeneration == in.Generation {
		return
	}
	d.p.MarkStable = true
}

func restorePathFor(job *v1.JobStatus, spec *v1.JobSpec) string {
	if job.LastSavepoint != nil && job.LastSavepoint.Path != "" {
		return job.LastSavepoint.Path
	}
	return spec.InitialSavepointPath
}

// submit picks the job ID before submitting, so a repeated submission after
// a restart is refused by Flink as a duplicate instead of running twice.
func (d *decider) submit(restorePath, reason string) {
	job := d.job()
	job.ID = jobID(d.in.UID, d.in.Generation, job.ID, d.in.Now)
	job.State = ""
	job.RestoredFrom = restorePath
	now := d.now()
	job.SubmittedAt = &now
	job.CheckpointsCompleted = 0
	d.p.Action = ActSubmit
	d.p.RestorePath = restorePath
	if restorePath != "" {
		d.event(false, reason, "Submitting job %s restored from %s", job.ID, restorePath)
	} else {
		d.event(false, reason, "Submitting job %s without state", job.ID)
	}
	d.requeue(Poll)
}

// trigger records a savepoint (or checkpoint) request before it is sent.
func (d *decider) trigger(reason v1.SavepointReason, stop, checkpoint bool) {
	job := d.job()
	job.PendingSavepoint = &v1.SavepointInfo{
		TriggerID:   triggerID(d.in.UID, job.ID, string(reason), d.in.Now),
		JobID:       job.ID,
		Reason:      reason,
		Stop:        stop,
		Checkpoint:  checkpoint,
		TriggeredAt: d.now(),
	}
	d.p.Action = ActTrigger
	what := "savepoint"
	switch {
	case checkpoint:
		what = "checkpoint"
	case stop:
		what = "stop-with-savepoint"
	}
	d.event(false, "SavepointTriggered", "Triggered %s %s of job %s (%s)", what, job.PendingSavepoint.TriggerID, job.ID, reason)
	d.requeue(Poll)
}

// followSavepoint waits for the pending trigger. It returns the completed
// savepoint, or nil while in flight or after a failure.
func (d *decider) followSavepoint(sp *v1.SavepointInfo) *v1.SavepointInfo {
	in, job := d.in, d.job()
	op := in.Flink.Pending
	switch {
	case !in.Flink.Reachable:
		d.requeue(Poll)
		return nil
	case (op == nil || op.Unknown) && !in.Flink.JobFound:
		job.PendingSavepoint = nil
		d.event(true, "SavepointFailed", "The %s savepoint %s cannot complete: job %s no longer exists", sp.Reason, sp.TriggerID, sp.JobID)
		d.savepointFailed(sp, "the job no longer exists")
		return nil
	case op == nil || op.Unknown:
		// Not known to Flink: (re)send with the recorded trigger ID.
		d.p.Action = ActTrigger
		d.requeue(Poll)
		return nil
	case !op.Done:
		if timedOut(sp.TriggeredAt, savepointTimeout(in.Spec), in.Now) {
			job.PendingSavepoint = nil
			d.event(true, "SavepointFailed", "The %s savepoint %s did not complete within %s", sp.Reason, sp.TriggerID, savepointTimeout(in.Spec))
			d.savepointFailed(sp, "timed out")
			return nil
		}
		d.requeue(Poll)
		return nil
	case op.Path == "":
		job.PendingSavepoint = nil
		d.event(true, "SavepointFailed", "The %s savepoint %s failed: %s", sp.Reason, sp.TriggerID, op.Failure)
		d.savepointFailed(sp, op.Failure)
		return nil
	}
	done := *sp
	done.Path = op.Path
	now := d.now()
	done.CompletedAt = &now
	job.PendingSavepoint = nil
	if !done.Checkpoint {
		job.LastSavepoint = &done
		job.SavepointHistory = append([]v1.SavepointInfo{done}, job.SavepointHistory...)
		if keep := retention(in.Spec); len(job.SavepointHistory) > keep {
			job.SavepointHistory = job.SavepointHistory[:keep]
		}
	}
	if done.Reason == v1.SavepointManual {
		job.LastSavepointNonce = in.Spec.Job.SavepointTriggerNonce
	}
	if done.Stop {
		job.State = string(flink.JobFinished)
	}
	d.event(false, "SavepointCompleted", "The %s %s completed at %s", done.Reason, kindOf(done), done.Path)
	// The next step (suspended, deploy, ...) follows from the new status,
	// which is our own write and wakes nothing by itself.
	d.requeue(Poll)
	return &done
}

func kindOf(sp v1.SavepointInfo) string {
	if sp.Checkpoint {
		return "checkpoint"
	}
	return "savepoint"
}

// savepointFailed handles a failed savepoint. For an upgrade, it abandons
// the upgrade before anything was touched; for a manual one, it consumes
// the nonce so the failure is not retried in a loop.
func (d *decider) savepointFailed(sp *v1.SavepointInfo, cause string) {
	in := d.in
	if sp.Reason == v1.SavepointManual {
		d.job().LastSavepointNonce = in.Spec.Job.SavepointTriggerNonce
	}
	if up := d.p.Status.Upgrade; up != nil && up.Phase == v1.UpgradeSavingState {
		d.p.Status.Upgrade = nil
		d.p.Status.LastFailedGeneration = up.TargetGeneration
		d.setUpgrading(metav1.ConditionFalse, "SavepointFailed",
			fmt.Sprintf("The upgrade to generation %d did not start: the savepoint failed (%s); the running cluster is untouched. Change the spec to retry", up.TargetGeneration, cause))
	}
}

// startUpgrade begins a state-safe change.
func (d *decider) startUpgrade(change Change) {
	in, job := d.in, d.job()
	now := d.now()
	d.p.Status.Upgrade = &v1.UpgradeStatus{
		Phase: v1.UpgradeSavingState, Kind: string(change), TargetGeneration: in.Generation,
		StartedAt: now, PhaseStartedAt: now,
	}
	if c := findCondition(d.p.Status.Conditions, v1.ConditionRolledBack); c != nil && c.Status == metav1.ConditionTrue {
		d.setCondition(v1.ConditionRolledBack, metav1.ConditionFalse, "NewSpec", fmt.Sprintf("Generation %d is being rolled out", in.Generation))
	}
	savepoint, checkpoint := needsState(change, in.Spec.Job.UpgradeMode, in.Deployed.Version)
	running := in.Flink.Reachable && in.Flink.JobFound && in.Flink.JobState == flink.JobRunning
	d.event(false, "UpgradeStarted", "Started %s to generation %d", change, in.Generation)
	switch {
	case (savepoint || checkpoint) && running:
		d.setUpgrading(metav1.ConditionTrue, string(v1.UpgradeSavingState), "Making state safe before the change")
		if job.PendingSavepoint != nil {
			// A periodic or manual savepoint is in flight; the upgrade's own
			// trigger waits for it rather than racing it.
			d.requeue(Poll)
			return
		}
		reason := v1.SavepointForUpgrade
		if checkpoint {
			reason = v1.CheckpointForUpgrade
		}
		d.trigger(reason, savepoint, checkpoint)
	default:
		// Nothing running to save: restore from the newest state we hold.
		d.p.Status.Upgrade.RestorePath = restorePathFor(job, in.Spec.Job)
		if !savepoint && !checkpoint {
			d.p.Status.Upgrade.RestorePath = ""
		}
		d.toPhase(v1.UpgradeDeploying)
		d.deployTarget()
	}
}

func (d *decider) toPhase(phase v1.UpgradePhase) {
	d.p.Status.Upgrade.Phase = phase
	d.p.Status.Upgrade.PhaseStartedAt = d.now()
	if phase == v1.UpgradeRollingBack {
		return
	}
	d.setUpgrading(metav1.ConditionTrue, string(phase), phaseMessage(phase))
}

func phaseMessage(p v1.UpgradePhase) string {
	switch p {
	case v1.UpgradeDeploying:
		return "Rolling the pods to the new spec"
	case v1.UpgradeVerifying:
		return "Waiting for the job to run and complete checkpoints"
	}
	return string(p)
}

// deployTarget switches the children to the spec being rolled out and
// stops the old job first when it still runs.
func (d *decider) deployTarget() {
	in := d.in
	if in.Flink.Reachable && in.Flink.JobFound && !in.Flink.JobState.Terminal() {
		d.p.Action = ActCancel
		d.requeue(Poll)
	}
	d.p.Deploy = in.Spec
	d.requeue(Poll)
}

// continueUpgrade moves an upgrade in flight one step.
func (d *decider) continueUpgrade() {
	in, up, job := d.in, d.p.Status.Upgrade, d.job()
	if up.TargetGeneration != in.Generation {
		d.supersede()
		return
	}
	switch up.Phase {
	case v1.UpgradeSavingState:
		sp := job.PendingSavepoint
		if sp == nil {
			// The upgrade waited for another savepoint; take its own now.
			savepoint, checkpoint := needsState(Change(up.Kind), in.Spec.Job.UpgradeMode, in.Deployed.Version)
			reason := v1.SavepointForUpgrade
			if checkpoint {
				reason = v1.CheckpointForUpgrade
			}
			d.trigger(reason, savepoint, checkpoint)
			return
		}
		done := d.followSavepoint(sp)
		if done == nil {
			return
		}
		if done.Reason != v1.SavepointForUpgrade && done.Reason != v1.CheckpointForUpgrade {
			d.requeue(Poll)
			return
		}
		up.RestorePath = done.Path
		d.toPhase(v1.UpgradeDeploying)
		d.deployTarget()
	case v1.UpgradeDeploying:
		d.p.Deploy = in.Spec
		if in.Flink.Reachable && in.Flink.JobFound && !in.Flink.JobState.Terminal() {
			// The old job must be gone before the new one takes its slots.
			d.p.Action = ActCancel
			d.requeue(Poll)
			return
		}
		if !in.RolledOut || !specEqual(in.Deployed, in.Spec) {
			d.requeue(Poll)
			return
		}
		// The job is submitted and verified in one phase: its ID is
		// recorded with the phase change, before the submission.
		d.submit(up.RestorePath, "Restored")
		up.CheckpointsAtRestore = 0
		d.toPhase(v1.UpgradeVerifying)
	case v1.UpgradeVerifying:
		d.verify()
	case v1.UpgradeRollingBack:
		d.rollingBack()
	default:
		d.p.Status.Upgrade = nil
	}
}

// verify is the stability gate: the job RUNNING and N checkpoints completed
// since the restore, within the deadline.
func (d *decider) verify() {
	in, up, job := d.in, d.p.Status.Upgrade, d.job()
	if in.Flink.JobFound {
		job.State = string(in.Flink.JobState)
		job.CheckpointsCompleted = in.Flink.CheckpointsCompleted
	} else if in.Flink.Reachable && in.RolledOut {
		// Recorded but never reached Flink (a restart between the status
		// write and the submission): submit it under the same ID.
		d.p.Action = ActSubmit
		d.p.RestorePath = up.RestorePath
	}
	need := int64(stableCheckpoints(in.Spec))
	if in.Flink.Reachable && in.Flink.JobFound && in.Flink.JobState == flink.JobRunning &&
		in.Flink.CheckpointsCompleted-up.CheckpointsAtRestore >= need {
		d.p.Status.Upgrade = nil
		d.p.Status.LastFailedGeneration = 0
		d.setUpgrading(metav1.ConditionFalse, "UpgradeSucceeded",
			fmt.Sprintf("Generation %d is stable: the job runs and completed %d checkpoints", in.Generation, need))
		d.setCondition(v1.ConditionRolledBack, metav1.ConditionFalse, "NotRolledBack", "The current spec passed its gate")
		d.event(false, "UpgradeSucceeded", "Generation %d passed the stability gate", in.Generation)
		d.p.MarkStable = true
		return
	}
	failed := in.Flink.JobFound && in.Flink.JobState == flink.JobFailed
	if !failed && !timedOut(up.PhaseStartedAt, stabilityTimeout(in.Spec), in.Now) {
		d.requeue(Poll)
		return
	}
	why := fmt.Sprintf("the job did not run with %d checkpoints within %s (state %s, %d checkpoints)",
		need, stabilityTimeout(in.Spec), orUnknown(string(in.Flink.JobState)), in.Flink.CheckpointsCompleted-up.CheckpointsAtRestore)
	if failed {
		why = "the job failed"
	}
	if !autoRollback(in.Spec) || in.LastStable == nil {
		d.p.Status.Upgrade = nil
		d.p.Status.LastFailedGeneration = in.Generation
		d.setUpgrading(metav1.ConditionFalse, "UpgradeFailed", fmt.Sprintf("Generation %d failed its gate: %s; no rollback (disabled or no stable spec)", in.Generation, why))
		d.event(true, "UpgradeFailed", "Generation %d failed its gate: %s", in.Generation, why)
		return
	}
	d.event(true, "RollingBack", "Generation %d failed its gate (%s); rolling back to the last stable spec", in.Generation, why)
	d.toPhase(v1.UpgradeRollingBack)
	// The failed job's submission is over; the rollback's own is recorded
	// when it is made, and its absence is what says "submit".
	job.SubmittedAt = nil
	d.setUpgrading(metav1.ConditionFalse, "UpgradeFailed", fmt.Sprintf("Generation %d failed its gate: %s", in.Generation, why))
	d.setCondition(v1.ConditionRollingBack, metav1.ConditionTrue, "GateFailed", fmt.Sprintf("Rolling back to the last stable spec and restoring from %s", orUnknown(up.RestorePath)))
	if in.Flink.Reachable && in.Flink.JobFound && !in.Flink.JobState.Terminal() {
		d.p.Action = ActCancel
	}
	d.p.Deploy = in.LastStable
	d.requeue(Poll)
}

// rollingBack returns to the last stable spec and restores the job from the
// savepoint taken before the upgrade; no HA metadata is needed.
func (d *decider) rollingBack() {
	in, up, job := d.in, d.p.Status.Upgrade, d.job()
	d.p.Deploy = in.LastStable
	if !in.RolledOut || !specEqual(in.Deployed, in.LastStable) {
		if in.Flink.Reachable && in.Flink.JobFound && !in.Flink.JobState.Terminal() {
			d.p.Action = ActCancel
		}
		d.requeue(Poll)
		return
	}
	if job.SubmittedAt == nil {
		d.submit(up.RestorePath, "RolledBack")
		return
	}
	if !in.Flink.JobFound {
		if in.Flink.Reachable {
			d.p.Action = ActSubmit
			d.p.RestorePath = up.RestorePath
		}
		d.requeue(Poll)
		return
	}
	job.State = string(in.Flink.JobState)
	job.CheckpointsCompleted = in.Flink.CheckpointsCompleted
	if in.Flink.JobState != flink.JobRunning {
		d.requeue(Poll)
		return
	}
	d.p.Status.Upgrade = nil
	d.p.Status.LastFailedGeneration = in.Generation
	d.setCondition(v1.ConditionRollingBack, metav1.ConditionFalse, "RollbackComplete", "The rollback finished")
	d.setCondition(v1.ConditionRolledBack, metav1.ConditionTrue, "GateFailed",
		fmt.Sprintf("Generation %d failed its gate; running the last stable spec restored from %s. Change the spec to try again", in.Generation, orUnknown(up.RestorePath)))
	d.event(false, "RolledBack", "Rolled back to the last stable spec; the job runs from %s", orUnknown(up.RestorePath))
}

// supersede handles a new spec during an upgrade: the user's newest spec
// wins. State already saved by this upgrade is reused, never taken twice.
func (d *decider) supersede() {
	in, up := d.in, d.p.Status.Upgrade
	if up.Phase == v1.UpgradeSavingState && d.job().PendingSavepoint != nil {
		// Let the savepoint finish: its result is the state the new spec
		// starts from.
		if done := d.followSavepoint(d.job().PendingSavepoint); done == nil {
			if d.p.Status.Upgrade != nil {
				return
			}
			// The savepoint failed; the new generation starts afresh.
			d.steady()
			return
		} else {
			up.RestorePath = done.Path
		}
	}
	if up.Phase == v1.UpgradeRollingBack {
		d.setCondition(v1.ConditionRollingBack, metav1.ConditionFalse, "Superseded", fmt.Sprintf("Generation %d replaced the rollback", in.Generation))
	}
	d.event(false, "UpgradeSuperseded", "Generation %d supersedes the upgrade to generation %d", in.Generation, up.TargetGeneration)
	up.TargetGeneration = in.Generation
	up.Kind = string(Classify(in.Deployed, in.Spec))
	d.toPhase(v1.UpgradeDeploying)
	d.deployTarget()
}

func (d *decider) setUpgrading(status metav1.ConditionStatus, reason, msg string) {
	d.setCondition(v1.ConditionUpgrading, status, reason, msg)
}

func (d *decider) setCondition(t string, status metav1.ConditionStatus, reason, msg string) {
	setCondition(&d.p.Status, d.in.Generation, d.in.Now, t, status, reason, msg)
}

func specEqual(a, b *v1.FlinkClusterSpec) bool {
	return a != nil && b != nil && Classify(a, b) == ChangeNone
}

func timedOut(start metav1.Time, limit time.Duration, now time.Time) bool {
	return !start.IsZero() && now.Sub(start.Time) > limit
}

func orUnknown(s string) string {
	if s == "" {
		return "no saved state"
	}
	return s
}

// jobID and triggerID are Flink's 32-hex-digit IDs, derived from the cluster
// and the moment of the decision and recorded in status before use.
// The previous job's ID is part of the seed, so a new job never takes the
// ID of the one it replaces.
func jobID(uid string, generation int64, previous string, now time.Time) string {
	return hexID(fmt.Sprintf("job/%s/%d/%s/%d", uid, generation, previous, now.UnixNano()))
}

func triggerID(uid, job, reason string, now time.Time) string {
	return hexID(fmt.Sprintf("trigger/%s/%s/%s/%d", uid, job, reason, now.UnixNano()))
}

func hexID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:16])
}

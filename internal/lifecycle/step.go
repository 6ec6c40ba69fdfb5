package lifecycle

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/policy"
)

// Flink is what the controller read from the Flink REST API this reconcile.
type Flink struct {
	// Reachable: the REST API answered.
	Reachable bool
	// JobFound: Flink knows status.job.id.
	JobFound bool
	// JobState is the state of status.job.id.
	JobState flink.JobStatus
	// FailureCause is the job's root exception, when it failed.
	FailureCause string
	// HistoryUnread: the job's checkpoint statistics did not answer (an
	// error other than Flink's "not enabled", for a job past
	// INITIALIZING), so LatestCheckpoint and Savepoints say nothing.
	HistoryUnread bool
	// HistoryGone: Flink shows the ended job only by its result (named
	// "unknown", no vertices) and answers that it has no checkpoint
	// statistics ("Checkpointing has not been enabled."): a JobManager took
	// over while the job was being cleaned up, and its
	// CheckpointResourcesCleanupRunner shows neither the checkpoints nor
	// how many there were. A streaming job Flink shows with its graph
	// always has statistics, even when its JobManager failed to start
	// (DefaultJobMasterServiceProcessFactory#createArchivedExecutionGraph
	// passes its checkpointing settings).
	HistoryGone bool
	// CheckpointsCompleted is the job's completed-checkpoint count.
	CheckpointsCompleted int64
	// LatestCheckpoint is the job's latest completed checkpoint.
	LatestCheckpoint *Checkpoint
	// Savepoints are the completed savepoints in the job's checkpoint
	// history, Flink's own record of what a forgotten trigger produced.
	Savepoints []Checkpoint
	// Restored is what the job's current run restored from, as Flink
	// reports it (latest.restored), and RestoredSavepoint whether it is a
	// savepoint. After a JobManager failover with HA, the new leader
	// restores the latest checkpoint of its store, which the operator may
	// never have recorded, and the new run's statistics start afresh: no
	// completed checkpoint, only this.
	Restored          *Checkpoint
	RestoredSavepoint bool
	// Pending is the state of status.job.pendingSavepoint in Flink.
	Pending *Operation
	// Vertices are the job's vertices as Flink lists them, sources first
	// (JobDetailsInfo is in topological order).
	Vertices []flink.JobDetailsVertex
	// Parallelism is the highest parallelism of the job's vertices.
	Parallelism int32
	// RunningSince is when the job last turned RUNNING.
	RunningSince time.Time
	// EndedAt is when a terminal job ended, by Flink's clock.
	EndedAt time.Time
}

// TasksRunning: the job runs and every task of it runs (or has finished,
// as a bounded source's may). Flink turns a job RUNNING when its scheduler
// starts (SchedulerBase#startScheduling, then
// DefaultScheduler#startSchedulingInternal deploys), and again when a
// restart begins (DefaultScheduler#restartTasks), before a task has a
// slot or has restored its state: a task is INITIALIZING while its
// operators restore and open (Task#restoreAndInvoke), and can fail there
// with the job RUNNING. Only the tasks' states (JobDetailsInfo's
// per-vertex counts of ExecutionState, "tasks") say it did not. A vertex
// whose parallelism is not decided yet (-1, the AdaptiveBatchScheduler's)
// has no tasks to run.
func (f Flink) TasksRunning() bool {
	if !f.JobFound || f.JobState != flink.JobRunning || len(f.Vertices) == 0 {
		return false
	}
	for _, v := range f.Vertices {
		if v.Parallelism <= 0 || v.Tasks["RUNNING"]+v.Tasks["FINISHED"] < v.Parallelism {
			return false
		}
	}
	return true
}

// TasksStarting: the job is RUNNING and Flink listed its vertices, some of
// whose tasks do not run yet: scheduled (waiting for slots), deploying, or
// INITIALIZING, where Task#doRun restores their state (long for a large
// state, after a restart or failover). Flink fails a savepoint triggered
// then: DefaultCheckpointPlanCalculator#checkTasksStarted refuses a task to
// trigger that is not RUNNING (NOT_ALL_REQUIRED_TASKS_RUNNING). Vertices
// without a parallelism (not yet decided) are not counted. Job details are
// cached for web.refresh-interval, so a start that began moments ago may
// not show yet.
func (f Flink) TasksStarting() bool {
	if !f.JobFound || f.JobState != flink.JobRunning {
		return false
	}
	for _, v := range f.Vertices {
		if v.Parallelism > 0 && v.Tasks["RUNNING"]+v.Tasks["FINISHED"] < v.Parallelism {
			return true
		}
	}
	return false
}

// Checkpoint is a completed checkpoint or savepoint as Flink lists it.
type Checkpoint struct {
	ID   int64
	Path string
	// TriggeredAt is Flink's trigger timestamp.
	TriggeredAt time.Time
}

// Operation is a savepoint or checkpoint trigger as Flink reports it.
type Operation struct {
	// Unknown: Flink has no such trigger. It was never sent, or the
	// JobManager forgot it: its CompletedOperationCache keeps a result for
	// rest.async.store-duration and loses everything on a restart.
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
	// REST API answers. With nothing deployed yet, the children match the
	// spec the first step deploys (Target of Spec).
	RolledOut bool
	// Drift: the pods run another rendering of Deployed than this
	// operator builds (an operator upgrade or a platform setting changed
	// how the cluster renders); applying it rolls the pods.
	Drift bool
	Flink Flink
	Now   time.Time
	// Policy is the cluster's upgrade and healing policy, resolved once
	// for the reconcile (the autopilot reads the same).
	Policy policy.Policy
	// Autopilot is the autopilot's rescale, nil without an autoscaler: the
	// step rolls it out, holds it while the state rule does, and settles
	// it (Step.Rescale).
	Autopilot *Rescale
	// InPlace: the running Flink rescales a job in place (1.18+ with
	// jobmanager.scheduler: adaptive), so the autopilot's rescale sets the
	// job's resource requirements instead of resubmitting it.
	InPlace bool
	// Heal asks to restart the running job from its latest state, for the
	// reason given (a restart loop, stalled checkpoints), within the
	// healing policy's attempts.
	Heal string
	// Retention is execution.checkpointing.externalized-checkpoint-
	// retention as the Deployed spec renders (empty: Flink's default,
	// NO_EXTERNALIZED_CHECKPOINTS). It says whether the job's checkpoints
	// survive a cancel (CheckpointProperties).
	Retention string
	// JobManagerSince is when the youngest ready JobManager pod turned
	// ready: the process that answers started no later. It tells a job
	// Flink never got from one a JobManager restart lost, and is read only
	// for a job Flink never showed and does not know (zero otherwise, and
	// when no pod is ready or the read failed: the decision then waits).
	JobManagerSince time.Time
	// EndedUnseen: Flink refused to run the recorded job again because its
	// job result store records it as globally terminal, while it shows no
	// such job: it ran and ended, unseen (Dispatcher#submitJob).
	EndedUnseen bool
}

// Rescale is what the autopilot proposes: the job at Parallelism on
// TaskManagers (apply mode; zero: it sets none), and the rescale it waits
// to see settled.
type Rescale struct {
	Parallelism, TaskManagers int32
	// Vertices are each vertex's own parallelism, at most Parallelism.
	Vertices []v1.VertexParallelism
	// Pending is the parallelism of the autopilot's rescale in flight;
	// zero for none.
	Pending int32
}

// Settlement is what became of the autopilot's rescale in flight: Done
// when the job runs at its parallelism with no upgrade left, Failed (for
// Why) when the rescale was rolled back or gave up; the autopilot's target
// then returns to RevertTo, the parallelism of the spec rolled back to.
// Neither: it is still in flight, or held.
type Settlement struct {
	Done, Failed bool
	Why          string
	RevertTo     int32
}

// ActionKind is a side effect for the controller to perform.
type ActionKind string

const (
	ActNone ActionKind = ""
	// ActTrigger sends status.job.pendingSavepoint's trigger (Flink joins a
	// repeated trigger ID while it remembers it).
	ActTrigger ActionKind = "Trigger"
	// ActSubmit uploads the jar and runs it with status.job.id as job ID.
	ActSubmit ActionKind = "Submit"
	// ActCancel cancels status.job.id.
	ActCancel ActionKind = "Cancel"
	// ActRescale sets status.job.id's resource requirements to
	// Action.Parallelism (PUT /jobs/{jobid}/resource-requirements).
	ActRescale ActionKind = "Rescale"
)

// Action is the one side effect of a step.
type Action struct {
	Kind ActionKind
	// RestorePath is the savepoint or checkpoint ActSubmit restores from.
	RestorePath string
	// Parallelism is ActRescale's target.
	Parallelism int32
}

// TransitionKind names a lifecycle transition, for metrics.
type TransitionKind string

const (
	UpgradeStarted     TransitionKind = "UpgradeStarted"
	UpgradeSucceeded   TransitionKind = "UpgradeSucceeded"
	UpgradeFailed      TransitionKind = "UpgradeFailed"
	UpgradeSuperseded  TransitionKind = "UpgradeSuperseded"
	RollbackSucceeded  TransitionKind = "RollbackSucceeded"
	RollbackFailed     TransitionKind = "RollbackFailed"
	SavepointCompleted TransitionKind = "SavepointCompleted"
	SavepointFailed    TransitionKind = "SavepointFailed"
	JobLost            TransitionKind = "JobLost"
	JobRestored        TransitionKind = "JobRestored"
	HealingExhausted   TransitionKind = "HealingExhausted"
)

// Transition is one transition a step makes.
type Transition struct {
	Kind TransitionKind
	// Reason of the savepoint, for savepoint transitions.
	Reason v1.SavepointReason
	// Took is how long the savepoint took, for SavepointCompleted.
	Took time.Duration
}

// Event is an event to record.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Step is one decision: the next status, at most one action, when to look
// again, the transitions it makes and the events it emits. The controller
// writes Status before performing Action or applying Deploy, so a restart
// between the two resumes the same step instead of starting another.
type Step struct {
	Deploy      *v1.FlinkClusterSpec
	Status      v1.FlinkClusterStatus
	Action      Action
	Transitions []Transition
	Events      []Event
	// RequeueAfter asks to look again; zero means wait for events.
	RequeueAfter time.Duration
	// MarkStable asks the controller to record Deploy as the last stable spec.
	MarkStable bool
	// Hold asks the controller to keep the pods' rendering (create only
	// what is missing): the state rule has not let them roll.
	Hold bool
	// Facts are the step's verdicts on its conditions; the controller
	// turns them into conditions (internal/controller/conditions.go).
	Facts Facts
	// Rescale settles the autopilot's rescale in flight.
	Rescale Settlement

	in Input
}

// Fact is one verdict of a step on one condition.
type Fact struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Flipped: the step concluded more than one status for the condition
	// before this one, so it transitioned within the step even where the
	// final status equals the recorded one.
	Flipped bool
}

// Facts are a step's verdicts. A nil Upgrading, RollingBack or RolledBack
// leaves that condition as recorded; StateHold is the state rule's Hold or
// Refuse of this step, nil when it holds nothing.
type Facts struct {
	Upgrading, RollingBack, RolledBack *Fact
	StateHold                          *Verdict
}

// conclude replaces a verdict with the step's next one on the same condition.
func conclude(prev **Fact, status metav1.ConditionStatus, reason, msg string) {
	flipped := *prev != nil && ((*prev).Flipped || (*prev).Status != status)
	*prev = &Fact{Status: status, Reason: reason, Message: msg, Flipped: flipped}
}

// Poll is how often an operation in flight is looked at.
const Poll = 2 * time.Second

func newStep(in Input) *Step {
	s := &Step{Status: *in.Status.DeepCopy(), Deploy: in.Deployed, in: in}
	if s.Status.Job == nil {
		s.Status.Job = &v1.JobStatus{}
	}
	return s
}

func (s *Step) job() *v1.JobStatus         { return s.Status.Job }
func (s *Step) upgrade() *v1.UpgradeStatus { return s.Status.Upgrade }

func (s *Step) event(warning bool, reason, format string, args ...any) {
	s.Events = append(s.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (s *Step) transition(t Transition) { s.Transitions = append(s.Transitions, t) }

// act sets the step's one action. The first one set wins: two side
// effects in one step could not be ordered safely, and the next step
// reaches the other from the status this one records.
func (s *Step) act(kind ActionKind, restore string) {
	if s.Action.Kind == ActNone {
		s.Action = Action{Kind: kind, RestorePath: restore}
	}
}

// restorePoint asks the state rule (RestorePoint) about the recorded job,
// first recording when Flink was first seen to report it ended. A verdict
// that stops nothing keeps the pods as they are.
func (s *Step) restorePoint(why Purpose) (Snapshot, Verdict) {
	s.sawEnd()
	snap, v := RestorePoint(s.in, s.job(), why)
	switch v.Do {
	case Hold:
		s.hold(v)
		s.requeue(Poll)
	case Refuse:
		s.hold(v)
	case Wait:
		s.Hold = true
		s.requeue(v.After)
	}
	return snap, v
}

// sawEnd records when Flink was first seen to report the recorded job
// ended or unknown.
func (s *Step) sawEnd() {
	in, job := s.in, s.job()
	if job.ID != "" && in.Flink.Reachable && !alive(in) && job.EndedAt == nil {
		now := s.now()
		job.EndedAt = &now
	}
}

// hold keeps the pods and says why in the StateHold verdict.
func (s *Step) hold(v Verdict) {
	s.Facts.StateHold = &v
	s.Hold = true
}

func (s *Step) requeue(after time.Duration) {
	if s.RequeueAfter == 0 || after < s.RequeueAfter {
		s.RequeueAfter = after
	}
}

func (s *Step) now() metav1.Time { return metav1.NewTime(s.in.Now.Truncate(time.Second)) }

func (s *Step) setUpgrading(status metav1.ConditionStatus, reason, msg string) {
	conclude(&s.Facts.Upgrading, status, reason, msg)
}

func (s *Step) setRollingBack(status metav1.ConditionStatus, reason, msg string) {
	conclude(&s.Facts.RollingBack, status, reason, msg)
}

func (s *Step) setRolledBack(status metav1.ConditionStatus, reason, msg string) {
	conclude(&s.Facts.RolledBack, status, reason, msg)
}

// rolledBack is the RolledBack status as this step leaves it.
func (s *Step) rolledBack() metav1.ConditionStatus {
	if f := s.Facts.RolledBack; f != nil {
		return f.Status
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, v1.ConditionRolledBack); c != nil {
		return c.Status
	}
	return ""
}

// toPhase moves the upgrade to phase; deadlines count from here.
func (s *Step) toPhase(phase v1.UpgradePhase) {
	s.Status.Upgrade.Phase = phase
	s.Status.Upgrade.PhaseStartedAt = s.now()
	switch phase {
	case v1.UpgradeSavingState:
		s.setUpgrading(metav1.ConditionTrue, string(phase), "Making state safe before the change")
	case v1.UpgradeDeploying:
		s.setUpgrading(metav1.ConditionTrue, string(phase), "Stopping the old job, then rolling the pods to the new spec")
	case v1.UpgradeVerifying:
		s.setUpgrading(metav1.ConditionTrue, string(phase), "Waiting for the job to run and complete checkpoints")
	}
}

// endUpgrade closes the upgrade in flight; failed marks its generation so
// it is not retried until the spec changes.
func (s *Step) endUpgrade(failed bool) {
	if failed && !IsRescale(s.Status.Upgrade.Kind) {
		s.Status.LastFailedGeneration = s.Status.Upgrade.TargetGeneration
	}
	s.Status.Upgrade = nil
}

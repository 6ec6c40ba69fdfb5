package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AutoscalerMode says what the autopilot does with its decisions.
// +kubebuilder:validation:Enum=recommend;apply
type AutoscalerMode string

const (
	// AutoscalerRecommend decides and reports (status, events, metrics),
	// and changes nothing.
	AutoscalerRecommend AutoscalerMode = "recommend"
	// AutoscalerApply rescales the job through the state-safe path.
	AutoscalerApply AutoscalerMode = "apply"
)

// AutoscalerSpec turns the autopilot on: it sizes the job's parallelism
// for a target utilization from the job's own Flink metrics (per-vertex
// busy time, backpressure, record rates and the sources' pending
// records), and the TaskManagers from the slots that parallelism needs.
// The defaults follow the Apache Flink Kubernetes operator's autoscaler
// where its users found them sound, and are stricter where they reported
// churn (see the README).
//
// spec.taskManager.replicas stays the user's (or a
// HorizontalPodAutoscaler's) field: with the autopilot applying, it is
// the floor, and the cluster runs max(spec.taskManager.replicas, the
// TaskManagers the autopilot's parallelism needs). The two never write
// the same field.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minParallelism) || !has(self.maxParallelism) || self.minParallelism <= self.maxParallelism",message="spec.autoscaler.minParallelism must not exceed spec.autoscaler.maxParallelism"
// +kubebuilder:validation:XValidation:rule="!has(self.metricWindow) || !has(self.interval) || duration(self.metricWindow).getMilliseconds() >= duration(self.interval).getMilliseconds() * 3",message="spec.autoscaler.metricWindow must hold at least three samples (three times spec.autoscaler.interval)"
type AutoscalerSpec struct {
	// Mode is recommend (decide and report only) or apply.
	// +optional
	// +kubebuilder:default=apply
	Mode AutoscalerMode `json:"mode,omitempty"`

	// TargetUtilizationPercent is the busy time each vertex is sized for,
	// in percent of its time (70: 700 ms of busy time per second),
	// leaving room for peaks. The Apache autoscaler's default too.
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=95
	// +kubebuilder:default=70
	TargetUtilizationPercent int32 `json:"targetUtilizationPercent,omitempty"`

	// UtilizationBoundaryPercent is the band around the target in which
	// nothing happens: with 70 and 20, a job whose vertices need between
	// 50% and 90% of their capacity is left alone.
	// +optional
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=50
	// +kubebuilder:default=20
	UtilizationBoundaryPercent int32 `json:"utilizationBoundaryPercent,omitempty"`

	// MinParallelism is the lowest parallelism the autopilot sets.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32768
	// +kubebuilder:default=1
	MinParallelism int32 `json:"minParallelism,omitempty"`

	// MaxParallelism is the highest parallelism the autopilot sets; each
	// vertex's own maxParallelism (its key groups) bounds it further.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32768
	// +kubebuilder:default=32
	MaxParallelism int32 `json:"maxParallelism,omitempty"`

	// MaxTaskManagers bounds the TaskManagers a scale-up may add.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=16
	MaxTaskManagers int32 `json:"maxTaskManagers,omitempty"`

	// Interval between metric samples. Flink refreshes the metrics it
	// serves every metrics.fetcher.update-interval (10s by default), so a
	// shorter interval reads the same values twice.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="spec.autoscaler.interval must be at least 1s"
	// +kubebuilder:default="15s"
	Interval string `json:"interval,omitempty"`

	// MetricWindow is how much history a decision averages over; a
	// decision waits until the window is full after every rescale.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="10m"
	MetricWindow string `json:"metricWindow,omitempty"`

	// Stabilization is how long after a rescale (or the job's start) the
	// metrics are ignored: a restored job catches up and its rates say
	// nothing of steady state.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="5m"
	Stabilization string `json:"stabilization,omitempty"`

	// ScaleDownDelay is how long a scale-down must keep being recommended
	// before it is applied; the scale-downs recommended meanwhile are
	// merged (the highest parallelism wins), and any decision that does not
	// recommend a scale-down cancels it.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="1h"
	ScaleDownDelay string `json:"scaleDownDelay,omitempty"`

	// CatchUpDuration is the time the job is sized to drain its sources'
	// backlog (pending records) in, on top of the incoming rate.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="15m"
	CatchUpDuration string `json:"catchUpDuration,omitempty"`

	// ClimbHorizon is how far ahead a scale-up is sized while the arrival
	// rate climbs: when it rose through the whole metric window, the
	// vertices are sized for the rate the climb (at its slowest pace in
	// the window) reaches within the horizon, so the next scale-up comes
	// later. Whether to scale up is still judged on the rate now; "0s"
	// sizes for the rate now.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="1h"
	ClimbHorizon string `json:"climbHorizon,omitempty"`

	// MaxRescalesPerHour caps the rescales applied in any hour.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	// +kubebuilder:default=3
	MaxRescalesPerHour int32 `json:"maxRescalesPerHour,omitempty"`
}

// HealingAction is what the operator does about a detected problem.
// +kubebuilder:validation:Enum=report;restore
type HealingAction string

const (
	// HealReport sets a condition and emits an event.
	HealReport HealingAction = "report"
	// HealRestore also cancels the job and restores it from its latest
	// completed checkpoint, within the restore attempts.
	HealRestore HealingAction = "restore"
)

// HealingSpec says how the operator heals the job.
type HealingSpec struct {
	// RestoreAttempts is how many times a job that exhausted Flink's
	// restart strategy (FAILED) is restored from its latest completed
	// checkpoint before the cluster is Degraded; 0 leaves a failed job
	// failed. The count restarts once a restored job has run and
	// checkpointed for RestartLoopWindow.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	RestoreAttempts int32 `json:"restoreAttempts,omitempty"`

	// Backoff is the wait before the first restore; it doubles with each
	// attempt.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="30s"
	Backoff string `json:"backoff,omitempty"`

	// RestartLoopRestarts is how many restarts of the job (Flink's
	// numRestarts) within RestartLoopWindow make a restart loop.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=5
	RestartLoopRestarts int32 `json:"restartLoopRestarts,omitempty"`

	// RestartLoopWindow is the window restarts are counted in.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:default="10m"
	RestartLoopWindow string `json:"restartLoopWindow,omitempty"`

	// OnRestartLoop is report (a condition and an event) or restore.
	// +optional
	// +kubebuilder:default=report
	OnRestartLoop HealingAction `json:"onRestartLoop,omitempty"`

	// StalledCheckpointIntervals is how many checkpoint intervals may pass
	// without a completed checkpoint before checkpoints count as stalled.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=3
	StalledCheckpointIntervals int32 `json:"stalledCheckpointIntervals,omitempty"`

	// OnStalledCheckpoints is report or restore.
	// +optional
	// +kubebuilder:default=report
	OnStalledCheckpoints HealingAction `json:"onStalledCheckpoints,omitempty"`
}

// Condition types of the autopilot.
const (
	// ConditionAutoscaling is True while the autopilot's rescale is in
	// flight; its reason is otherwise the last decision's (Stable,
	// Recommended, Unschedulable, Ineffective, ...).
	ConditionAutoscaling = "Autoscaling"
	// ConditionRestartLoop is True when the job restarted too often within
	// the healing window.
	ConditionRestartLoop = "RestartLoop"
	// ConditionCheckpointsStalled is True when no checkpoint completed for
	// several checkpoint intervals.
	ConditionCheckpointsStalled = "CheckpointsStalled"
)

// AutoscalerStatus is the autopilot's memory and its explanation.
type AutoscalerStatus struct {
	// Parallelism is the job parallelism the autopilot set; zero until it
	// sets one (the job then runs spec.job.parallelism).
	// +optional
	Parallelism int32 `json:"parallelism,omitempty"`
	// TaskManagers is what that parallelism needs, before the
	// spec.taskManager.replicas floor.
	// +optional
	TaskManagers int32 `json:"taskManagers,omitempty"`
	// InPlace is true when the last rescale went through Flink's adaptive
	// scheduler (PUT /jobs/{jobid}/resource-requirements) rather than a
	// savepoint and resubmission.
	// +optional
	InPlace bool `json:"inPlace,omitempty"`
	// Vertices is the parallelism the autopilot set for each job vertex
	// (Parallelism is the highest of them); empty when it sets one
	// parallelism for the whole job.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=256
	Vertices []VertexParallelism `json:"vertices,omitempty"`
	// Pending is a rescale the autopilot decided and the lifecycle has not
	// finished applying.
	// +optional
	Pending *AutoscalerDecision `json:"pending,omitempty"`
	// PendingScaleDown is a scale-down waiting for its delay.
	// +optional
	PendingScaleDown *PendingScaleDown `json:"pendingScaleDown,omitempty"`
	// Blocked stops the autopilot repeating a rescale that did not help or
	// failed, until the load moves away from what it saw.
	// +optional
	Blocked *AutoscalerBlock `json:"blocked,omitempty"`
	// Decisions are the last decisions that changed or would change the
	// parallelism, newest first (at most ten).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Decisions []AutoscalerDecision `json:"decisions,omitempty"`
}

// PendingScaleDown is a scale-down recommended since Since; Parallelism
// is the highest recommended meanwhile.
type PendingScaleDown struct {
	Since       metav1.Time `json:"since"`
	Parallelism int32       `json:"parallelism"`
	// MergedFrom is when the merge began: the first recommendation a
	// metric window after Since (the ones before it still averaged
	// samples from before the scale-down was first recommended, and only
	// the first of them is held until then).
	// +optional
	MergedFrom *metav1.Time `json:"mergedFrom,omitempty"`
	// Vertices are the highest recommended for each vertex meanwhile.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=256
	Vertices []VertexParallelism `json:"vertices,omitempty"`
}

// VertexParallelism is one job vertex's parallelism.
type VertexParallelism struct {
	// ID is the vertex's ID as Flink lists it (its head operator's ID, 32
	// hexadecimal digits).
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{32}$`
	ID string `json:"id"`
	// Name is the vertex's name, for reading.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]+$`
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:Minimum=1
	Parallelism int32 `json:"parallelism"`
}

// AutoscalerBlock is a rescale the autopilot will not repeat.
type AutoscalerBlock struct {
	// Reason: Ineffective or RescaleFailed.
	Reason string `json:"reason"`
	// Message says what was seen.
	Message string `json:"message"`
	// Parallelism is the parallelism it will not go to (or beyond, for a
	// scale-up) again.
	Parallelism int32 `json:"parallelism"`
	// ArrivalRate is the rate arriving at the sources, in records per
	// second, at the time; an arrival rate 50% away lifts the block.
	ArrivalRate int64 `json:"arrivalRate"`
	// Until lifts the block anyway.
	Until metav1.Time `json:"until"`
	// Vertices are the vertices the rescale scaled up, each with the
	// parallelism it will not go to (or beyond) again; empty for a block
	// of the whole job.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=256
	Vertices []BlockedVertex `json:"vertices,omitempty"`
}

// BlockedVertex is one vertex a block holds.
type BlockedVertex struct {
	VertexParallelism `json:",inline"`
	// ProcessingRate is, for a vertex whose scale-up did not help, the
	// records per second all its subtasks processed at full busy time
	// when it was blocked: one 50% higher (what held it back was
	// relieved) lifts the block.
	// +optional
	ProcessingRate int64 `json:"processingRate,omitempty"`
}

// AutoscalerDecision is one decision with the numbers behind it.
type AutoscalerDecision struct {
	// Time of the decision.
	Time metav1.Time `json:"time"`
	// From and To are the job parallelism.
	From int32 `json:"from"`
	To   int32 `json:"to"`
	// FromTaskManagers and ToTaskManagers are the TaskManagers.
	// +optional
	FromTaskManagers int32 `json:"fromTaskManagers,omitempty"`
	// +optional
	ToTaskManagers int32 `json:"toTaskManagers,omitempty"`
	// Reason is one word: ScaleUp, ScaleDown, Unschedulable, Ineffective,
	// RescaleFailed, CapReached.
	Reason string `json:"reason"`
	// Message explains it, with the numbers.
	Message string `json:"message"`
	// Result: Applied, Recommended, Refused, Failed, Succeeded.
	Result string `json:"result"`
	// Inputs are the metrics it was made from.
	Inputs DecisionInputs `json:"inputs"`
	// Vertices are each vertex's parallelism and the numbers it was
	// sized from.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Vertices []VertexDecision `json:"vertices,omitempty"`
	// DowntimeSeconds is how long the job did not process records for
	// the rescale, measured once it settled: from the decision to the job
	// running at the new parallelism.
	// +optional
	DowntimeSeconds int64 `json:"downtimeSeconds,omitempty"`
}

// VertexDecision is one vertex's part of a decision.
type VertexDecision struct {
	// ID and Name are the vertex's, as Flink lists them.
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
	// From and To are its parallelism.
	From int32 `json:"from"`
	To   int32 `json:"to"`
	// BusyMsPerSecond is its subtasks' average busy time.
	BusyMsPerSecond int64 `json:"busyMsPerSecond"`
	// ProcessingRate is the records per second one subtask processes at
	// full busy time: its records in over its busy time.
	ProcessingRate int64 `json:"processingRate"`
	// TargetRate is the records per second it must take in at the job's
	// target rate: its upstream's target output, through the measured
	// selectivity of the edge (the sources' target rate for a source).
	TargetRate int64 `json:"targetRate"`
	// Bound names what set To other than the need: the band, the
	// policy's bounds, its max parallelism, a divisor, a block.
	// +optional
	Bound string `json:"bound,omitempty"`
}

// DecisionInputs are the window averages a decision used.
type DecisionInputs struct {
	// Bottleneck is the vertex that needed the most parallelism.
	// +optional
	Bottleneck string `json:"bottleneck,omitempty"`
	// BusyMsPerSecond is the bottleneck's average busy time.
	BusyMsPerSecond int64 `json:"busyMsPerSecond"`
	// MaxSubtaskBusyMsPerSecond is its hottest subtask's.
	// +optional
	MaxSubtaskBusyMsPerSecond int64 `json:"maxSubtaskBusyMsPerSecond,omitempty"`
	// SourceRate is the records per second the sources emit.
	SourceRate int64 `json:"sourceRate"`
	// ArrivalRate is the records per second arriving at the sources (the
	// emitted rate plus the backlog's growth).
	ArrivalRate int64 `json:"arrivalRate"`
	// Lag is the sources' pending records.
	Lag int64 `json:"lag"`
	// TargetRate is the rate the job is sized for: arrival plus catch-up.
	TargetRate int64 `json:"targetRate"`
	// Samples in the window.
	Samples int32 `json:"samples"`
	// RestartSeconds is the downtime a rescale is expected to cost (the
	// last rescales' measured downtime, else a default): what arrives
	// meanwhile is added to the backlog the target rate drains.
	// +optional
	RestartSeconds int64 `json:"restartSeconds,omitempty"`
	// ArrivalClimb is how fast the arrival rate climbed, in records/s per
	// hour, when it rose through the whole window (zero otherwise).
	// +optional
	ArrivalClimb int64 `json:"arrivalClimb,omitempty"`
	// AheadRate is, on such a climb, the target rate the vertices were
	// sized for: the target rate where the climb takes it within
	// spec.autoscaler.climbHorizon.
	// +optional
	AheadRate int64 `json:"aheadRate,omitempty"`
}

// HealingStatus is what the operator did to heal the job.
type HealingStatus struct {
	// Restores counts restores of a failed job since it last completed a
	// checkpoint.
	// +optional
	Restores int32 `json:"restores,omitempty"`
	// LastRestore is when the last one was made.
	// +optional
	LastRestore *metav1.Time `json:"lastRestore,omitempty"`
	// FailedJob is the failed job the last restore replaced.
	// +optional
	FailedJob string `json:"failedJob,omitempty"`
	// Exhausted says why healing gave up; the cluster is Degraded while
	// it is set.
	// +optional
	Exhausted string `json:"exhausted,omitempty"`
}

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobState is the state the user wants the job in.
// +kubebuilder:validation:Enum=running;suspended
type JobState string

const (
	JobStateRunning   JobState = "running"
	JobStateSuspended JobState = "suspended"
)

// UpgradeMode says how the job's state crosses a restart.
// +kubebuilder:validation:Enum=stateless;savepoint;last-state
type UpgradeMode string

const (
	// UpgradeStateless restarts the job empty.
	UpgradeStateless UpgradeMode = "stateless"
	// UpgradeSavepoint stops the job with a savepoint and restores from it.
	UpgradeSavepoint UpgradeMode = "savepoint"
	// UpgradeLastState takes a checkpoint and restores from the latest
	// checkpoint; version changes still take a savepoint.
	UpgradeLastState UpgradeMode = "last-state"
)

// JobSpec is the one job a cluster runs: a jar or a SQL script, exactly
// one. Without it the cluster is a session cluster and jobs are the users'
// business.
// +kubebuilder:validation:XValidation:rule="has(self.jarURI) != has(self.sql)",message="spec.job needs exactly one of jarURI and sql"
// +kubebuilder:validation:XValidation:rule="!has(self.sql) || (!has(self.entryClass) && !has(self.args))",message="spec.job.entryClass and spec.job.args belong to a jar job, not to spec.job.sql"
type JobSpec struct {
	// JarURI is where the job's jar is fetched from (http or https); the
	// operator uploads it to the JobManager.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^\x00-\x20\x7f]+$`
	// +kubebuilder:validation:MaxLength=2048
	JarURI string `json:"jarURI,omitempty"`

	// SQL is a Flink SQL job: its script runs through Flink's SQL Gateway,
	// which the operator runs beside the JobManager (docs/guide/sql-jobs.md).
	// +optional
	SQL *SQLJobSpec `json:"sql,omitempty"`

	// EntryClass is the job's main class; the jar's manifest when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\x00-\x20\x7f]+$`
	EntryClass string `json:"entryClass,omitempty"`

	// Args are the program arguments.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Args []string `json:"args,omitempty"`

	// Parallelism of the job. When zero the run request names none, and
	// Flink runs the program at what it sets itself, else at 1 (a REST
	// submission's default, JarHandlerContext#fromRequest; the cluster's
	// parallelism.default is not read).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32768
	Parallelism int32 `json:"parallelism,omitempty"`
	// VertexParallelism runs the named job vertices at their own
	// parallelism, overriding parallelism for them: the run request
	// carries it as pipeline.jobvertex-parallelism-overrides, which
	// Flink's Dispatcher applies to the submitted JobGraph (Flink 1.17+);
	// an ID the job graph does not have is ignored. The autopilot sets it
	// in the spec it deploys (status.deployedSpec) to size each vertex on
	// its own; set here, it pins those vertices.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=256
	VertexParallelism []VertexParallelism `json:"vertexParallelism,omitempty"`

	// State is running or suspended. Suspending takes a savepoint and stops
	// the job; resuming restores from it.
	// +optional
	// +kubebuilder:default=running
	State JobState `json:"state,omitempty"`

	// UpgradeMode says how state crosses an upgrade: stateless, savepoint
	// or last-state.
	// +optional
	// +kubebuilder:default=savepoint
	UpgradeMode UpgradeMode `json:"upgradeMode,omitempty"`

	// InitialSavepointPath restores the job's first run from a savepoint.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]+$`
	InitialSavepointPath string `json:"initialSavepointPath,omitempty"`

	// AllowNonRestoredState lets a restore skip state no operator claims.
	// +optional
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`

	// SavepointInterval takes a savepoint periodically, such as 1h.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.job.savepointInterval must be at least 10s"
	SavepointInterval string `json:"savepointInterval,omitempty"`

	// SavepointTriggerNonce takes one savepoint each time it changes.
	// +optional
	SavepointTriggerNonce int64 `json:"savepointTriggerNonce,omitempty"`

	// SavepointRetention bounds status.job.savepointHistory.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=5
	SavepointRetention int32 `json:"savepointRetention,omitempty"`
}

// UpgradePolicy says when an upgrade counts as done and what happens when
// it does not get there.
type UpgradePolicy struct {
	// StableCheckpoints is how many checkpoints the job must complete after
	// an upgrade before it is stable.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=2
	StableCheckpoints int32 `json:"stableCheckpoints,omitempty"`

	// StabilityTimeout is the deadline for that, such as 5m.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:default="5m"
	StabilityTimeout string `json:"stabilityTimeout,omitempty"`

	// SavepointTimeout bounds the wait for the savepoint or checkpoint that
	// makes state safe before an upgrade.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:default="5m"
	SavepointTimeout string `json:"savepointTimeout,omitempty"`

	// AutoRollback returns to the last stable spec when the gate is not met.
	// +optional
	// +kubebuilder:default=true
	AutoRollback *bool `json:"autoRollback,omitempty"`
}

// HealthPolicy tunes the three-level health checks.
type HealthPolicy struct {
	// FailureThreshold is how many consecutive failed probes of one level
	// make the cluster Degraded.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	FailureThreshold int32 `json:"failureThreshold,omitempty"`

	// RequireRunningJobs makes a session cluster unhealthy when no job
	// runs. A cluster with spec.job always requires its job.
	// +optional
	RequireRunningJobs bool `json:"requireRunningJobs,omitempty"`
}

// SavepointReason says why a savepoint was taken.
type SavepointReason string

const (
	SavepointForUpgrade SavepointReason = "Upgrade"
	SavepointPeriodic   SavepointReason = "Periodic"
	SavepointManual     SavepointReason = "Manual"
	SavepointForSuspend SavepointReason = "Suspend"
	// SavepointForRemoval stops the job of a spec that no longer has one;
	// a returning spec.job restores from it.
	SavepointForRemoval SavepointReason = "Removal"
	// SavepointForHeal stops a running job being restarted whose
	// checkpoints would not survive a cancel.
	SavepointForHeal     SavepointReason = "Heal"
	CheckpointForUpgrade SavepointReason = "UpgradeCheckpoint"
	// SavepointForDelete stops the job of a deleted cluster.
	SavepointForDelete SavepointReason = "Delete"
)

// SavepointInfo is one savepoint (or, for last-state upgrades, checkpoint).
type SavepointInfo struct {
	// Path of the savepoint.
	// +optional
	Path string `json:"path,omitempty"`
	// TriggerID is the Flink trigger the operator chose; repeating the
	// request with it never takes a second savepoint.
	TriggerID string `json:"triggerID"`
	// JobID the savepoint belongs to.
	JobID string `json:"jobID"`
	// Reason it was taken.
	Reason SavepointReason `json:"reason"`
	// Stop is true for stop-with-savepoint.
	// +optional
	Stop bool `json:"stop,omitempty"`
	// Checkpoint is true for a checkpoint rather than a savepoint.
	// +optional
	Checkpoint bool `json:"checkpoint,omitempty"`
	// TriggeredAt is when the operator asked for it.
	TriggeredAt metav1.Time `json:"triggeredAt"`
	// CompletedAt is when Flink reported it done.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// CheckpointID is Flink's ID of the savepoint, when its checkpoint
	// history showed it; savepoints and checkpoints of a job share the
	// counter, so it orders them.
	// +optional
	CheckpointID int64 `json:"checkpointID,omitempty"`
	// ForgottenAt is when the operator first found that Flink no longer
	// knows the trigger. Flink's REST answers are cached, so what it says of
	// the job is trusted to postdate the trigger's end only once that
	// cache has turned over since.
	// +optional
	ForgottenAt *metav1.Time `json:"forgottenAt,omitempty"`
}

// JobStatus is what the operator knows of the job.
type JobStatus struct {
	// ID of the running job in Flink.
	// +optional
	ID string `json:"id,omitempty"`
	// State as Flink reports it (RUNNING, FAILING, FINISHED, ...).
	// +optional
	State string `json:"state,omitempty"`
	// RestoredFrom is the savepoint or checkpoint the job last started from.
	// +optional
	RestoredFrom string `json:"restoredFrom,omitempty"`
	// SubmittedAt is when the operator last submitted the job.
	// +optional
	SubmittedAt *metav1.Time `json:"submittedAt,omitempty"`
	// PendingSavepoint is the savepoint in flight. It is written before the
	// request is sent, so an operator restart resumes it instead of taking
	// another.
	// +optional
	PendingSavepoint *SavepointInfo `json:"pendingSavepoint,omitempty"`
	// LastSavepoint is the latest completed savepoint.
	// +optional
	LastSavepoint *SavepointInfo `json:"lastSavepoint,omitempty"`
	// SavepointHistory lists completed savepoints, newest first, bounded by
	// spec.job.savepointRetention.
	// +optional
	SavepointHistory []SavepointInfo `json:"savepointHistory,omitempty"`
	// LastSavepointNonce is the spec.job.savepointTriggerNonce last served.
	// +optional
	LastSavepointNonce int64 `json:"lastSavepointNonce,omitempty"`
	// CheckpointsCompleted is Flink's count of completed checkpoints, as of
	// the last status write (checkpoints alone are not written).
	// +optional
	CheckpointsCompleted int64 `json:"checkpointsCompleted,omitempty"`
	// LastCheckpoint is the job's latest completed checkpoint the operator
	// saw, as of the last status write; a reconcile writes a newer one
	// before Flink's retention would delete the recorded one. A job lost
	// with its JobManager restores from the newer of it and the last
	// savepoint, never from less.
	// +optional
	LastCheckpoint *CheckpointInfo `json:"lastCheckpoint,omitempty"`
	// FailureCause is Flink's root exception of a FAILED job.
	// +optional
	FailureCause string `json:"failureCause,omitempty"`
	// EndedAt is when the operator first saw Flink report the job ended.
	// Flink answers from caches (web.refresh-interval,
	// rest.cache.checkpoint-statistics.timeout), so the state an ended job
	// restores from is read no sooner than those after it.
	// +optional
	EndedAt *metav1.Time `json:"endedAt,omitempty"`
}

// CheckpointInfo is one completed checkpoint.
type CheckpointInfo struct {
	// ID is Flink's checkpoint ID.
	ID int64 `json:"id"`
	// Path is the checkpoint's external path.
	Path string `json:"path"`
	// JobID is the job that took it.
	JobID string `json:"jobID"`
	// ObservedAt is when the operator first saw it; it orders checkpoints
	// against savepoints on the operator's clock.
	ObservedAt metav1.Time `json:"observedAt"`
}

// UpgradePhase is a step of an upgrade.
// +kubebuilder:validation:Enum=SavingState;Deploying;Verifying;RollingBack
type UpgradePhase string

const (
	UpgradeSavingState UpgradePhase = "SavingState"
	UpgradeDeploying   UpgradePhase = "Deploying"
	UpgradeVerifying   UpgradePhase = "Verifying"
	UpgradeRollingBack UpgradePhase = "RollingBack"
)

// UpgradeStatus is an upgrade in flight.
type UpgradeStatus struct {
	// Phase of the upgrade.
	Phase UpgradePhase `json:"phase"`
	// Kind of change: ConfigRoll or Upgrade.
	Kind string `json:"kind"`
	// TargetGeneration is the generation being rolled out.
	TargetGeneration int64 `json:"targetGeneration"`
	// StartedAt is when the upgrade started.
	StartedAt metav1.Time `json:"startedAt"`
	// PhaseStartedAt is when the current phase started; deadlines count from it.
	PhaseStartedAt metav1.Time `json:"phaseStartedAt"`
	// RestorePath is the savepoint or checkpoint the job is restored from.
	// +optional
	RestorePath string `json:"restorePath,omitempty"`
	// RollbackPath is the state a rollback returns to: the state of the
	// last stable spec's job, saved when the upgrade stopped it. A new spec
	// during the upgrade keeps it (restorePath then moves on to the state
	// of the job it stops). Empty means restorePath.
	// +optional
	RollbackPath string `json:"rollbackPath,omitempty"`
	// CheckpointsAtRestore is the completed-checkpoint count when the job
	// was restored; the stability gate counts from it.
	// +optional
	CheckpointsAtRestore int64 `json:"checkpointsAtRestore,omitempty"`
}

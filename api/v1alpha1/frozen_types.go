package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The types below are v1alpha1's own, frozen as v1's were when v1alpha1
// stopped changing, so a change to api/v1 no longer changes the old API.
// Change them only to follow an admission rule built from the operator's
// capabilities (supported Flink minors, owned configuration keys), which
// both versions carry (internal/flink's TestCRDCarriesTheGeneratedRules);
// config/crd/testdata/schemas/v1alpha1.yaml shows any change in review.
// Fields added to v1 later reach v1alpha1 objects through the conversion's
// annotation (conversion.go), not through these types.

// FlinkConfiguration is extra Flink settings, by key. The owned-key rule
// is built by flink.OwnedKeysRule from flink.OwnedKeys; a test holds the
// CRD to it.
// +kubebuilder:validation:MaxProperties=64
// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['jobmanager.rpc.address', 'jobmanager.rpc.port', 'jobmanager.rpc.bind-port', 'jobmanager.bind-host', 'blob.server.port', 'rest.port', 'rest.bind-port', 'rest.address', 'rest.bind-address', 'web.port', 'web.address', 'jobmanager.web.address', 'jobmanager.web.port', 'taskmanager.bind-host', 'taskmanager.rpc.port', 'taskmanager.rpc.bind-port', 'taskmanager.numberOfTaskSlots', 'jobmanager.memory.process.size', 'taskmanager.memory.process.size', 'execution.checkpointing.interval', 'execution.checkpointing.num-retained', 'state.checkpoints.num-retained', 'execution.checkpointing.dir', 'state.checkpoints.dir', 'state.backend.fs.checkpointdir', 'execution.checkpointing.savepoint-dir', 'state.savepoints.dir', 'savepoints.state.backend.fs.dir', 'kubernetes.cluster-id', 'kubernetes.namespace', 'job-result-store.delete-on-commit'] || k.startsWith('high-availability') || k.startsWith('recovery.'))",messageExpression="'spec.flinkConfiguration must not set ' + self.filter(k, k in ['jobmanager.rpc.address', 'jobmanager.rpc.port', 'jobmanager.rpc.bind-port', 'jobmanager.bind-host', 'blob.server.port', 'rest.port', 'rest.bind-port', 'rest.address', 'rest.bind-address', 'web.port', 'web.address', 'jobmanager.web.address', 'jobmanager.web.port', 'taskmanager.bind-host', 'taskmanager.rpc.port', 'taskmanager.rpc.bind-port', 'taskmanager.numberOfTaskSlots', 'jobmanager.memory.process.size', 'taskmanager.memory.process.size', 'execution.checkpointing.interval', 'execution.checkpointing.num-retained', 'state.checkpoints.num-retained', 'execution.checkpointing.dir', 'state.checkpoints.dir', 'state.backend.fs.checkpointdir', 'execution.checkpointing.savepoint-dir', 'state.savepoints.dir', 'savepoints.state.backend.fs.dir', 'kubernetes.cluster-id', 'kubernetes.namespace', 'job-result-store.delete-on-commit'] || k.startsWith('high-availability') || k.startsWith('recovery.'))[0] + ': the operator renders it from the spec (addresses, ports, slots, memory, checkpointing, storage, high availability); use the dedicated spec fields'"
// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['execution.savepoint.path', 'execution.state-recovery.path', 'execution.savepoint-restore-mode', 'execution.state-recovery.claim-mode', 'execution.savepoint.ignore-unclaimed-state', 'execution.state-recovery.ignore-unclaimed-state', 'execution.checkpointing.externalized-checkpoint-retention'])",messageExpression="'spec.flinkConfiguration must not set ' + self.filter(k, k in ['execution.savepoint.path', 'execution.state-recovery.path', 'execution.savepoint-restore-mode', 'execution.state-recovery.claim-mode', 'execution.savepoint.ignore-unclaimed-state', 'execution.state-recovery.ignore-unclaimed-state', 'execution.checkpointing.externalized-checkpoint-retention'])[0] + ': it decides which savepoint or checkpoint the job restores from, or lets Flink delete one the operator recorded to restore or roll back from; the operator sets it (the claim mode is always NO_CLAIM); use spec.job.initialSavepointPath and spec.job.allowNonRestoredState'"
// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253)",message="spec.flinkConfiguration keys must be at most 253 characters"
// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z][A-Za-z0-9_-]*([.][A-Za-z0-9_-]+)+$'))",messageExpression="'spec.flinkConfiguration keys are dotted Flink option names (letters, digits, _ and -, such as state.backend.type); refused: ' + self.filter(k, !k.matches('^[A-Za-z][A-Za-z0-9_-]*([.][A-Za-z0-9_-]+)+$'))[0]"
// +kubebuilder:validation:XValidation:rule="!self.exists(k, self[k].matches('[[:cntrl:]]'))",messageExpression="'spec.flinkConfiguration values must be one line without control characters (a newline would inject lines into the configuration file); refused: ' + self.filter(k, self[k].matches('[[:cntrl:]]'))[0]"
type FlinkConfiguration map[string]ConfigValue

// ConfigValue is one Flink setting's value, as Flink reads it. Its bound
// keeps the admission rules on spec.flinkConfiguration within the API
// server's cost budget.
// +kubebuilder:validation:MaxLength=4096
type ConfigValue string

// JobManagerSpec is the JobManager tier.
type JobManagerSpec struct {
	// Replicas of the JobManager. More than one requires high availability.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Resources of the JobManager container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Spread of the JobManagers of a highly available cluster over nodes:
	// preferred (the default) asks the scheduler for different nodes, and
	// different zones where the nodes carry topology.kubernetes.io/zone;
	// required insists on different nodes (a JobManager stays Pending
	// without a free node); none leaves placement to the scheduler.
	// +optional
	Spread Spread `json:"spread,omitempty"`

	// PodTemplate is merged over the JobManager pods the operator builds:
	// scheduling, labels and annotations, environment, volumes, sidecars.
	// The Flink container is the one named jobmanager.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.containers) || self.spec.containers.all(c, c.name != 'taskmanager')",message="spec.containers: taskmanager is the Flink container of the TaskManager pods; in a JobManager pod template the Flink container is jobmanager"
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// TaskManagerSpec is the TaskManager tier.
type TaskManagerSpec struct {
	// Replicas of the TaskManager. Scaled through the scale subresource too.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas"`

	// Slots per TaskManager (taskmanager.numberOfTaskSlots).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +kubebuilder:default=1
	// +optional
	Slots int32 `json:"slots,omitempty"`

	// Resources of the TaskManager container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Storage gives each TaskManager a PersistentVolumeClaim for local state
	// (RocksDB, spill files). Without it they use an emptyDir. The claims are
	// deleted with the FlinkCluster.
	// +optional
	Storage *TaskManagerStorage `json:"storage,omitempty"`

	// Spread of the TaskManagers over nodes, by a topology spread
	// constraint on kubernetes.io/hostname with a skew of at most one:
	// preferred (the default) schedules anyway when the spread cannot be
	// kept; required does not schedule a TaskManager that would break it;
	// none leaves placement to the scheduler.
	// +optional
	Spread Spread `json:"spread,omitempty"`

	// PodTemplate is merged over the TaskManager pods the operator builds:
	// scheduling, labels and annotations, environment, volumes, sidecars.
	// The Flink container is the one named taskmanager.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.containers) || self.spec.containers.all(c, c.name != 'jobmanager')",message="spec.containers: jobmanager is the Flink container of the JobManager pods; in a TaskManager pod template the Flink container is taskmanager"
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// TaskManagerStorage sizes the TaskManagers' local-state volumes.
type TaskManagerStorage struct {
	// Size of each TaskManager's volume.
	Size resource.Quantity `json:"size"`

	// StorageClassName of the claims; the cluster default when empty.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// HighAvailabilityMode selects the JobManager HA services.
// +kubebuilder:validation:Enum=none;zookeeper;kubernetes
type HighAvailabilityMode string

// HighAvailabilitySpec configures JobManager high availability.
// +kubebuilder:validation:XValidation:rule="self.mode != 'zookeeper' || (has(self.zookeeper) && size(self.zookeeper.connectString) > 0)",message="spec.highAvailability.zookeeper.connectString is required when spec.highAvailability.mode is zookeeper"
// +kubebuilder:validation:XValidation:rule="self.mode == 'zookeeper' || !has(self.zookeeper)",message="spec.highAvailability.zookeeper is only allowed when spec.highAvailability.mode is zookeeper"
type HighAvailabilitySpec struct {
	// Mode of high availability.
	Mode HighAvailabilityMode `json:"mode"`

	// Zookeeper settings, required for mode zookeeper.
	// +optional
	Zookeeper *ZookeeperSpec `json:"zookeeper,omitempty"`

	// StorageDir is where JobManager metadata is persisted for recovery
	// (high-availability.storageDir), a URI such as s3://bucket/flink/ha.
	// Defaults to <storage>/<namespace>/<name>/ha (spec.storage or the
	// platform's default); every JobManager must be able to read it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://.+`
	StorageDir string `json:"storageDir,omitempty"`
}

// ZookeeperSpec locates the ZooKeeper ensemble.
type ZookeeperSpec struct {
	// ConnectString is the ZooKeeper quorum, such as zookeeper:2181.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	ConnectString string `json:"connectString"`
}

// CheckpointingSpec configures checkpoints.
type CheckpointingSpec struct {
	// Interval between checkpoints, as a duration string such as 30s or 5m.
	// The operator maps it to the right key for the Flink version.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms')",message="spec.checkpointing.interval must be at least 100ms"
	Interval string `json:"interval"`

	// Retention is how many completed checkpoints Flink keeps.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Retention int32 `json:"retention,omitempty"`

	// CheckpointsDir is where checkpoints are written, a URI such as
	// s3://bucket/flink/checkpoints. Defaults to
	// <storage>/<namespace>/<name>/checkpoints.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://.+`
	CheckpointsDir string `json:"checkpointsDir,omitempty"`

	// SavepointsDir is where savepoints are written, a URI. Defaults to
	// <storage>/<namespace>/<name>/savepoints.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://.+`
	SavepointsDir string `json:"savepointsDir,omitempty"`
}

// StorageSpec is shared storage that every JobManager and TaskManager of a
// cluster reads and writes, and that outlives them.
// +kubebuilder:validation:XValidation:rule="has(self.uri) != has(self.claimName)",message="spec.storage needs exactly one of uri and claimName"
type StorageSpec struct {
	// URI of an object store or distributed filesystem, such as
	// s3://bucket/flink, gs://bucket/flink, abfss://container@account.dfs.core.windows.net/flink
	// or hdfs://namenode/flink. With the default image the operator enables
	// Flink's filesystem plugin for s3, gs, abfs(s)/wasb(s) and oss.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://.+`
	// +kubebuilder:validation:XValidation:rule="!self.lowerAscii().startsWith('file:')",message="spec.storage.uri must be shared storage (s3://, gs://, abfss://, hdfs://, ...), not a file:// path on each pod's own disk; for a shared volume use spec.storage.claimName"
	URI string `json:"uri,omitempty"`

	// ClaimName is an existing ReadWriteMany PersistentVolumeClaim in the
	// cluster's namespace, mounted at /flink-shared in every JobManager and
	// TaskManager.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ClaimName string `json:"claimName,omitempty"`
}

// KafkaTLS configures TLS to Kafka.
type KafkaTLS struct {
	// Enabled turns TLS on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// SecretRef names a Secret holding the TLS material (ca.crt, tls.crt,
	// tls.key); it is mounted into the Flink pods.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// KafkaSASL configures SASL to Kafka.
type KafkaSASL struct {
	// SecretRef names a Secret holding the SASL JAAS settings; it is mounted
	// into the Flink pods.
	SecretRef SecretReference `json:"secretRef"`
}

// SecretReference names a Secret in the FlinkCluster's namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Phase is a one-word summary; the conditions carry the detail.
// +kubebuilder:validation:Enum=Pending;Running;Scaling;Updating;Degraded;Terminating
type Phase string

// ComponentStatus counts the pods of one tier.
type ComponentStatus struct {
	// Replicas is the number of pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Ready is ready/desired, for display.
	// +optional
	Ready string `json:"ready,omitempty"`
}

// FlinkClusterStatus is what the operator observed.
type FlinkClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarises the conditions.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Conditions: Available, Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// JobManager pod counts.
	// +optional
	JobManager ComponentStatus `json:"jobManager,omitempty"`

	// TaskManager pod counts; replicas backs the scale subresource.
	// +optional
	TaskManager ComponentStatus `json:"taskManager,omitempty"`

	// Selector of the TaskManager pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ConfigHash is the hash of the rendered Flink configuration the pods run.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// Job is what the operator knows of spec.job.
	// +optional
	Job *JobStatus `json:"job,omitempty"`

	// Upgrade is the upgrade in flight, if any.
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`

	// DeployedSpec is the spec the running children were built from. While
	// an upgrade makes state safe it still holds the old spec.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	DeployedSpec *runtime.RawExtension `json:"deployedSpec,omitempty"`

	// LastStableSpec is the last spec that passed the upgrade gate; a
	// rollback returns to it.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	LastStableSpec *runtime.RawExtension `json:"lastStableSpec,omitempty"`

	// LastFailedGeneration is the generation whose upgrade failed or was
	// rolled back; it is not retried until the spec changes again.
	// +optional
	LastFailedGeneration int64 `json:"lastFailedGeneration,omitempty"`
}

// JobState is the state the user wants the job in.
// +kubebuilder:validation:Enum=running;suspended
type JobState string

// UpgradeMode says how the job's state crosses a restart.
// +kubebuilder:validation:Enum=stateless;savepoint;last-state
type UpgradeMode string

// JobSpec is the one job a cluster runs. Without it the cluster is a
// session cluster and jobs are the users' business.
type JobSpec struct {
	// JarURI is where the job's jar is fetched from (http or https); the
	// operator uploads it to the JobManager.
	// +kubebuilder:validation:Pattern=`^https?://.+`
	// +kubebuilder:validation:MaxLength=2048
	JarURI string `json:"jarURI"`

	// EntryClass is the job's main class; the jar's manifest when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	EntryClass string `json:"entryClass,omitempty"`

	// Args are the program arguments.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	Args []string `json:"args,omitempty"`

	// Parallelism of the job; the cluster's slots when zero.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32768
	Parallelism int32 `json:"parallelism,omitempty"`

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
	// CheckpointsCompleted is Flink's count of completed checkpoints.
	// +optional
	CheckpointsCompleted int64 `json:"checkpointsCompleted,omitempty"`
	// LastCheckpoint is the job's latest completed checkpoint the operator
	// saw. A job lost with its JobManager restores from the newer of it and
	// the last savepoint, never from less.
	// +optional
	LastCheckpoint *CheckpointInfo `json:"lastCheckpoint,omitempty"`
	// FailureCause is Flink's root exception of a FAILED job.
	// +optional
	FailureCause string `json:"failureCause,omitempty"`
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
	// RestorePath is the savepoint or checkpoint the job is restored from,
	// and the one a rollback returns to.
	// +optional
	RestorePath string `json:"restorePath,omitempty"`
	// CheckpointsAtRestore is the completed-checkpoint count when the job
	// was restored; the stability gate counts from it.
	// +optional
	CheckpointsAtRestore int64 `json:"checkpointsAtRestore,omitempty"`
}

// Spread says how strictly the pods of one component are spread over nodes.
// +kubebuilder:validation:Enum=preferred;required;none
type Spread string

// PodTemplate is a partial pod template, merged over the pods the operator
// builds for one component with the semantics of a strategic merge patch
// (kubectl patch --type strategic): maps merge, containers, init
// containers, volumes and environment variables merge by name, volume
// mounts by mount path, topology spread constraints by topology key, and
// other lists (tolerations, affinity terms) replace the operator's. The
// fields are those of a Pod (kubectl explain pod.spec documents them).
//
// The Flink container (jobmanager or taskmanager) takes environment
// variables, envFrom, volume mounts, a security context and lifecycle
// hooks from the template; its command, args, image, imagePullPolicy,
// ports, probes and resources are the operator's and refused here. The
// operator's own volumes and mounts (the configuration at /opt/flink/conf,
// /flink-data, /flink-shared, /tmp, /opt/flink/log, the Kafka secrets, the
// plugin directories) and its POD_IP variable win over a template entry of
// the same mount path or name.
type PodTemplate struct {
	// Metadata adds labels and annotations to the pods.
	// +optional
	Metadata PodTemplateMetadata `json:"metadata,omitempty"`

	// Spec is merged over the pod spec the operator builds.
	// +optional
	Spec PodTemplateSpec `json:"spec,omitempty"`
}

// PodTemplateMetadata is the pods' extra labels and annotations.
type PodTemplateMetadata struct {
	// Labels added to the pods. The app.kubernetes.io labels that the
	// operator's selectors use are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/version'])",messageExpression="'labels: ' + self.filter(k, k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/version'])[0] + ' is set by the operator, whose selectors and Services use it'"
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations added to the pods. Keys under data.example.com/ are the
	// operator's and refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k.startsWith('data.example.com/'))",messageExpression="'annotations: ' + self.filter(k, k.startsWith('data.example.com/'))[0] + ' is under data.example.com/, which the operator owns'"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodTemplateSpec is the part of a pod's spec a template may set.
type PodTemplateSpec struct {
	// NodeSelector the pods must match, such as a dedicated node pool.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the pods, such as the taint of a dedicated node pool.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the pods. Merged field by field over the operator's
	// spread: a nodeAffinity is added to it; a podAntiAffinity term list
	// of the same kind replaces the operator's.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints added to the operator's; one on the same
	// topology key replaces the operator's.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ImagePullSecrets for the images of the pods (the Flink image and
	// sidecars).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// SecurityContext of the pods, merged field by field over the
	// operator's (the flink user, UID 9999, non-root, RuntimeDefault
	// seccomp): for an image whose Flink runs as another user, say.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// InitContainers added to the pods (a sidecar with restartPolicy
	// Always, or a step before Flink starts).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']))",message="initContainers: jobmanager and taskmanager are the names of the Flink containers"
	InitContainers []corev1.Container `json:"initContainers,omitempty"`

	// Containers: sidecars, and the Flink container (jobmanager or
	// taskmanager) to merge environment, volume mounts and a security
	// context into.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.command)))",message="containers: command must not be set on the Flink container (jobmanager or taskmanager): the operator starts Flink through the image entrypoint"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.args)))",message="containers: args must not be set on the Flink container (jobmanager or taskmanager): the operator passes the entrypoint its jobmanager or taskmanager arguments"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.image)))",message="containers: image must not be set on the Flink container (jobmanager or taskmanager): set spec.image"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.imagePullPolicy)))",message="containers: imagePullPolicy must not be set on the Flink container (jobmanager or taskmanager): set spec.imagePullPolicy"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.ports)))",message="containers: ports must not be set on the Flink container (jobmanager or taskmanager): the operator declares the Flink ports its Services and probes use"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.livenessProbe)))",message="containers: livenessProbe must not be set on the Flink container (jobmanager or taskmanager): the operator probes Flink"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.readinessProbe)))",message="containers: readinessProbe must not be set on the Flink container (jobmanager or taskmanager): the operator probes Flink"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.startupProbe)))",message="containers: startupProbe must not be set on the Flink container (jobmanager or taskmanager): the operator probes Flink"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !(c.name in ['jobmanager', 'taskmanager']) || !(has(c.resources) && (has(c.resources.limits) || has(c.resources.requests) || has(c.resources.claims))))",message="containers: resources must not be set on the Flink container (jobmanager or taskmanager): set spec.jobManager.resources or spec.taskManager.resources, from which the operator sizes Flink memory"
	Containers []corev1.Container `json:"containers,omitempty"`

	// Volumes added to the pods. The names of the operator's own volumes
	// are refused.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self.all(v, !(v.name in ['flink-config', 'data', 'shared', 'kafka-tls', 'kafka-sasl', 'flink-tmp', 'flink-log', 'flink-plugins']))",message="volumes: flink-config, data, shared, kafka-tls, kafka-sasl, flink-tmp, flink-log and flink-plugins are the names of the volumes the operator mounts"
	Volumes []corev1.Volume `json:"volumes,omitempty"`
}

package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FlinkClusterSpec is the intent for one Flink cluster: its topology and its
// lifecycle. Everything else is Flink configuration, rendered by the operator
// into a ConfigMap; keep this struct small (the design's anti-pattern 1).
//
// +kubebuilder:validation:XValidation:rule="self.jobManager.replicas <= 1 || (has(self.highAvailability) && self.highAvailability.mode != 'none')",message="spec.jobManager.replicas greater than 1 requires spec.highAvailability.mode to be zookeeper or kubernetes"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || has(self.checkpointing) || (has(self.upgradePolicy) && has(self.upgradePolicy.stableCheckpoints) && self.upgradePolicy.stableCheckpoints == 0)",message="spec.job requires spec.checkpointing: the upgrade gate counts completed checkpoints (set spec.upgradePolicy.stableCheckpoints to 0 to run a job without them)"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || !has(self.job.upgradeMode) || self.job.upgradeMode != 'last-state' || has(self.checkpointing)",message="spec.job.upgradeMode last-state restores from checkpoints and requires spec.checkpointing"
// +kubebuilder:validation:XValidation:rule="!has(self.flinkConfiguration) || !self.version.matches('^(1[.](17|18))[.]') || !self.flinkConfiguration.exists(k, size(self.flinkConfiguration[k]) == 0 || self.flinkConfiguration[k].contains('#') || self.flinkConfiguration[k].startsWith(' ') || self.flinkConfiguration[k].endsWith(' '))",messageExpression="'spec.flinkConfiguration: Flink ' + self.version + ' reads flink-conf.yaml, which cannot carry an empty value, a value with #, or one that starts or ends with a space; refused: ' + self.flinkConfiguration.filter(k, size(self.flinkConfiguration[k]) == 0 || self.flinkConfiguration[k].contains('#') || self.flinkConfiguration[k].startsWith(' ') || self.flinkConfiguration[k].endsWith(' '))[0]"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || has(self.job)",message="spec.autoscaler requires spec.job: the autopilot sizes a job from its own metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.job) || self.autoscaler.mode != 'apply' || !has(self.job.upgradeMode) || self.job.upgradeMode != 'stateless'",message="spec.autoscaler.mode apply rescales by restarting the job from a savepoint or checkpoint; with spec.job.upgradeMode stateless each rescale would restart it without its state: use savepoint or last-state, or mode recommend"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.autoscaler.minParallelism) || !has(self.autoscaler.maxTaskManagers) || self.autoscaler.minParallelism <= self.autoscaler.maxTaskManagers * (has(self.taskManager.slots) ? self.taskManager.slots : 1)",message="spec.autoscaler.minParallelism needs more slots than spec.autoscaler.maxTaskManagers TaskManagers of spec.taskManager.slots slots hold"
// +kubebuilder:validation:XValidation:rule="!has(self.healing) || has(self.job)",message="spec.healing requires spec.job"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || !has(self.job.vertexParallelism) || size(self.job.vertexParallelism) == 0 || !self.version.matches('^1[.](17[.][0-9]+|18[.]0)$')",messageExpression="'spec.job.vertexParallelism: Flink ' + self.version + ' runs no vertex at a parallelism of its own from a submission (the pipeline.jobvertex-parallelism-overrides of a run request reach the job from 1.18.1, FLINK-33534); use spec.job.parallelism, or Flink 1.18.1 or later'"
type FlinkClusterSpec struct {
	// Version is the exact Flink version, such as 1.20.1, of a supported
	// minor: 1.17, 1.18, 1.19, 1.20, 2.0, 2.1 or 2.2. Fuzzy versions
	// (latest, 1.17) are refused: the operator picks configuration keys and
	// the default image by it.
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+\.[0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^(1[.](17|18|19|20)|2[.](0|1|2))[.][0-9]+$')",message="spec.version must be a release of a Flink minor Datapilot supports: 1.17 to 2.2 (1.17, 1.18, 1.19, 1.20, 2.0, 2.1, 2.2)"
	Version string `json:"version"`

	// Image is the Flink container image. Defaults to the official
	// flink:<version> image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\x00-\x20\x7f]+$`
	Image string `json:"image,omitempty"`

	// ImagePullPolicy for the Flink containers.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ServiceAccountName the JobManager and TaskManager pods run as. With
	// Kubernetes high availability and no name, the operator creates one
	// with the ConfigMap rights Flink's HA services need.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// JobManager is the Flink JobManager tier: one JobManager by default.
	// +optional
	// +kubebuilder:default={}
	JobManager JobManagerSpec `json:"jobManager"`

	// TaskManager is the Flink TaskManager tier: one TaskManager with one
	// slot by default.
	// +optional
	// +kubebuilder:default={}
	TaskManager TaskManagerSpec `json:"taskManager"`

	// Storage is where the state that must outlive a pod lives:
	// checkpoints, savepoints and high-availability metadata, each cluster
	// under <base>/<namespace>/<name>/. It overrides the platform's
	// default (the operator's STATE_STORAGE_URI or STATE_STORAGE_CLAIM).
	// Without either, that state is on each pod's own disk, and the
	// operator does not deploy what would lose it (high availability, or a
	// job whose upgrades restore state): see the SharedStorage condition.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// HighAvailability configures JobManager leader election and recovery.
	// +optional
	HighAvailability *HighAvailabilitySpec `json:"highAvailability,omitempty"`

	// Checkpointing configures periodic checkpoints and where state lives.
	// +optional
	Checkpointing *CheckpointingSpec `json:"checkpointing,omitempty"`

	// Kafka describes the Kafka cluster the jobs read and write. Secrets are
	// referenced, never inlined.
	// +optional
	Kafka *KafkaSpec `json:"kafka,omitempty"`

	// Job is the job the cluster runs, with its upgrade and savepoint
	// settings. Without it the cluster is a session cluster.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// UpgradePolicy says when an upgrade is stable and whether a failed one
	// rolls back by itself.
	// +optional
	UpgradePolicy *UpgradePolicy `json:"upgradePolicy,omitempty"`

	// Health tunes the three-level health checks.
	// +optional
	Health *HealthPolicy `json:"health,omitempty"`

	// Autoscaler turns the autopilot on: parallelism and TaskManagers
	// sized from the job's own Flink metrics (spec.job required).
	// +optional
	Autoscaler *AutoscalerSpec `json:"autoscaler,omitempty"`

	// Healing says how a failed, restart-looping or stalled job is
	// healed. Without it a FAILED job is restored up to 3 times, 30s
	// apart and doubling, and loops and stalls are reported.
	// +optional
	Healing *HealingSpec `json:"healing,omitempty"`

	// FlinkConfiguration holds extra Flink settings rendered into the
	// cluster's configuration file, each value read by Flink exactly as
	// written. Keys the operator owns (addresses, ports, slots, memory
	// process sizes, checkpointing, storage, high-availability.*, what a
	// job restores from and whether Flink may delete it: the savepoint
	// path, the claim mode, ignore-unclaimed-state and the checkpoint
	// retention; and their deprecated aliases) are refused; so are values
	// the minor's file format cannot carry (a control character such as a newline; in
	// flink-conf.yaml, before 1.19, also #, an empty value, or a leading
	// or trailing space).
	// +optional
	FlinkConfiguration FlinkConfiguration `json:"flinkConfiguration,omitempty"`
}

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
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// HighAvailabilityMode selects the JobManager HA services.
// +kubebuilder:validation:Enum=none;zookeeper;kubernetes
type HighAvailabilityMode string

const (
	HighAvailabilityNone       HighAvailabilityMode = "none"
	HighAvailabilityZookeeper  HighAvailabilityMode = "zookeeper"
	HighAvailabilityKubernetes HighAvailabilityMode = "kubernetes"
)

// HighAvailable: the spec runs its JobManagers with HA services.
func (s *FlinkClusterSpec) HighAvailable() bool {
	return s != nil && s.HighAvailability != nil && s.HighAvailability.Mode != HighAvailabilityNone
}

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
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://[^\x00-\x20\x7f#]+$`
	StorageDir string `json:"storageDir,omitempty"`
}

// ZookeeperSpec locates the ZooKeeper ensemble.
type ZookeeperSpec struct {
	// ConnectString is the ZooKeeper quorum, such as zookeeper:2181 or
	// zk-0:2181,zk-1:2181/flink (hosts, ports, an optional chroot).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._:,/\[\]-]+$`
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
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://[^\x00-\x20\x7f#]+$`
	CheckpointsDir string `json:"checkpointsDir,omitempty"`

	// SavepointsDir is where savepoints are written, a URI. Defaults to
	// <storage>/<namespace>/<name>/savepoints.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://[^\x00-\x20\x7f#]+$`
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
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9+.-]*://[^\x00-\x20\x7f#]+$`
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

// KafkaSpec locates Kafka. Credentials are only ever referenced.
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !self.tls.enabled || has(self.tls.secretRef)",message="spec.kafka.tls.secretRef is required when spec.kafka.tls.enabled is true"
type KafkaSpec struct {
	// Bootstrap servers of the Kafka cluster.
	Bootstrap KafkaBootstrap `json:"bootstrap"`

	// TLS to the brokers.
	// +optional
	TLS *KafkaTLS `json:"tls,omitempty"`

	// SASL credentials, by reference.
	// +optional
	SASL *KafkaSASL `json:"sasl,omitempty"`
}

// KafkaBootstrap lists the bootstrap servers.
type KafkaBootstrap struct {
	// Servers is a comma-separated host:port list.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]+$`
	Servers string `json:"servers"`
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
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
}

// Phase is a one-word summary; the conditions carry the detail.
// +kubebuilder:validation:Enum=Pending;Running;Scaling;Updating;Degraded;Terminating
type Phase string

const (
	PhasePending     Phase = "Pending"
	PhaseRunning     Phase = "Running"
	PhaseScaling     Phase = "Scaling"
	PhaseUpdating    Phase = "Updating"
	PhaseDegraded    Phase = "Degraded"
	PhaseTerminating Phase = "Terminating"
)

// Condition types.
const (
	// ConditionAvailable is True when the JobManager and every TaskManager
	// are ready.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the cluster moves towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the cluster failed to reach or keep the spec.
	ConditionDegraded = "Degraded"
	// ConditionJobManagerReady is the first health level: a JobManager pod is Ready.
	ConditionJobManagerReady = "JobManagerReady"
	// ConditionRestAvailable is the second: the Flink REST API answers.
	ConditionRestAvailable = "RestAvailable"
	// ConditionJobsRunning is the third: the jobs the cluster should run are RUNNING.
	ConditionJobsRunning = "JobsRunning"
	// ConditionUpgrading is True while a state-safe upgrade is in flight.
	ConditionUpgrading = "Upgrading"
	// ConditionRollingBack is True while a failed upgrade is rolled back.
	ConditionRollingBack = "RollingBack"
	// ConditionRolledBack is True when the cluster runs the last stable spec
	// because the newest one failed its gate.
	ConditionRolledBack = "RolledBack"
	// ConditionSharedStorage is True when checkpoints, savepoints and HA
	// metadata live on storage every pod shares and that outlives them.
	ConditionSharedStorage = "SharedStorage"
	// ConditionHighAvailabilityPermissions, with Kubernetes HA, is True when
	// the pods' ServiceAccount may use ConfigMaps as Flink's HA services do.
	ConditionHighAvailabilityPermissions = "HighAvailabilityPermissions"
	// ConditionStateHold is True while the state rule holds or refuses a
	// stop, cancel or replacement of the job (lifecycle.RestorePoint): the
	// reason says which condition of the rule is not met. Absent otherwise.
	ConditionStateHold = "StateHold"
	// ConditionDeletionBlocked is True while the finalizer holds a deleted
	// cluster until its job is stopped with a savepoint.
	ConditionDeletionBlocked = "DeletionBlocked"
	// ConditionJobSubmitted is False when a submission did not happen:
	// reason JarRefused when the operator refused to fetch
	// spec.job.jarURI (an address or name it never fetches from, or a jar
	// over its size limit), JobEndedUnseen when Flink refused to run the
	// recorded job again because it already ran and ended. Neither is
	// tried again until the spec changes, when the condition goes. Absent
	// otherwise.
	ConditionJobSubmitted = "JobSubmitted"
)

// Reasons of JobSubmitted=False.
const (
	ReasonJarRefused     = "JarRefused"
	ReasonJobEndedUnseen = "JobEndedUnseen"
)

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

	// Autoscaler is the autopilot's state and its last decisions.
	// +optional
	Autoscaler *AutoscalerStatus `json:"autoscaler,omitempty"`

	// Healing is what the operator did to heal the job.
	// +optional
	Healing *HealingStatus `json:"healing,omitempty"`

	// LastFailedGeneration is the generation whose upgrade failed or was
	// rolled back; it is not retried until the spec changes again.
	// +optional
	LastFailedGeneration int64 `json:"lastFailedGeneration,omitempty"`

	// HighAvailability is the identity the cluster's Flink HA services run
	// under, recorded when the operator first deploys the cluster and never
	// changed after: Flink finds its leader, job graphs and checkpoint
	// pointers under it.
	// +optional
	HighAvailability *HighAvailabilityStatus `json:"highAvailability,omitempty"`
}

// HighAvailabilityStatus is the identity of a cluster's HA data.
type HighAvailabilityStatus struct {
	// ClusterID is high-availability.cluster-id: the cluster's node in
	// ZooKeeper and its directory in high-availability.storageDir.
	ClusterID string `json:"clusterID"`
	// KubernetesClusterID is kubernetes.cluster-id: the name prefix and
	// the app label of Flink's HA ConfigMaps.
	KubernetesClusterID string `json:"kubernetesClusterID"`
}

// AnnotationDeleteWithoutSavepoint, set to "true" on a FlinkCluster being
// deleted, lets the deletion go on without the job's final savepoint: the
// finalizer otherwise holds it until the job is stopped with one (see
// ConditionDeletionBlocked).
const AnnotationDeleteWithoutSavepoint = "data.example.com/delete-without-savepoint"

// FlinkCluster is one Apache Flink cluster managed by Datapilot.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.taskManager.replicas,statuspath=.status.taskManager.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=fc,categories=datapilot
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="JobManagers",type=string,JSONPath=`.status.jobManager.ready`
// +kubebuilder:printcolumn:name="TaskManagers",type=string,JSONPath=`.status.taskManager.ready`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkClusterSpec   `json:"spec,omitempty"`
	Status FlinkClusterStatus `json:"status,omitempty"`
}

// FlinkClusterList is a list of FlinkClusters.
//
// +kubebuilder:object:root=true
type FlinkClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlinkCluster{}, &FlinkClusterList{})
}

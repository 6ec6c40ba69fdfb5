package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// FlinkClusterSpec is v1's spec in the v1alpha1 shape: the one difference is
// spec.kafka, whose bootstrap servers are the string bootstrapServers rather
// than the object bootstrap.servers. Every other field reuses v1's type, with
// v1's validation; so every v1 field has a v1alpha1 counterpart and the
// conversion needs no annotation to be lossless (see conversion.go).
//
// +kubebuilder:validation:XValidation:rule="self.jobManager.replicas <= 1 || (has(self.highAvailability) && self.highAvailability.mode != 'none')",message="spec.jobManager.replicas greater than 1 requires spec.highAvailability.mode to be zookeeper or kubernetes"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || has(self.checkpointing) || (has(self.upgradePolicy) && has(self.upgradePolicy.stableCheckpoints) && self.upgradePolicy.stableCheckpoints == 0)",message="spec.job requires spec.checkpointing: the upgrade gate counts completed checkpoints (set spec.upgradePolicy.stableCheckpoints to 0 to run a job without them)"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || !has(self.job.upgradeMode) || self.job.upgradeMode != 'last-state' || has(self.checkpointing)",message="spec.job.upgradeMode last-state restores from checkpoints and requires spec.checkpointing"
// +kubebuilder:validation:XValidation:rule="!has(self.flinkConfiguration) || !has(self.job) || !has(self.job.upgradeMode) || self.job.upgradeMode != 'last-state' || !('execution.checkpointing.externalized-checkpoint-retention' in self.flinkConfiguration)",message="spec.flinkConfiguration must not set execution.checkpointing.externalized-checkpoint-retention when spec.job.upgradeMode is last-state: the operator sets RETAIN_ON_CANCELLATION, so the checkpoint a last-state upgrade restores from survives the cancel"
// +kubebuilder:validation:XValidation:rule="!has(self.flinkConfiguration) || !self.version.matches('^(1[.](17|18))[.]') || !self.flinkConfiguration.exists(k, size(self.flinkConfiguration[k]) == 0 || self.flinkConfiguration[k].contains('#') || self.flinkConfiguration[k].startsWith(' ') || self.flinkConfiguration[k].endsWith(' '))",messageExpression="'spec.flinkConfiguration: Flink ' + self.version + ' reads flink-conf.yaml, which cannot carry an empty value, a value with #, or one that starts or ends with a space; refused: ' + self.flinkConfiguration.filter(k, size(self.flinkConfiguration[k]) == 0 || self.flinkConfiguration[k].contains('#') || self.flinkConfiguration[k].startsWith(' ') || self.flinkConfiguration[k].endsWith(' '))[0]"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || has(self.job)",message="spec.autoscaler requires spec.job: the autopilot sizes a job from its own metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.job) || self.autoscaler.mode != 'apply' || !has(self.job.upgradeMode) || self.job.upgradeMode != 'stateless'",message="spec.autoscaler.mode apply rescales by restarting the job from a savepoint or checkpoint; with spec.job.upgradeMode stateless each rescale would restart it without its state: use savepoint or last-state, or mode recommend"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaler) || !has(self.autoscaler.minParallelism) || !has(self.autoscaler.maxTaskManagers) || self.autoscaler.minParallelism <= self.autoscaler.maxTaskManagers * (has(self.taskManager.slots) ? self.taskManager.slots : 1)",message="spec.autoscaler.minParallelism needs more slots than spec.autoscaler.maxTaskManagers TaskManagers of spec.taskManager.slots slots hold"
// +kubebuilder:validation:XValidation:rule="!has(self.healing) || has(self.job)",message="spec.healing requires spec.job"
type FlinkClusterSpec struct {
	// Version is the exact Flink version, such as 1.17.1.
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+\.[0-9]+$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^(1[.](17|18|19|20)|2[.](0|1|2))[.][0-9]+$')",message="spec.version must be a release of a Flink minor Datapilot supports: 1.17 to 2.2 (1.17, 1.18, 1.19, 1.20, 2.0, 2.1, 2.2)"
	Version string `json:"version"`

	// Image is the Flink container image. Defaults to flink:<version>.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// ImagePullPolicy for the Flink containers.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ServiceAccountName the JobManager and TaskManager pods run as.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// JobManager is the Flink JobManager tier.
	// +optional
	// +kubebuilder:default={}
	JobManager v1.JobManagerSpec `json:"jobManager"`

	// TaskManager is the Flink TaskManager tier.
	// +optional
	// +kubebuilder:default={}
	TaskManager v1.TaskManagerSpec `json:"taskManager"`

	// Storage is shared storage for checkpoints, savepoints and HA metadata.
	// +optional
	Storage *v1.StorageSpec `json:"storage,omitempty"`

	// HighAvailability configures JobManager leader election and recovery.
	// +optional
	HighAvailability *v1.HighAvailabilitySpec `json:"highAvailability,omitempty"`

	// Checkpointing configures periodic checkpoints and where state lives.
	// +optional
	Checkpointing *v1.CheckpointingSpec `json:"checkpointing,omitempty"`

	// Kafka describes the Kafka cluster the jobs read and write, in the
	// v1alpha1 shape.
	// +optional
	Kafka *KafkaSpec `json:"kafka,omitempty"`

	// Job is the job the cluster runs; a session cluster without it.
	// +optional
	Job *v1.JobSpec `json:"job,omitempty"`

	// UpgradePolicy says when an upgrade is stable and whether a failed one
	// rolls back by itself.
	// +optional
	UpgradePolicy *v1.UpgradePolicy `json:"upgradePolicy,omitempty"`

	// Health tunes the three-level health checks.
	// +optional
	Health *v1.HealthPolicy `json:"health,omitempty"`

	// Autoscaler is v1's spec.autoscaler, carried unchanged.
	// +optional
	Autoscaler *v1.AutoscalerSpec `json:"autoscaler,omitempty"`

	// Healing is v1's spec.healing, carried unchanged.
	// +optional
	Healing *v1.HealingSpec `json:"healing,omitempty"`

	// FlinkConfiguration holds extra Flink settings; keys the operator owns
	// are refused, as in v1.
	// +optional
	FlinkConfiguration v1.FlinkConfiguration `json:"flinkConfiguration,omitempty"`
}

// KafkaSpec is v1alpha1's Kafka block: bootstrapServers is a plain string.
// v1 moved it to bootstrap.servers.
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !self.tls.enabled || has(self.tls.secretRef)",message="spec.kafka.tls.secretRef is required when spec.kafka.tls.enabled is true"
type KafkaSpec struct {
	// BootstrapServers is a comma-separated host:port list.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	BootstrapServers string `json:"bootstrapServers"`

	// TLS to the brokers.
	// +optional
	TLS *v1.KafkaTLS `json:"tls,omitempty"`

	// SASL credentials, by reference.
	// +optional
	SASL *v1.KafkaSASL `json:"sasl,omitempty"`
}

// FlinkCluster is one Apache Flink cluster, in the older v1alpha1 shape.
// Served for compatibility and converted to v1, the storage version.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.taskManager.replicas,statuspath=.status.taskManager.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=fc,categories=datapilot
// +kubebuilder:deprecatedversion:warning="data.example.com/v1alpha1 FlinkCluster is deprecated; use data.example.com/v1 (spec.kafka.bootstrapServers is spec.kafka.bootstrap.servers there)"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="JobManagers",type=string,JSONPath=`.status.jobManager.ready`
// +kubebuilder:printcolumn:name="TaskManagers",type=string,JSONPath=`.status.taskManager.ready`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec FlinkClusterSpec `json:"spec,omitempty"`
	// Status is v1's status: it has not changed shape.
	Status v1.FlinkClusterStatus `json:"status,omitempty"`
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

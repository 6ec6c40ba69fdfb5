package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkClusterSpec is the v1alpha1 spec. It differed from v1 when v1alpha1
// was frozen only in spec.kafka, whose bootstrap servers are the string
// bootstrapServers rather than the object bootstrap.servers. Its types are
// v1alpha1's own (frozen_types.go); a field v1 gained since is carried
// through v1alpha1 in an annotation (see conversion.go).
//
// +kubebuilder:validation:XValidation:rule="self.jobManager.replicas <= 1 || (has(self.highAvailability) && self.highAvailability.mode != 'none')",message="spec.jobManager.replicas greater than 1 requires spec.highAvailability.mode to be zookeeper or kubernetes"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || has(self.checkpointing) || (has(self.upgradePolicy) && has(self.upgradePolicy.stableCheckpoints) && self.upgradePolicy.stableCheckpoints == 0)",message="spec.job requires spec.checkpointing: the upgrade gate counts completed checkpoints (set spec.upgradePolicy.stableCheckpoints to 0 to run a job without them)"
// +kubebuilder:validation:XValidation:rule="!has(self.job) || !has(self.job.upgradeMode) || self.job.upgradeMode != 'last-state' || has(self.checkpointing)",message="spec.job.upgradeMode last-state restores from checkpoints and requires spec.checkpointing"
// +kubebuilder:validation:XValidation:rule="!has(self.flinkConfiguration) || !has(self.job) || !has(self.job.upgradeMode) || self.job.upgradeMode != 'last-state' || !('execution.checkpointing.externalized-checkpoint-retention' in self.flinkConfiguration)",message="spec.flinkConfiguration must not set execution.checkpointing.externalized-checkpoint-retention when spec.job.upgradeMode is last-state: the operator sets RETAIN_ON_CANCELLATION, so the checkpoint a last-state upgrade restores from survives the cancel"
// +kubebuilder:validation:XValidation:rule="!has(self.flinkConfiguration) || !self.version.matches('^(1[.](17|18))[.]') || !self.flinkConfiguration.exists(k, size(self.flinkConfiguration[k]) == 0 || self.flinkConfiguration[k].contains('#') || self.flinkConfiguration[k].startsWith(' ') || self.flinkConfiguration[k].endsWith(' '))",messageExpression="'spec.flinkConfiguration: Flink ' + self.version + ' reads flink-conf.yaml, which cannot carry an empty value, a value with #, or one that starts or ends with a space; refused: ' + self.flinkConfiguration.filter(k, size(self.flinkConfiguration[k]) == 0 || self.flinkConfiguration[k].contains('#') || self.flinkConfiguration[k].startsWith(' ') || self.flinkConfiguration[k].endsWith(' '))[0]"
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
	JobManager JobManagerSpec `json:"jobManager"`

	// TaskManager is the Flink TaskManager tier.
	// +optional
	// +kubebuilder:default={}
	TaskManager TaskManagerSpec `json:"taskManager"`

	// Storage is shared storage for checkpoints, savepoints and HA metadata.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// HighAvailability configures JobManager leader election and recovery.
	// +optional
	HighAvailability *HighAvailabilitySpec `json:"highAvailability,omitempty"`

	// Checkpointing configures periodic checkpoints and where state lives.
	// +optional
	Checkpointing *CheckpointingSpec `json:"checkpointing,omitempty"`

	// Kafka describes the Kafka cluster the jobs read and write, in the
	// v1alpha1 shape.
	// +optional
	Kafka *KafkaSpec `json:"kafka,omitempty"`

	// Job is the job the cluster runs; a session cluster without it.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// UpgradePolicy says when an upgrade is stable and whether a failed one
	// rolls back by itself.
	// +optional
	UpgradePolicy *UpgradePolicy `json:"upgradePolicy,omitempty"`

	// Health tunes the three-level health checks.
	// +optional
	Health *HealthPolicy `json:"health,omitempty"`

	// FlinkConfiguration holds extra Flink settings; keys the operator owns
	// are refused, as in v1.
	// +optional
	FlinkConfiguration FlinkConfiguration `json:"flinkConfiguration,omitempty"`
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
	TLS *KafkaTLS `json:"tls,omitempty"`

	// SASL credentials, by reference.
	// +optional
	SASL *KafkaSASL `json:"sasl,omitempty"`
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
	// Status is the status as it was when v1alpha1 was frozen.
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

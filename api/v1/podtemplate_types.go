package v1

import corev1 "k8s.io/api/core/v1"

// Spread says how strictly the pods of one component are spread over nodes.
// +kubebuilder:validation:Enum=preferred;required;none
type Spread string

const (
	// SpreadPreferred asks the scheduler to spread the pods, and schedules
	// them anyway when it cannot. The default.
	SpreadPreferred Spread = "preferred"
	// SpreadRequired does not schedule a pod that would break the spread.
	SpreadRequired Spread = "required"
	// SpreadNone leaves placement to the scheduler.
	SpreadNone Spread = "none"
)

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

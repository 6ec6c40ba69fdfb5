// Package resources builds the Kubernetes objects of one FlinkCluster. Every
// function here is pure: resolved inputs in, apply configurations out, no
// client and no clock, so the output can be golden-tested.
package resources

import (
	v1 "github.com/datapilot/datapilot/api/v1"
)

// Label keys and values on every child object.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelVersion   = "app.kubernetes.io/version"

	AppName   = "flink"
	ManagedBy = "datapilot"

	ComponentJobManager  = "jobmanager"
	ComponentTaskManager = "taskmanager"
	ComponentConfig      = "config"
	// ComponentHighAvailability labels the ServiceAccount, Role and
	// RoleBinding that Flink's Kubernetes HA services run with.
	ComponentHighAvailability = "high-availability"

	// AnnotationConfigHash on a pod template rolls the pods when the rendered
	// configuration changes.
	AnnotationConfigHash = "data.example.com/config-hash"
	// AnnotationSpecHash on a child records the hash of what the operator
	// last applied, so an unchanged child costs no write.
	AnnotationSpecHash = "data.example.com/spec-hash"
	// AnnotationTemplateHash on the JobManager Deployment and TaskManager
	// StatefulSet records the hash of their pod template alone.
	AnnotationTemplateHash = "data.example.com/template-hash"
)

// Ports the JobManager serves.
const (
	PortRPC  = 6123
	PortBlob = 6124
	PortREST = 8081
	// PortTaskManagerRPC is the TaskManagers' RPC port.
	PortTaskManagerRPC = 6122
)

// ConfigMapName is the name of the rendered Flink configuration.
func ConfigMapName(fc *v1.FlinkCluster) string { return fc.Name + "-config" }

// JobManagerName names the JobManager StatefulSet (an older cluster's
// Deployment) and its Service.
func JobManagerName(fc *v1.FlinkCluster) string { return fc.Name + "-jobmanager" }

// TaskManagerName names the TaskManager StatefulSet, its disruption budget
// and its serviceName (no Service by that name is created).
func TaskManagerName(fc *v1.FlinkCluster) string { return fc.Name + "-taskmanager" }

// HighAvailabilityName names the ServiceAccount, Role and RoleBinding the
// operator creates for a cluster with Kubernetes HA.
func HighAvailabilityName(fc *v1.FlinkCluster) string { return fc.Name + "-ha" }

// SelectorLabels select the pods of one component of one cluster. They never
// change over a cluster's life: selectors are immutable.
func SelectorLabels(clusterName, component string) map[string]string {
	return map[string]string{
		LabelName:      AppName,
		LabelInstance:  clusterName,
		LabelComponent: component,
		LabelManagedBy: ManagedBy,
	}
}

// Labels are the selector labels plus the Flink version.
func Labels(fc *v1.FlinkCluster, component string) map[string]string {
	l := SelectorLabels(fc.Name, component)
	l[LabelVersion] = fc.Spec.Version
	return l
}

package operator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/datapilot/datapilot/internal/controller"
)

// slimWorkloads is the cache transform of the JobManager and TaskManager
// StatefulSets (and older clusters' JobManager Deployments): it keeps what the operator reads of them and
// drops the pod spec, which is most of each object and read by nothing.
// The diff compares the spec and template hash annotations, drift the
// replica count, the change events the template's annotations and
// container images, status everything in status. Nothing writes a cached
// workload back: children are applied from what the operator builds.
func slimWorkloads() toolscache.TransformFunc {
	strip := stripManagedFields()
	return func(in any) (any, error) {
		switch o := in.(type) {
		case *appsv1.Deployment:
			o.Spec = appsv1.DeploymentSpec{Replicas: o.Spec.Replicas, Template: slimTemplate(o.Spec.Template)}
		case *appsv1.StatefulSet:
			o.Spec = appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas, Template: slimTemplate(o.Spec.Template)}
		}
		return strip(in)
	}
}

// stripManagedFields is the cache transform of every kind: managed fields
// are dropped, but for the name of the operator's own Update entry, which
// says a child created by POST has not had its fields taken over by the
// operator's apply yet (controller.CreatedFieldsPending).
func stripManagedFields() toolscache.TransformFunc {
	return func(in any) (any, error) {
		// As controller-runtime's TransformStripManagedFields: only an
		// object that has managed fields is touched (kubernetes#124337).
		if o, err := meta.Accessor(in); err == nil && o.GetManagedFields() != nil {
			controller.KeepCreatedFieldsEntry(o)
		}
		return in, nil
	}
}

func slimTemplate(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{}
	out.Annotations = t.Annotations
	for _, c := range t.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	return out
}

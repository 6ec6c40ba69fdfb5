package operator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// slimWorkloads is the cache transform of the JobManager Deployments and
// TaskManager StatefulSets: it keeps what the operator reads of them and
// drops the pod spec, which is most of each object and read by nothing.
// The diff compares the spec and template hash annotations, drift the
// replica count, the change events the template's annotations and
// container images, status everything in status. Nothing writes a cached
// workload back: children are applied from what the operator builds.
func slimWorkloads() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
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

func slimTemplate(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	out := corev1.PodTemplateSpec{}
	out.Annotations = t.Annotations
	for _, c := range t.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	return out
}

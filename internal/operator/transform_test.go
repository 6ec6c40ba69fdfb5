package operator

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/datapilot/datapilot/internal/resources"
)

func fullTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "flink"}, Annotations: map[string]string{resources.AnnotationConfigHash: "c1"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "flink", Image: "flink:1.17.2", Args: []string{"jobmanager"},
				Env:       []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Volumes: []corev1.Volume{{Name: "conf"}},
		},
	}
}

func workloadMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", Generation: 3,
		Annotations:   map[string]string{resources.AnnotationSpecHash: "s1", resources.AnnotationTemplateHash: "t1"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "datapilot"}},
	}
}

// TestSlimWorkloads: the cached workloads keep every field the operator
// reads (the hashes the diff compares, replicas for drift, the template's
// config hash and images for change events, status) and lose the rest.
func TestSlimWorkloads(t *testing.T) {
	tr := slimWorkloads()
	wantTemplate := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{resources.AnnotationConfigHash: "c1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "flink", Image: "flink:1.17.2"}}},
	}
	wantMeta := workloadMeta()
	wantMeta.ManagedFields = nil

	dep := &appsv1.Deployment{ObjectMeta: workloadMeta(),
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "flink"}},
			Template: fullTemplate(), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, ObservedGeneration: 3,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "NewReplicaSetAvailable"}}},
	}
	status := *dep.Status.DeepCopy()
	out, err := tr(dep)
	if err != nil {
		t.Fatal(err)
	}
	want := &appsv1.Deployment{ObjectMeta: wantMeta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: wantTemplate}, Status: status}
	if !equality.Semantic.DeepEqual(out, want) {
		t.Errorf("Deployment:\n got %+v\nwant %+v", out, want)
	}

	sts := &appsv1.StatefulSet{ObjectMeta: workloadMeta(),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), ServiceName: "tm", Template: fullTemplate(),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 2, UpdateRevision: "r2", CurrentRevision: "r1"},
	}
	stsStatus := *sts.Status.DeepCopy()
	out, err = tr(sts)
	if err != nil {
		t.Fatal(err)
	}
	wantSts := &appsv1.StatefulSet{ObjectMeta: wantMeta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Template: wantTemplate}, Status: stsStatus}
	if !equality.Semantic.DeepEqual(out, wantSts) {
		t.Errorf("StatefulSet:\n got %+v\nwant %+v", out, wantSts)
	}

	// Anything else only loses its managed fields.
	cm := &corev1.ConfigMap{ObjectMeta: workloadMeta(), Data: map[string]string{"k": "v"}}
	out, err = tr(cm)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*corev1.ConfigMap); got.ManagedFields != nil || got.Data["k"] != "v" {
		t.Errorf("ConfigMap: %+v", got)
	}
}

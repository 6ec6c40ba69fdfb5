package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/resources"
)

func TestDecide(t *testing.T) {
	sts := func(hash string, replicas int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{resources.AnnotationSpecHash: hash}},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)},
		}
	}
	drifted := func(o client.Object) bool { return replicasDiffer(o.(*appsv1.StatefulSet).Spec.Replicas, 12) }
	for _, tc := range []struct {
		name   string
		exists bool
		cached *appsv1.StatefulSet
		want   action
	}{
		{"missing", false, &appsv1.StatefulSet{}, actionCreate},
		{"unchanged", true, sts("h1", 12), actionNone},
		{"spec changed", true, sts("h0", 12), actionUpdate},
		{"scaled behind our back", true, sts("h1", 3), actionRepair},
	} {
		if got := decide(tc.exists, "h1", tc.cached, drifted); got != tc.want {
			t.Errorf("%s: decide = %q, want %q", tc.name, got, tc.want)
		}
	}
}

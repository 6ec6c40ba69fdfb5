package controller

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/lifecycle"
)

// TestOnlyCreatingWaits: the deferred write waits only for a cluster's
// first status that says nothing but Creating, right after this reconcile
// created its children; anything else is written at once.
func TestOnlyCreatingWaits(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name string
		edit func(*scope)
		want bool
	}{
		{"first status, children just created", func(*scope) {}, true},
		{"a status was written before", func(s *scope) { s.fc.Status.ObservedGeneration = 1 }, false},
		{"nothing created this reconcile", func(s *scope) { s.created = nil }, false},
		{"an apply failed", func(s *scope) { s.obs.applyErr = errTest }, false},
		{"the children are in the cache", func(s *scope) {
			s.obs.jobManager, s.obs.taskManager = &appsv1.Deployment{}, &appsv1.StatefulSet{}
		}, false},
		{"the step sends Flink a request", func(s *scope) { s.step.Action.Kind = lifecycle.ActSubmit }, false},
	} {
		fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "fc", Namespace: "ns", Generation: 1}}
		fc.Spec.TaskManager.Replicas = 2
		s := &scope{fc: fc, created: []string{"Deployment fc-jobmanager"}}
		tc.edit(s)
		st := computeStatus(fc, s.base(), s.obs, now)
		if got := onlyCreating(s, &st); got != tc.want {
			t.Errorf("%s: onlyCreating = %v, want %v (conditions %+v)", tc.name, got, tc.want, st.Conditions)
		}
	}
}

var errTest = errors.New("apply Deployment fc-jobmanager: forbidden")

package controller

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/workload"
)

// TestComingUpWaits: the deferred write waits only for a cluster's first
// status that says nothing but that it is coming up, while its workloads
// are younger than CreatingWait (their creation time in whole seconds, so
// a second more); anything else is written at once.
func TestComingUpWaits(t *testing.T) {
	created := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	workloads := func(s *scope) {
		s.created = nil
		s.obs.jobManager = workload.JobManager{StatefulSet: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1, CreationTimestamp: metav1.NewTime(created)}}}
		s.obs.taskManager = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1, CreationTimestamp: metav1.NewTime(created)}}
	}
	observed := func(s *scope) {
		workloads(s)
		s.obs.jmPods = readiness.Counts{Replicas: 1, Updated: 1, Observed: true}
		s.obs.tmPods = readiness.Counts{Replicas: 2, Updated: 2, Observed: true}
	}
	at := func(d time.Duration) func(*scope) { return func(s *scope) { s.now = created.Add(d) } }
	for _, tc := range []struct {
		name  string
		edits []func(*scope)
		want  time.Duration
	}{
		{"first status, children just created", nil, CreatingWait},
		{"a status was written before", []func(*scope){func(s *scope) { s.fc.Status.ObservedGeneration = 1 }}, 0},
		{"an apply failed", []func(*scope){func(s *scope) { s.obs.applyErr = errTest }}, 0},
		{"the step sends Flink a request", []func(*scope){func(s *scope) { s.step.Action.Kind = lifecycle.ActSubmit }}, 0},
		{"nothing created, not in the cache", []func(*scope){func(s *scope) { s.created = nil }}, 0},
		// Another reconcile (a workload's status changed, a pod turned
		// ready) before the wait is over waits for what is left of it.
		{"not yet observed, 300 ms after the create", []func(*scope){workloads, at(300 * time.Millisecond)}, time.Second + CreatingWait - 300*time.Millisecond},
		{"pods starting, 900 ms after", []func(*scope){observed, at(900 * time.Millisecond)}, time.Second + CreatingWait - 900*time.Millisecond},
		{"pods starting, the wait over", []func(*scope){observed, at(time.Second + CreatingWait)}, 0},
		{"the operator's clock behind the API server's", []func(*scope){observed, at(-time.Minute)}, time.Second + CreatingWait},
		{"Available", []func(*scope){observed, at(300 * time.Millisecond), func(s *scope) {
			s.obs.jmPods.Ready, s.obs.tmPods.Ready = 1, 2
		}}, 0},
	} {
		fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "fc", Namespace: "ns", Generation: 1}}
		fc.Spec.TaskManager.Replicas = 2
		s := &scope{fc: fc, created: []string{"Deployment fc-jobmanager"}, now: created}
		for _, e := range tc.edits {
			e(s)
		}
		st := computeStatus(fc, s.base(), s.obs, metav1.NewTime(s.now))
		if got := comingUp(s, &st); got != tc.want {
			t.Errorf("%s: comingUp = %v, want %v (conditions %+v)", tc.name, got, tc.want, st.Conditions)
		}
	}
}

var errTest = errors.New("apply Deployment fc-jobmanager: forbidden")

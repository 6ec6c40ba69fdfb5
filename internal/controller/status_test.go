package controller

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/health"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

func TestComputeStatus(t *testing.T) {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 4}}
	fc.Spec = v1.FlinkClusterSpec{Version: "1.17.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 3}}
	jm := func(ready int32) workload.JobManager {
		return workload.JobManager{StatefulSet: &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: ready, CurrentRevision: "j", UpdateRevision: "j"}}}
	}
	tm := func(replicas, ready int32, cur, upd string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: ready, CurrentRevision: cur, UpdateRevision: upd}}
	}
	restDown := &health.Verdict{
		Levels:   map[health.Level]health.LevelVerdict{health.LevelJobManager: {Status: metav1.ConditionTrue, Reason: "JobManagerReady"}, health.LevelRest: {Status: metav1.ConditionFalse, Reason: "RestUnavailable", Message: "Flink REST did not answer"}},
		Degraded: true, DegradedReason: "RestUnavailable", DegradedMessage: "Flink REST did not answer 3 times in a row",
	}
	for _, tc := range []struct {
		name                        string
		obs                         observed
		phase                       v1.Phase
		available, progressing, deg metav1.ConditionStatus
		reason                      string // of Progressing, or of Degraded when degraded
	}{
		{"creating", observed{}, v1.PhasePending, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, "Creating"},
		{"waiting for pods", observed{jobManager: jm(0), taskManager: tm(3, 0, "a", "a")}, v1.PhasePending, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, "WaitingForPods"},
		{"running", observed{jobManager: jm(1), taskManager: tm(3, 3, "a", "a")}, v1.PhaseRunning, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, "AllTaskManagersRegistered"},
		{"scaling", observed{jobManager: jm(1), taskManager: tm(2, 2, "a", "a")}, v1.PhaseScaling, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, "Scaling"},
		{"rolling", observed{jobManager: jm(1), taskManager: tm(3, 3, "a", "b")}, v1.PhaseUpdating, metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionFalse, "RollingUpdate"},
		{"apply failed", observed{jobManager: jm(1), taskManager: tm(3, 3, "a", "a"), applyErr: errors.New("apply StatefulSet demo-taskmanager: forbidden")}, v1.PhaseDegraded, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionTrue, "ApplyFailed"},
		{"REST failing", observed{jobManager: jm(1), taskManager: tm(3, 3, "a", "a"), health: restDown}, v1.PhaseDegraded, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, "RestUnavailable"},
		{"JobManager stuck", observed{jobManager: jm(0), taskManager: tm(3, 3, "a", "a"), jmStuck: "The JobManager pod demo-jobmanager-0 has not been ready for 10m0s."}, v1.PhaseDegraded, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionTrue, "JobManagerStuck"},
		{"an older cluster's JobManager Deployment being replaced", observed{jobManager: workload.JobManager{Deployment: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}}, taskManager: tm(3, 3, "a", "a")}, v1.PhaseUpdating, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, "RollingUpdate"},
		{"an older cluster's JobManager Deployment", observed{jobManager: workload.JobManager{Deployment: &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}}, taskManager: tm(3, 3, "a", "a")}, v1.PhaseRunning, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, "AllTaskManagersRegistered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.obs.countReady(nil)
			st := computeStatus(fc, &fc.Status, tc.obs, metav1.NewTime(time.Unix(1000, 0)))
			if st.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tc.phase)
			}
			for typ, want := range map[string]metav1.ConditionStatus{v1.ConditionAvailable: tc.available, v1.ConditionProgressing: tc.progressing, v1.ConditionDegraded: tc.deg} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil || c.Status != want || c.ObservedGeneration != 4 {
					t.Errorf("%s = %+v, want %s at generation 4", typ, c, want)
				}
			}
			reasonOf := v1.ConditionProgressing
			if tc.deg == metav1.ConditionTrue {
				reasonOf = v1.ConditionDegraded
			}
			if c := meta.FindStatusCondition(st.Conditions, reasonOf); c.Reason != tc.reason {
				t.Errorf("%s reason = %s, want %s", reasonOf, c.Reason, tc.reason)
			}
		})
	}
}

// TestComputeStatusIsStable shows that recomputing an unchanged status
// yields an identical one, which is what makes a converged cluster cost no
// status write.
func TestComputeStatusIsStable(t *testing.T) {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1}}
	fc.Spec.TaskManager.Replicas = 1
	obs := observed{jobManager: workload.JobManager{StatefulSet: &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}},
		taskManager: &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1}}}
	obs.countReady(nil)
	fc.Status = computeStatus(fc, &fc.Status, obs, metav1.NewTime(time.Unix(1000, 0)))
	again := computeStatus(fc, &fc.Status, obs, metav1.NewTime(time.Unix(2000, 0)))
	if !equality.Semantic.DeepEqual(fc.Status, again) {
		t.Errorf("status changed on recompute:\n%+v\n%+v", fc.Status, again)
	}
}

// TestComputeStatusCountsReadyPods: the pods the cache shows ready make the
// cluster Available and Running before the workloads' status says so, and
// the ready counts in status say the same.
func TestComputeStatusCountsReadyPods(t *testing.T) {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1}}
	fc.Spec = v1.FlinkClusterSpec{Version: "1.17.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 2}}
	jm := workload.JobManager{StatefulSet: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, CurrentRevision: "r", UpdateRevision: "r"}}}
	tm := &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: 2, UpdatedReplicas: 2, CurrentRevision: "r", UpdateRevision: "r"}}
	ready := func(component string) readiness.Pod {
		return readiness.Pod{Component: component, Revision: "r", Ready: true}
	}
	obs := observed{jobManager: jm, taskManager: tm}
	obs.countReady([]readiness.Pod{ready(resources.ComponentJobManager), ready(resources.ComponentTaskManager), ready(resources.ComponentTaskManager)})
	st := computeStatus(fc, &fc.Status, obs, metav1.NewTime(time.Unix(1000, 0)))
	if !meta.IsStatusConditionTrue(st.Conditions, v1.ConditionAvailable) || st.Phase != v1.PhaseRunning {
		t.Errorf("Available %v, phase %s; want True, Running", meta.FindStatusCondition(st.Conditions, v1.ConditionAvailable), st.Phase)
	}
	if st.JobManager.Ready != "1/1" || st.TaskManager.Ready != "2/2" || st.TaskManager.ReadyReplicas != 2 {
		t.Errorf("ready JobManagers %s, TaskManagers %s (%d); want 1/1, 2/2", st.JobManager.Ready, st.TaskManager.Ready, st.TaskManager.ReadyReplicas)
	}
}

// A job cluster's budget is due once a status said a TaskManager is ready
// or the cluster Available (a cluster of no TaskManagers can be); a
// session cluster's once Flink counted a job on it, whatever its status.
func TestBudgetDue(t *testing.T) {
	available := []metav1.Condition{{Type: v1.ConditionAvailable, Status: metav1.ConditionTrue}}
	notAvailable := []metav1.Condition{{Type: v1.ConditionAvailable, Status: metav1.ConditionFalse}}
	job := &v1.JobSpec{JarURI: "https://jars.example.com/job.jar"}
	runs, idle := &health.Verdict{RunsJobs: true}, &health.Verdict{}
	for _, tc := range []struct {
		name string
		job  *v1.JobSpec
		st   v1.FlinkClusterStatus
		v    *health.Verdict
		due  bool
	}{
		{"job cluster not observed yet", job, v1.FlinkClusterStatus{}, nil, false},
		{"job cluster's pods starting", job, v1.FlinkClusterStatus{Conditions: notAvailable, TaskManager: v1.ComponentStatus{Replicas: 2}}, nil, false},
		{"job cluster, one TaskManager of two ready", job, v1.FlinkClusterStatus{Conditions: notAvailable, TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 1}}, nil, true},
		{"job cluster Available", job, v1.FlinkClusterStatus{Conditions: available, TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2}}, nil, true},
		{"job cluster Available without TaskManagers", job, v1.FlinkClusterStatus{Conditions: available}, nil, true},
		{"session cluster Available, no verdict yet", nil, v1.FlinkClusterStatus{Conditions: available, TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2}}, nil, false},
		{"session cluster Available, running nothing", nil, v1.FlinkClusterStatus{Conditions: available, TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2}}, idle, false},
		{"session cluster running a job", nil, v1.FlinkClusterStatus{Conditions: available, TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2}}, runs, true},
		{"session cluster not Available, running a job", nil, v1.FlinkClusterStatus{Conditions: notAvailable, TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 1}}, runs, true},
	} {
		fc := &v1.FlinkCluster{Spec: v1.FlinkClusterSpec{Job: tc.job}, Status: tc.st}
		if got := budgetDue(fc, tc.v); got != tc.due {
			t.Errorf("%s: due %v, want %v", tc.name, got, tc.due)
		}
	}
}

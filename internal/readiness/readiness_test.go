package readiness

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

var created = metav1.NewTime(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))

// pod builds a pod of the component as the cache keeps it (Slim); opts
// change the whole pod first.
func pod(component string, ready bool, opts ...func(*corev1.Pod)) Pod {
	return *Slim(fullPod(component, ready, opts...))
}

func fullPod(component string, ready bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: component, CreationTimestamp: created,
		Labels: map[string]string{resources.LabelComponent: component, appsv1.ControllerRevisionHashLabelKey: "tm-new"},
	}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: status}}
	for _, o := range opts {
		o(&p)
	}
	return &p
}

func deleting(p *corev1.Pod)    { p.DeletionTimestamp = &metav1.Time{Time: created.Add(time.Minute)} }
func oldRevision(p *corev1.Pod) { p.Labels[appsv1.ControllerRevisionHashLabelKey] = "tm-old" }
func earlier(p *corev1.Pod)     { p.CreationTimestamp = metav1.NewTime(created.Add(-time.Second)) }

// at sets when the pod turned Ready (its Ready condition's transition), d
// after created.
func at(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(created.Add(d)) }
}

// deployment is an older cluster's JobManager, a Deployment.
func deployment(generation int64, ready int32) workload.JobManager {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: generation, CreationTimestamp: created}}
	d.Status.ReadyReplicas = ready
	return workload.JobManager{Deployment: d}
}

func statefulSet(updateRevision string, ready int32) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	s.Status.ReadyReplicas, s.Status.UpdateRevision, s.Status.ObservedGeneration = ready, updateRevision, 1
	return s
}

func TestJobManagers(t *testing.T) {
	jm := resources.ComponentJobManager
	for _, tc := range []struct {
		name string
		d    workload.JobManager
		pods []Pod
		want int32
	}{
		{"no Deployment", workload.JobManager{}, []Pod{pod(jm, true)}, 0},
		{"status alone", deployment(1, 1), nil, 1},
		{"its pod ready before its status says so", deployment(1, 0), []Pod{pod(jm, true)}, 1},
		{"status ahead of the cache's pods", deployment(1, 2), []Pod{pod(jm, true)}, 2},
		{"a pod not ready", deployment(1, 0), []Pod{pod(jm, false)}, 0},
		{"a ready pod being deleted", deployment(1, 0), []Pod{pod(jm, true, deleting)}, 0},
		{"a TaskManager pod is no JobManager", deployment(1, 0), []Pod{pod(resources.ComponentTaskManager, true)}, 0},
		// After its first change a Deployment does not say which of its
		// pods run the current template: a stale Ready pod of the old one
		// must not count.
		{"changed since created: status alone", deployment(2, 0), []Pod{pod(jm, true)}, 0},
		// A pod older than the Deployment is an earlier Deployment's,
		// not yet deleted by the garbage collector.
		{"a pod from before the Deployment", deployment(1, 0), []Pod{pod(jm, true, earlier)}, 0},
		{"being deleted", func() workload.JobManager {
			d := deployment(1, 1)
			d.Deployment.DeletionTimestamp = &metav1.Time{Time: created.Add(time.Minute)}
			return d
		}(), []Pod{pod(jm, true)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JobManagers(tc.d, tc.pods).Ready; got != tc.want {
				t.Errorf("JobManagers = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestJobManagerStatefulSet: a JobManager StatefulSet's pods count as the
// TaskManagers' do, by its update revision.
func TestJobManagerStatefulSet(t *testing.T) {
	jm := resources.ComponentJobManager
	sts := func(ready int32, opts ...func(*appsv1.StatefulSet)) workload.JobManager {
		s := statefulSet("tm-new", ready)
		for _, o := range opts {
			o(s)
		}
		return workload.JobManager{StatefulSet: s}
	}
	gone := func(s *appsv1.StatefulSet) { s.DeletionTimestamp = &metav1.Time{Time: created.Add(time.Minute)} }
	for _, tc := range []struct {
		name string
		jm   workload.JobManager
		pods []Pod
		want int32
	}{
		{"status alone", sts(1), nil, 1},
		{"its pod ready before its status says so", sts(0), []Pod{pod(jm, true)}, 1},
		{"a ready pod of the old revision", sts(0), []Pod{pod(jm, true, oldRevision)}, 0},
		{"a pod not ready", sts(0), []Pod{pod(jm, false)}, 0},
		{"a TaskManager pod is no JobManager", sts(0), []Pod{pod(resources.ComponentTaskManager, true)}, 0},
		{"being deleted", sts(1, gone), []Pod{pod(jm, true)}, 0},
		// An earlier StatefulSet's pod of the same name and template, not
		// yet deleted by the garbage collector.
		{"a pod from before the StatefulSet", sts(0, func(s *appsv1.StatefulSet) { s.CreationTimestamp = created }), []Pod{pod(jm, true, earlier)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JobManagers(tc.jm, tc.pods).Ready; got != tc.want {
				t.Errorf("JobManagers = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestJobManagerStuck: a Deployment says it by its condition; a
// StatefulSet's pod of the update revision unready for the deadline says
// it, and one that is not yet says when it would.
func TestJobManagerStuck(t *testing.T) {
	jm := resources.ComponentJobManager
	const deadline = 10 * time.Minute
	sts := workload.JobManager{StatefulSet: statefulSet("tm-new", 0)}
	unready := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(created.Add(d)) }
	}
	noReadyCondition := func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[:1] }
	deleted := func(d time.Duration) workload.JobManager {
		j := deployment(1, 0)
		j.Deployment.DeletionTimestamp = &metav1.Time{Time: created.Add(d)}
		return j
	}
	exceeded := deployment(2, 0)
	exceeded.Deployment.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet x has timed out progressing."}}
	for _, tc := range []struct {
		name  string
		jm    workload.JobManager
		pods  []Pod
		now   time.Duration // after created
		stuck bool
		wait  time.Duration
	}{
		{"Deployment: its condition", exceeded, nil, 0, true, 0},
		{"Deployment: no condition, whatever its pods", deployment(2, 0), []Pod{pod(jm, false, unready(0))}, time.Hour, false, 0},
		{"unready for the deadline", sts, []Pod{pod(jm, false, unready(0))}, deadline, true, 0},
		{"unready for less", sts, []Pod{pod(jm, false, unready(time.Minute))}, deadline, false, time.Minute},
		{"never had a Ready condition: from its creation", sts, []Pod{pod(jm, false, noReadyCondition)}, deadline + time.Second, true, 0},
		{"ready", sts, []Pod{pod(jm, true)}, time.Hour, false, 0},
		// Left by the StatefulSet controller of some Kubernetes versions
		// (kubernetes#137409).
		{"of the old revision", sts, []Pod{pod(jm, false, unready(0), oldRevision)}, time.Hour, true, 0},
		{"Deployment being deleted for the deadline", deleted(0), nil, deadline, true, 0},
		{"Deployment being deleted for less", deleted(time.Minute), nil, deadline, false, time.Minute},
		{"being deleted", sts, []Pod{pod(jm, false, unready(0), deleting)}, time.Hour, false, 0},
		{"a TaskManager", sts, []Pod{pod(resources.ComponentTaskManager, false, unready(0))}, time.Hour, false, 0},
		{"no workload", workload.JobManager{}, []Pod{pod(jm, false, unready(0))}, time.Hour, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, wait := JobManagerStuck(tc.jm, tc.pods, created.Add(tc.now), deadline)
			if (why != "") != tc.stuck || wait != tc.wait {
				t.Errorf("JobManagerStuck = %q, %v; want stuck %v, wait %v", why, wait, tc.stuck, tc.wait)
			}
		})
	}
}

func TestTaskManagers(t *testing.T) {
	tm := resources.ComponentTaskManager
	for _, tc := range []struct {
		name string
		s    *appsv1.StatefulSet
		pods []Pod
		want int32
	}{
		{"no StatefulSet", nil, []Pod{pod(tm, true)}, 0},
		{"status alone", statefulSet("tm-new", 2), nil, 2},
		{"pods of the update revision ready first", statefulSet("tm-new", 0), []Pod{pod(tm, true), pod(tm, true)}, 2},
		{"status ahead of the cache's pods", statefulSet("tm-new", 2), []Pod{pod(tm, true)}, 2},
		{"an old revision's ready pod does not count", statefulSet("tm-new", 0), []Pod{pod(tm, true, oldRevision), pod(tm, true)}, 1},
		{"no update revision observed yet: status alone", statefulSet("", 0), []Pod{pod(tm, true)}, 0},
		{"not ready, being deleted", statefulSet("tm-new", 0), []Pod{pod(tm, false), pod(tm, true, deleting)}, 0},
		{"a JobManager pod is no TaskManager", statefulSet("tm-new", 0), []Pod{pod(resources.ComponentJobManager, true)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TaskManagers(tc.s, tc.pods).Ready; got != tc.want {
				t.Errorf("TaskManagers = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestObserved: a workload's controller has observed its spec when its
// status says so; a JobManager's also when a pod of its first template
// exists, which its status says two hops later. A TaskManager pod of the
// update revision does not say its replica count was observed.
func TestObserved(t *testing.T) {
	jm, tm := resources.ComponentJobManager, resources.ComponentTaskManager
	observedAt := func(generation int64) func(workload.JobManager) workload.JobManager {
		return func(d workload.JobManager) workload.JobManager {
			d.Deployment.Status.ObservedGeneration = generation
			return d
		}
	}
	for _, tc := range []struct {
		name string
		got  Counts
		want bool
	}{
		{"Deployment: status observed", JobManagers(observedAt(1)(deployment(1, 0)), nil), true},
		{"Deployment: status behind, no pod", JobManagers(deployment(1, 0), nil), false},
		{"Deployment: status behind, its pod not ready yet", JobManagers(deployment(1, 0), []Pod{pod(jm, false)}), true},
		{"Deployment: a pod from before it", JobManagers(deployment(1, 0), []Pod{pod(jm, true, earlier)}), false},
		{"Deployment changed: status behind, a pod", JobManagers(observedAt(1)(deployment(2, 0)), []Pod{pod(jm, true)}), false},
		{"Deployment changed: status observed", JobManagers(observedAt(2)(deployment(2, 0)), nil), true},
		{"StatefulSet: status behind, pods of its revision", TaskManagers(func() *appsv1.StatefulSet {
			s := statefulSet("tm-new", 0)
			s.Generation, s.Status.ObservedGeneration = 2, 1
			return s
		}(), []Pod{pod(tm, true)}), false},
		{"StatefulSet: status observed", TaskManagers(func() *appsv1.StatefulSet {
			s := statefulSet("tm-new", 0)
			s.Generation, s.Status.ObservedGeneration = 2, 2
			return s
		}(), nil), true},
	} {
		if tc.got.Observed != tc.want {
			t.Errorf("%s: Observed = %v, want %v", tc.name, tc.got.Observed, tc.want)
		}
	}
}

// TestSlimKeepsWhatIsCounted: the cache keeps of a pod what names it and
// what the counting reads, and nothing else.
func TestSlimKeepsWhatIsCounted(t *testing.T) {
	full := fullPod(resources.ComponentTaskManager, true, deleting)
	full.Namespace, full.UID, full.ResourceVersion = "data", "u1", "42"
	full.Labels[resources.LabelInstance] = "fc"
	full.Labels["team"] = "data"
	full.Annotations = map[string]string{"a": "b"}
	full.Spec.Containers = []corev1.Container{{Name: "taskmanager", Image: "flink:1.20"}}
	full.Status.PodIP = "10.0.0.1"
	full.Status.Conditions[1].LastTransitionTime = created
	want := Pod{
		ObjectMeta: metav1.ObjectMeta{Name: full.Name, Namespace: "data", UID: "u1", ResourceVersion: "42",
			CreationTimestamp: created, DeletionTimestamp: full.DeletionTimestamp},
		Cluster: "fc", Component: resources.ComponentTaskManager, Revision: "tm-new", Ready: true, ReadySince: created,
	}
	if got := Slim(full); !equality.Semantic.DeepEqual(*got, want) {
		t.Errorf("Slim = %+v, want %+v", *got, want)
	}
	notReady := fullPod(resources.ComponentTaskManager, false)
	notReady.Status.Conditions = append(notReady.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
	if Slim(notReady).Ready {
		t.Errorf("a pod whose Ready condition is False is kept as ready")
	}
	if Slim(&corev1.Pod{}).Ready {
		t.Errorf("a pod without conditions is kept as ready")
	}
}

// TestReadySince: the earliest time a counted pod turned ready; a pod not
// ready, not current or being deleted says nothing, nor does a status.
func TestReadySince(t *testing.T) {
	tm, jm := resources.ComponentTaskManager, resources.ComponentJobManager
	for _, tc := range []struct {
		name string
		got  Counts
		want time.Time
	}{
		{"the earlier of two ready pods", TaskManagers(statefulSet("tm-new", 0), []Pod{pod(tm, true, at(2*time.Minute)), pod(tm, true, at(time.Minute))}), created.Add(time.Minute)},
		{"an old revision's pod says nothing", TaskManagers(statefulSet("tm-new", 0), []Pod{pod(tm, true, at(time.Minute), oldRevision), pod(tm, true, at(2*time.Minute))}), created.Add(2 * time.Minute)},
		{"a pod not ready says nothing", JobManagers(deployment(1, 0), []Pod{pod(jm, false, at(time.Minute))}), time.Time{}},
		{"a pod being deleted says nothing", JobManagers(deployment(1, 0), []Pod{pod(jm, true, at(time.Minute), deleting)}), time.Time{}},
		{"status alone says nothing", JobManagers(deployment(1, 1), nil), time.Time{}},
	} {
		if !tc.got.ReadySince.Equal(tc.want) {
			t.Errorf("%s: ReadySince = %v, want %v", tc.name, tc.got.ReadySince, tc.want)
		}
	}
}

// TestYoungestReady: the latest of the component's ready pods' transitions,
// whatever their revision; a pod not ready or being deleted says nothing.
func TestYoungestReady(t *testing.T) {
	tm, jm := resources.ComponentTaskManager, resources.ComponentJobManager
	for _, tc := range []struct {
		name string
		pods []Pod
		want time.Time
	}{
		{"the later of two ready pods", []Pod{pod(jm, true, at(time.Minute)), pod(jm, true, at(2*time.Minute))}, created.Add(2 * time.Minute)},
		{"an old revision's pod counts", []Pod{pod(jm, true, at(3*time.Minute), oldRevision), pod(jm, true, at(time.Minute))}, created.Add(3 * time.Minute)},
		{"another component's pod says nothing", []Pod{pod(tm, true, at(3*time.Minute)), pod(jm, true, at(time.Minute))}, created.Add(time.Minute)},
		{"a pod not ready says nothing", []Pod{pod(jm, false, at(2*time.Minute)), pod(jm, true, at(time.Minute))}, created.Add(time.Minute)},
		{"a pod being deleted says nothing", []Pod{pod(jm, true, at(2*time.Minute), deleting)}, time.Time{}},
		{"none", nil, time.Time{}},
	} {
		if got := YoungestReady(tc.pods, jm); !got.Equal(tc.want) {
			t.Errorf("%s: YoungestReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReplicasCountTheCurrentPods: a workload's pods that exist count
// before its status says so, ready or not, and the same pods as readiness
// counts (not an old revision's, not those being deleted).
func TestReplicasCountTheCurrentPods(t *testing.T) {
	tm := resources.ComponentTaskManager
	pods := []Pod{pod(tm, true), pod(tm, false), pod(tm, true, oldRevision), pod(tm, true, deleting)}
	if got, want := TaskManagers(statefulSet("tm-new", 0), pods), (Counts{Replicas: 2, Updated: 2, Ready: 1, Observed: true}); got != want {
		t.Errorf("TaskManagers = %+v, want %+v", got, want)
	}
	s := statefulSet("tm-new", 0)
	s.Status.Replicas = 3
	if got, want := TaskManagers(s, pods), (Counts{Replicas: 3, Updated: 2, Ready: 1, Observed: true}); got != want {
		t.Errorf("status ahead: TaskManagers = %+v, want %+v", got, want)
	}
	jm := resources.ComponentJobManager
	if got, want := JobManagers(deployment(1, 0), []Pod{pod(jm, false)}), (Counts{Replicas: 1, Updated: 1, Observed: true}); got != want {
		t.Errorf("JobManagers = %+v, want %+v", got, want)
	}
}

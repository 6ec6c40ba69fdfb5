package autopilot

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	clusterpolicy "github.com/datapilot/datapilot/internal/policy"
)

func TestRestartLoop(t *testing.T) {
	p := clusterpolicy.For(&v1.FlinkClusterSpec{}).Healing
	var h []Restarts
	for i, n := range []int64{0, 1, 1, 3, 4, 5} {
		h = AppendRestarts(h, Restarts{Time: t0.Add(time.Duration(i) * time.Minute), JobID: "j", Count: n}, p.LoopWindow)
	}
	if msg, ok := RestartLoop(h, p); !ok || !strings.Contains(msg, "restarted 5 times in 5m0s") {
		t.Fatalf("%q %v", msg, ok)
	}
	// Readings older than the window, or of another job, do not count.
	h = AppendRestarts(h, Restarts{Time: t0.Add(14 * time.Minute), JobID: "j", Count: 6}, p.LoopWindow)
	if msg, ok := RestartLoop(h, p); ok {
		t.Fatalf("outside the window: %q", msg)
	}
	h = AppendRestarts(h, Restarts{Time: t0.Add(15 * time.Minute), JobID: "k", Count: 0}, p.LoopWindow)
	if len(h) != 1 {
		t.Fatalf("another job kept %d readings", len(h))
	}
}

func TestCheckpointsStalled(t *testing.T) {
	p := clusterpolicy.For(&v1.FlinkClusterSpec{}).Healing
	started := t0
	for _, tc := range []struct {
		name string
		now  time.Time
		last time.Time
		want bool
		text string
	}{
		{"recent checkpoint", t0.Add(10 * time.Minute), t0.Add(9 * time.Minute), false, ""},
		{"three intervals without one", t0.Add(10 * time.Minute), t0.Add(7 * time.Minute), true, "since the last completed checkpoint"},
		{"none since the start", t0.Add(3 * time.Minute), time.Time{}, true, "since the job started running"},
		{"young job", t0.Add(time.Minute), time.Time{}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := CheckpointsStalled(tc.now, tc.last, started, time.Minute, p)
			if ok != tc.want || !strings.Contains(msg, tc.text) {
				t.Fatalf("%q %v", msg, ok)
			}
		})
	}
}

func node(name string, cpu, mem string, ready bool, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
}

func pod(nodeName, cpu, mem string) corev1.Pod {
	return corev1.Pod{Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func TestFit(t *testing.T) {
	needs := PodNeeds{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		NodeSelector: map[string]string{"pool": "flink"},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "flink", Effect: corev1.TaintEffectNoSchedule}}}
	taint := corev1.Taint{Key: "dedicated", Value: "flink", Effect: corev1.TaintEffectNoSchedule}
	nodes := []corev1.Node{
		node("a", "8", "32Gi", true, map[string]string{"pool": "flink"}, taint),                                                            // 4 by CPU, 2 used: 3
		node("b", "16", "8Gi", true, map[string]string{"pool": "flink"}),                                                                   // 2 by memory
		node("c", "64", "256Gi", true, map[string]string{"pool": "other"}),                                                                 // wrong pool
		node("d", "64", "256Gi", false, map[string]string{"pool": "flink"}),                                                                // not Ready
		node("e", "64", "256Gi", true, map[string]string{"pool": "flink"}, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}), // untolerated
	}
	pods := []corev1.Pod{pod("a", "2", "1Gi"), pod("c", "60", "1Gi")}
	got := Fit(nodes, pods, needs)
	if got.Fit != 5 || !strings.Contains(got.Why, "2 of 5 nodes eligible, room for 5") {
		t.Fatalf("%+v", got)
	}
	none := Fit(nodes[2:4], nil, needs)
	if none.Fit != 0 || !strings.Contains(none.Why, "no Ready, schedulable node") {
		t.Fatalf("%+v", none)
	}
}

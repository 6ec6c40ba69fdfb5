package resources

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// TestMemoryErrors: a cluster whose processes Flink would not start is
// refused on the field that sized them, with Flink's sizes and the user's
// memory keys that entered the derivation; the examples and the rendering
// fixtures start.
func TestMemoryErrors(t *testing.T) {
	cluster := func(tm, jm corev1.ResourceRequirements, conf v1.FlinkConfiguration) *v1.FlinkCluster {
		fc := &v1.FlinkCluster{}
		fc.Spec = v1.FlinkClusterSpec{Version: "1.19.1", JobManager: v1.JobManagerSpec{Replicas: 1, Resources: jm},
			TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2, Resources: tm}, FlinkConfiguration: conf}
		return fc
	}
	requests := func(memory string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}}
	}
	none := corev1.ResourceRequirements{}
	for _, tc := range []struct {
		name string
		fc   *v1.FlinkCluster
		want []string
	}{{
		name: "an 800Mi TaskManager limit",
		fc:   cluster(limits("800Mi", "1"), none, nil),
		want: []string{`spec.taskManager.resources.limits.memory: Invalid value: "800Mi": Flink 1.19.1 would refuse to start the TaskManager with taskmanager.memory.process.size 800m: Sum of configured Framework Heap Memory (128.000mb (134217728 bytes)), Framework Off-Heap Memory (128.000mb (134217728 bytes)), Task Off-Heap Memory (0 bytes), Managed Memory (140.800mb (147639503 bytes)) and Network Memory (64.000mb (67108864 bytes)) exceed configured Total Flink Memory (352.000mb (369098752 bytes)).`},
	}, {
		name: "a 500Mi JobManager request",
		fc:   cluster(none, requests("500Mi"), nil),
		want: []string{`spec.jobManager.resources.requests.memory: Invalid value: "500Mi": Flink 1.19.1 would refuse to start the JobManager with jobmanager.memory.process.size 500m: The configured Total Flink Memory (52.000mb (54525952 bytes)) is less than the configured Off-heap Memory (128.000mb (134217728 bytes)).`},
	}, {
		name: "the default size with a managed fraction that leaves no task heap",
		fc:   cluster(none, none, v1.FlinkConfiguration{"taskmanager.memory.managed.fraction": "0.9"}),
		want: []string{`spec.taskManager.resources.limits.memory: Invalid value: "unset, so the default 1728Mi": Flink 1.19.1 would refuse to start the TaskManager with taskmanager.memory.process.size 1728m and spec.flinkConfiguration's taskmanager.memory.managed.fraction=0.9: Sum of configured`},
	}, {
		name: "both refused",
		fc:   cluster(limits("400Mi", "1"), limits("400Mi", "1"), nil),
		want: []string{"spec.jobManager.resources.limits.memory", "spec.taskManager.resources.limits.memory"},
	}, {
		name: "fine-grained sizes that fit",
		fc:   cluster(limits("2Gi", "1"), none, v1.FlinkConfiguration{"taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"}),
	}, {
		name: "the defaults",
		fc:   cluster(none, none, nil),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			errs := MemoryErrors(tc.fc)
			if len(errs) != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for i, want := range tc.want {
				if got := errs[i].Error(); !strings.HasPrefix(got, want) {
					t.Errorf("error %q\nwant it to start %q", got, want)
				}
			}
		})
	}
	for _, name := range []string{"realtime-warehouse.yaml", "streaming-job.yaml", "dedicated-pool.yaml"} {
		if errs := MemoryErrors(loadExample(t, name)); len(errs) > 0 {
			t.Errorf("example %s refused: %v", name, errs)
		}
	}
	for name, f := range flinkRefFixtures("2.1.1") {
		if errs := MemoryErrors(f.fc); len(errs) > 0 {
			t.Errorf("fixture %s refused: %v", name, errs)
		}
	}
}

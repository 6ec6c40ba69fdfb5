package flinkmemory_test

import (
	"fmt"
	"testing"

	"github.com/datapilot/datapilot/internal/flinkmemory"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// TestAgreesWithTheSimulator: the simulator refuses to start a process
// whose memory Flink would refuse (flinksim's memory.go, written from
// Flink's classes on its own). Over a grid of process sizes and user
// settings, each of both minors' configuration files, the derivation here
// refuses exactly what the simulator's processes refuse. (Only settings
// the simulator models are in the grid: it does not check a fraction's
// range, for one.) The simulator is linked by this test only.
func TestAgreesWithTheSimulator(t *testing.T) {
	settings := []map[string]string{
		{},
		{"taskmanager.memory.managed.fraction": "0.9"},
		{"taskmanager.memory.task.heap.size": "1g"},
		{"taskmanager.memory.task.heap.size": "500m"},
		{"taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"},
		{"taskmanager.memory.flink.size": "1280m"},
		{"taskmanager.network.memory.min": "700m"},
		{"taskmanager.memory.jvm-metaspace.size": "600m"},
		{"jobmanager.memory.off-heap.size": "700m"},
		{"jobmanager.memory.flink.size": "1100m"},
	}
	sizes := []string{"400m", "800m", "1024m", "1728m", "4g"}
	// refused counts each kind's refusals and starts, so the grid is seen
	// to exercise both.
	refused := map[string]int{}
	for _, version := range []string{"1.19.1", "2.1.1"} {
		for _, size := range sizes {
			for i, extra := range settings {
				conf := map[string]string{"taskmanager.memory.process.size": size, "jobmanager.memory.process.size": size, "taskmanager.numberOfTaskSlots": "1"}
				for k, v := range extra {
					conf[k] = v
				}
				name := fmt.Sprintf("%s/%s/%d", version, size, i)
				_, tmErr := flinkmemory.DeriveTaskManager(conf)
				_, jmErr := flinkmemory.DeriveJobManager(conf)
				e := flinksim.NewEngine(flinksim.EngineOptions{})
				key := flinksim.ClusterKey{Namespace: "ns", Name: "c"}
				e.Observe(key, flinksim.SimpleCluster{Version: version, JobManager: "jm", TaskManagers: []string{"tm"}, Settings: conf}.Observation())
				v, err := e.View(key)
				if err != nil {
					t.Fatal(err)
				}
				jmDown := len(v.JobManagers) != 1 || v.JobManagers[0].Down != ""
				refused[fmt.Sprintf("JobManager refused %v", jmDown)]++
				if !jmDown {
					refused[fmt.Sprintf("TaskManager refused %v", v.TaskManagers == 0)]++
				}
				if jmDown != (jmErr != nil) {
					t.Errorf("%s %v: JobManager refused by the simulator %v (%+v), here %v", name, extra, jmDown, v.JobManagers, jmErr)
				}
				if tmDown := v.TaskManagers == 0; !jmDown && tmDown != (tmErr != nil) {
					t.Errorf("%s %v: TaskManager refused by the simulator %v (%v), here %v", name, extra, tmDown, v.Events, tmErr)
				}
			}
		}
	}
	for _, k := range []string{"JobManager refused true", "JobManager refused false", "TaskManager refused true", "TaskManager refused false"} {
		if refused[k] == 0 {
			t.Errorf("no case of %q in the grid: %v", k, refused)
		}
	}
	t.Log(refused)
}

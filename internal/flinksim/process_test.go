package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestProcessStart: a process starts from the file its pod mounts, as the
// version reads it, and refuses to start on what Flink refuses; its REST
// port then never answers and the reason is in its log.
func TestProcessStart(t *testing.T) {
	memoryless := map[string]string{"jobmanager.memory.process.size": "", "taskmanager.memory.process.size": "", "taskmanager.memory.flink.size": "2g"}
	for _, tc := range []struct {
		name    string
		version string
		files   func(v string) map[string]string
		image   string
		env     map[string]string
		// writable is a conf directory the entrypoint may edit.
		writable bool
		// wantJM is the refusal of the JobManager ("" when it starts);
		// wantTM that of the TaskManager.
		wantJM, wantTM string
		wantSlots      int
	}{
		{name: "valid 1.17", version: "1.17.2", files: confWith(nil), wantSlots: 2},
		{name: "valid 2.2", version: "2.2.0", files: confWith(nil), wantSlots: 2},
		{name: "no memory option at all", version: "1.19.1", files: rawConf("config.yaml", "taskmanager.numberOfTaskSlots: 2\n"),
			wantJM: "JobManager memory configuration failed: Either required fine-grained memory (jobmanager.memory.heap.size), or Total Flink Memory size (Key: 'jobmanager.memory.flink.size' , default: null (fallback keys: [])), or Total Process Memory size (Key: 'jobmanager.memory.process.size' , default: null (fallback keys: [])) need to be configured explicitly.",
			wantTM: "TaskManager memory configuration failed: Either required fine-grained memory (taskmanager.memory.task.heap.size and taskmanager.memory.managed.size)"},
		{name: "only a TaskManager size", version: "1.19.1", files: confWith(memoryless), wantJM: "JobManager memory configuration failed", wantSlots: 2},
		{name: "legacy heap size (1.x)", version: "1.18.1", files: rawConf("flink-conf.yaml", "jobmanager.rpc.address: jobmanager\njobmanager.heap.size: 1024m\ntaskmanager.heap.mb: 2048\ntaskmanager.numberOfTaskSlots: 2\n"), wantSlots: 2},
		{name: "legacy heap size (2.x has none)", version: "2.0.0", files: rawConf("config.yaml", "jobmanager.rpc.address: jobmanager\njobmanager.heap.size: 1024m\ntaskmanager.memory.process.size: 2g\n"), wantJM: "JobManager memory configuration failed: Either required", wantSlots: 1},
		{name: "process size too small", version: "1.19.1", files: confWith(map[string]string{"jobmanager.memory.process.size": "400m"}),
			wantJM: "Sum of configured JVM Metaspace (256.000mb (268435456 bytes)) and JVM Overhead (192.000mb (201326592 bytes)) exceed configured Total Process Memory (400.000mb (419430400 bytes)).", wantSlots: 2},
		// TaskExecutorFlinkMemoryUtils: 800m leaves 352m of Flink memory
		// (192m overhead, 256m metaspace), less than the framework's 256m
		// plus 40% managed and the 64m network minimum.
		{name: "TaskManager process size whose parts do not fit", version: "1.19.1", files: confWith(map[string]string{"taskmanager.memory.process.size": "800m"}),
			wantTM: "TaskManager memory configuration failed: Sum of configured Framework Heap Memory (128.000mb (134217728 bytes)), Framework Off-Heap Memory (128.000mb (134217728 bytes)), Task Off-Heap Memory (0 bytes), Managed Memory (140.800mb (147639503 bytes)) and Network Memory (64.000mb (67108864 bytes)) exceed configured Total Flink Memory (352.000mb (369098752 bytes))."},
		{name: "TaskManager process size whose parts do not fit (1.18)", version: "1.18.1", files: confWith(map[string]string{"taskmanager.memory.process.size": "800m"}),
			wantTM: "exceed configured Total Flink Memory (352.000mb (369098752 bytes))."},
		{name: "TaskManager Flink size below the task heap and managed memory", version: "1.19.1",
			files:  confWith(map[string]string{"taskmanager.memory.process.size": "", "taskmanager.memory.flink.size": "1g", "taskmanager.memory.task.heap.size": "700m"}),
			wantTM: "Sum of configured Framework Heap Memory (128.000mb (134217728 bytes)), Framework Off-Heap Memory (128.000mb (134217728 bytes)), Task Heap Memory (700.000mb (734003200 bytes)), Task Off-Heap Memory (0 bytes) and Managed Memory (409.600mb (429496736 bytes)) exceed configured Total Flink Memory (1024.000mb (1073741824 bytes))."},
		{name: "TaskManager network memory left below its minimum", version: "1.19.1",
			files:  confWith(map[string]string{"taskmanager.memory.process.size": "", "taskmanager.memory.flink.size": "1g", "taskmanager.memory.task.heap.size": "300m"}),
			wantTM: "the derived Network Memory is inconsistent with its configuration."},
		{name: "fine-grained TaskManager memory", version: "1.19.1",
			files: confWith(map[string]string{"taskmanager.memory.process.size": "", "taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"}), wantSlots: 2},
		{name: "fine-grained TaskManager memory above its Flink size", version: "1.19.1",
			files:  confWith(map[string]string{"taskmanager.memory.process.size": "", "taskmanager.memory.flink.size": "1g", "taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"}),
			wantTM: "Task Heap Memory (512.000mb (536870912 bytes)), Task Off-Heap Memory (0 bytes) and Managed Memory (512.000mb (536870912 bytes)) exceed configured Total Flink Memory (1024.000mb (1073741824 bytes))."},
		{name: "fine-grained TaskManager memory above its process size", version: "1.19.1",
			files:  confWith(map[string]string{"taskmanager.memory.process.size": "1g", "taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "512m"}),
			wantTM: "is not in configured JVM Overhead range [192.000mb (201326592 bytes), 1024.000mb (1073741824 bytes)]."},
		{name: "JobManager Flink size below its off-heap memory", version: "1.19.1",
			files:  confWith(map[string]string{"jobmanager.memory.process.size": "", "jobmanager.memory.flink.size": "100m"}),
			wantJM: "The configured Total Flink Memory (100.000mb (104857600 bytes)) is less than the configured Off-heap Memory (128.000mb (134217728 bytes)).", wantSlots: 2},
		{name: "unparsable memory size", version: "1.19.1", files: confWith(map[string]string{"jobmanager.memory.process.size": "lots"}),
			wantJM: "Could not parse value 'lots' for key 'jobmanager.memory.process.size'.", wantSlots: 2},
		{name: "unparsable store duration", version: "1.20.0", files: confWith(map[string]string{"rest.async.store-duration": "5 fortnights"}),
			wantJM: "Could not parse value '5 fortnights' for key 'rest.async.store-duration'.", wantSlots: 2},
		{name: "unparsable slots", version: "1.20.0", files: confWith(map[string]string{"taskmanager.numberOfTaskSlots": "two"}),
			wantTM: "Could not parse value 'two' for key 'taskmanager.numberOfTaskSlots'."},
		{name: "bad checkpoint interval does not stop the JobManager", version: "1.19.1", files: confWith(map[string]string{"execution.checkpointing.interval": "thirty"}), wantSlots: 2},
		{name: "HA without storageDir", version: "1.19.1", files: confWith(map[string]string{"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo"}),
			wantJM: "Configuration is missing the mandatory parameter: Key: 'high-availability.storageDir'", wantSlots: 2},
		{name: "ZooKeeper without quorum (old key)", version: "1.17.1", files: confWith(map[string]string{"high-availability": "zookeeper", "high-availability.storageDir": "s3://b/ha"}),
			env: s3Plugin("1.17.1"), wantJM: "No ZooKeeper quorum specified in config.", wantSlots: 2},
		{name: "HA on s3 without its plugin", version: "1.19.1", files: confWith(map[string]string{"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo", "high-availability.storageDir": "s3://b/ha"}),
			env: map[string]string{}, wantJM: "Could not find a file system implementation for scheme 's3'. The scheme is directly supported by Flink through the following plugin(s): flink-s3-fs-hadoop, flink-s3-fs-presto.", wantSlots: 2},
		{name: "unknown HA type is a factory class", version: "1.19.1", files: confWith(map[string]string{"high-availability.type": "etcd"}), wantJM: "java.lang.ClassNotFoundException: etcd", wantSlots: 2},
		{name: "1.18 needs flink-conf.yaml", version: "1.18.1", files: func(v string) map[string]string { return ConfFiles("2.0.0", nil) },
			wantJM: "The Flink config file '/opt/flink/conf/flink-conf.yaml' (/opt/flink/conf/flink-conf.yaml) does not exist.", wantTM: "does not exist"},
		{name: "2.0 needs config.yaml", version: "2.0.0", files: func(v string) map[string]string { return ConfFiles("1.18.1", nil) },
			wantJM: "The Flink config file '/opt/flink/conf/config.yaml' (/opt/flink/conf/config.yaml) does not exist.", wantTM: "does not exist"},
		{name: "1.19 prefers flink-conf.yaml over config.yaml", version: "1.19.1", files: func(v string) map[string]string {
			f := ConfFiles("1.18.1", map[string]string{"taskmanager.numberOfTaskSlots": "3", "jobmanager.rpc.address": "jobmanager"})
			f["config.yaml"] = ConfFiles("1.19.1", nil)["config.yaml"]
			return f
		}, wantSlots: 3},
		// The image's own conf directory is writable: the entrypoint points
		// jobmanager.rpc.address at $JOB_MANAGER_RPC_ADDRESS, else at the
		// container's own hostname, where no JobManager listens.
		{name: "no mounted conf: the image's default", version: "1.20.0", files: func(string) map[string]string { return nil }, writable: true,
			env: map[string]string{"JOB_MANAGER_RPC_ADDRESS": "jobmanager"}, wantSlots: 1},
		{name: "no mounted conf, no JOB_MANAGER_RPC_ADDRESS: the TaskManager dials itself", version: "1.20.0", files: func(string) map[string]string { return nil }, writable: true, wantSlots: 0},
		{name: "a read-only conf defeats the entrypoint's edits", version: "1.18.1", files: confWith(map[string]string{"jobmanager.rpc.address": ""}),
			env: map[string]string{"JOB_MANAGER_RPC_ADDRESS": "jobmanager"}, wantTM: "Config parameter 'jobmanager.rpc.address' is missing", wantSlots: 0},
		{name: "FLINK_PROPERTIES appended to a writable flink-conf.yaml, envsubst over it (1.18)", version: "1.18.1", writable: true,
			files: confWith(map[string]string{"jobmanager.rpc.address": "", "taskmanager.numberOfTaskSlots": "${SLOTS}"}),
			env:   map[string]string{"JOB_MANAGER_RPC_ADDRESS": "jobmanager", "SLOTS": "3", "FLINK_PROPERTIES": "rest.async.store-duration: 1 min"}, wantSlots: 3},
		{name: "FLINK_PROPERTIES through config-parser-utils (1.19+)", version: "1.20.0", writable: true,
			files: confWith(map[string]string{"jobmanager.rpc.address": ""}),
			env:   map[string]string{"JOB_MANAGER_RPC_ADDRESS": "jobmanager", "FLINK_PROPERTIES": "taskmanager.numberOfTaskSlots: 4\n  rest.async.store-duration: ${D}", "D": "5 min"}, wantSlots: 4},
		{name: "image without a version", version: "1.19.1", image: "registry.example/flink:stable", files: confWith(nil),
			wantJM: "takes the Flink version from the image tag", wantTM: "takes the Flink version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t)
			sc := SimpleCluster{Version: tc.version, JobManager: "jm-1", TaskManagers: []string{"tm-a"}, Env: tc.env}
			o := sc.Observation()
			for i := range o.JobManagers {
				o.JobManagers[i].Conf, o.JobManagers[i].ConfWritable = tc.files(tc.version), tc.writable
				if tc.image != "" {
					o.JobManagers[i].Image = tc.image
				}
			}
			for i := range o.TaskManagers {
				o.TaskManagers[i].Conf, o.TaskManagers[i].ConfWritable = tc.files(tc.version), tc.writable
				if tc.image != "" {
					o.TaskManagers[i].Image = tc.image
				}
			}
			e.Observe(key, o)
			v, err := e.View(key)
			if err != nil {
				t.Fatal(err)
			}
			jm := v.JobManagers[0]
			_, ovErr := e.Overview(key)
			if tc.wantJM == "" {
				if jm.Down != "" || ovErr != nil {
					t.Fatalf("JobManager down: %q, overview: %v", jm.Down, ovErr)
				}
				if v.SlotsTotal != tc.wantSlots {
					t.Errorf("slots = %d, want %d", v.SlotsTotal, tc.wantSlots)
				}
			} else {
				if !strings.Contains(jm.Down, tc.wantJM) || len(jm.Log) == 0 || !strings.Contains(jm.Log[len(jm.Log)-1], tc.wantJM) {
					t.Errorf("JobManager down = %q, log %v; want %q", jm.Down, jm.Log, tc.wantJM)
				}
				if statusOf(ovErr) != 0 {
					t.Errorf("REST of a JobManager that did not start: %v, want a refused connection", ovErr)
				}
				if v.JobManagerReady {
					t.Errorf("view says the JobManager is ready")
				}
			}
			if tc.wantTM != "" && !strings.Contains(strings.Join(v.Events, "\n"), tc.wantTM) {
				t.Errorf("events %v do not say %q", v.Events, tc.wantTM)
			}
		})
	}
}

// confWith renders two slots, both process sizes and settings over them; an
// empty value removes a key.
func confWith(settings map[string]string) func(string) map[string]string {
	return func(v string) map[string]string {
		s := map[string]string{"taskmanager.numberOfTaskSlots": "2", "jobmanager.memory.process.size": "1600m", "taskmanager.memory.process.size": "1728m",
			"jobmanager.rpc.address": SimpleServiceAddress}
		for k, val := range settings {
			s[k] = val
			if val == "" {
				delete(s, k)
			}
		}
		return ConfFiles(v, s)
	}
}

func rawConf(name, content string) func(string) map[string]string {
	return func(string) map[string]string { return map[string]string{name: content} }
}

// A pod whose ConfigMap does not exist yet runs nothing until it does.
func TestMissingConfigMap(t *testing.T) {
	e, _ := newTestEngine(t)
	o := simple(tms(1), nil).Observation()
	o.JobManagers[0].Conf, o.JobManagers[0].ConfMissing = nil, "demo-config"
	e.Observe(key, o)
	if _, err := e.Overview(key); statusOf(err) != 0 {
		t.Fatalf("before the ConfigMap: %v", err)
	}
	v, _ := e.View(key)
	if len(v.JobManagers) != 0 || !strings.Contains(strings.Join(v.Events, ""), `configmap "demo-config" not found`) {
		t.Fatalf("view = %+v", v)
	}
	e.Observe(key, simple(tms(1), nil).Observation())
	if _, err := e.Overview(key); err != nil {
		t.Fatalf("after the ConfigMap: %v", err)
	}
}

func TestAvailability(t *testing.T) {
	up := simple(tms(1), nil)
	notReady := up
	notReady.NotReady = true
	for _, tc := range []struct {
		name   string
		setup  func(e *Engine)
		want   int // status of each of 4 requests: 0 refused, 200, 503
		counts []int
	}{
		{"unknown cluster", func(e *Engine) {}, 0, []int{0, 0, 0, 0}},
		{"no JobManager pod", func(e *Engine) { e.Observe(key, Observation{}) }, 0, []int{0, 0, 0, 0}},
		{"JobManager not Ready", func(e *Engine) { e.Observe(key, notReady.Observation()) }, 0, []int{0, 0, 0, 0}},
		{"JobManager up", func(e *Engine) { e.Observe(key, up.Observation()) }, 200, []int{200, 200, 200, 200}},
		{"two injected 503s", func(e *Engine) { e.Observe(key, up.Observation()); e.InjectUnavailable(key, 2) }, 0, []int{503, 503, 200, 200}},
		{"503 until cleared", func(e *Engine) { e.Observe(key, up.Observation()); e.InjectUnavailable(key, -1) }, 0, []int{503, 503, 503, 503}},
		{"cleared", func(e *Engine) { e.Observe(key, up.Observation()); e.InjectUnavailable(key, -1); e.ClearFaults(key) }, 0, []int{200, 200, 200, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t)
			tc.setup(e)
			for i, want := range tc.counts {
				_, err := e.Overview(key)
				got := http.StatusOK
				if err != nil {
					got = statusOf(err)
				}
				if got != want {
					t.Errorf("request %d: %v, want %d", i, err, want)
				}
			}
		})
	}
}

// A JobManager that goes NotReady keeps its process: nothing restarts.
func TestNotReadyKeepsTheProcess(t *testing.T) {
	e, clk := newTestEngine(t)
	c := simple(tms(1), nil)
	e.Observe(key, c.Observation())
	id := running(t, e, clk, flink.JarRunRequest{})
	c.NotReady = true
	e.Observe(key, c.Observation())
	if _, err := e.Job(key, id); statusOf(err) != 0 {
		t.Fatalf("not ready: %v", err)
	}
	clk.step(time.Minute)
	c.NotReady = false
	e.Observe(key, c.Observation())
	if v := view(t, e, id); v.State != flink.JobRunning || v.Restarts != 0 || v.CheckpointsCompleted < 5 {
		t.Errorf("after NotReady: %+v", v)
	}
}

func TestOverviewFollowsProcesses(t *testing.T) {
	e, clk := newTestEngine(t)
	o := simple(tms(3), nil).Observation()
	// The third TaskManager runs with a configuration of its own.
	o.TaskManagers[2].Conf = ConfFiles("1.19.1", map[string]string{"taskmanager.numberOfTaskSlots": "4", "jobmanager.rpc.address": SimpleServiceAddress})
	e.Observe(key, o)
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 5})
	ov, err := e.Overview(key)
	if err != nil {
		t.Fatal(err)
	}
	want := flink.ClusterOverview{FlinkVersion: "1.19.1", FlinkCommit: SimulatedFlinkRevision, TaskManagers: 3, SlotsTotal: 8, SlotsAvailable: 3, JobsRunning: 1}
	if *ov != want {
		t.Errorf("overview = %+v, want %+v", *ov, want)
	}
	info, _ := e.TaskManagers(key)
	free := int32(0)
	for _, tm := range info.TaskManagers {
		free += tm.FreeSlots
		if !strings.HasPrefix(tm.Path, "pekko.tcp://flink@") {
			t.Errorf("path %s", tm.Path)
		}
	}
	if len(info.TaskManagers) != 3 || free != 3 {
		t.Errorf("taskmanagers = %+v", info)
	}
	if cfg, _ := e.DashboardConfiguration(key); cfg.FlinkVersion != "1.19.1" {
		t.Errorf("config version = %q", cfg.FlinkVersion)
	}
	_ = id
}

package flinksim

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time       { return f.t }
func (f *fakeClock) step(d time.Duration) { f.t = f.t.Add(d) }

var key = ClusterKey{Namespace: "team-a", Name: "demo"}

// The simulated work takes round numbers of seconds in engine tests.
var testOptions = EngineOptions{
	InitializationDelay: time.Second, DeployDelay: time.Second, CheckpointDelay: time.Second,
	SavepointDelay: 2 * time.Second, CancelDelay: time.Second,
}

func newTestEngine(t *testing.T) (*Engine, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1700000000, 0)}
	o := testOptions
	o.Clock = clk.now
	return NewEngine(o), clk
}

// s3Plugin is the environment that links the official image's s3 plugin:
// most tests keep their state on s3, which every pod reaches.
func s3Plugin(version string) map[string]string {
	return map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-presto-" + version + ".jar"}
}

// simple is a 1.19.1 cluster with checkpoints every 10 s, two slots per
// TaskManager and state on s3; with is merged over those settings.
func simple(tms []string, with map[string]string) SimpleCluster {
	s := map[string]string{
		"taskmanager.numberOfTaskSlots":    "2",
		"execution.checkpointing.interval": "10s",
		"state.checkpoints.dir":            "s3://bucket/checkpoints",
		"state.savepoints.dir":             "s3://bucket/savepoints",
		// Restarts in exactly 3 s, without exponential jitter.
		"restart-strategy.type":                 "fixed-delay",
		"restart-strategy.fixed-delay.delay":    "3s",
		"restart-strategy.fixed-delay.attempts": "100",
		// Fresh REST answers for every step of a test's clock: the
		// execution graph cache (and the checkpoint statistics cache,
		// which falls back to it) keeps an answer 1 ms, not 3 s. Tests
		// of the caches remove it.
		"web.refresh-interval": "1",
	}
	maps.Copy(s, with)
	for k, v := range s {
		if v == "" {
			delete(s, k)
		}
	}
	return SimpleCluster{Version: "1.19.1", JobManager: "jm-1", TaskManagers: tms, Settings: s, Env: s3Plugin("1.19.1")}
}

func tms(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "tm-" + string(rune('a'+i))
	}
	return out
}

// upload uploads a jar and returns its ID.
func upload(t *testing.T, e *Engine) string {
	t.Helper()
	up, err := e.UploadJar(key, "job.jar")
	if err != nil {
		t.Fatal(err)
	}
	return up.Filename[strings.LastIndex(up.Filename, "/")+1:]
}

// submit uploads a jar and runs it.
func submit(t *testing.T, e *Engine, req flink.JarRunRequest) string {
	t.Helper()
	run, err := e.RunJar(key, upload(t, e), req)
	if err != nil {
		t.Fatal(err)
	}
	return run.JobID
}

// running submits a job and waits until its tasks run (2 s: initializing,
// then deploying).
func running(t *testing.T, e *Engine, clk *fakeClock, req flink.JarRunRequest) string {
	t.Helper()
	id := submit(t, e, req)
	clk.step(2 * time.Second)
	if j := jobDetails(t, e, id); j.State != flink.JobRunning || j.Vertices[0].Status != "RUNNING" {
		t.Fatalf("job %s: %s, tasks %+v", id, j.State, j.Vertices)
	}
	return id
}

// stopped stops a job with a savepoint and returns the savepoint's
// location once the stop completed (3 s).
func stopped(t *testing.T, e *Engine, clk *fakeClock, id string) string {
	t.Helper()
	tr, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	clk.step(3 * time.Second)
	st, _ := e.SavepointStatus(key, id, tr.RequestID)
	if st.Operation == nil || st.Operation.Location == "" {
		t.Fatalf("stop = %+v", st)
	}
	return st.Operation.Location
}

func jobDetails(t *testing.T, e *Engine, id string) *flink.JobDetailsInfo {
	t.Helper()
	j, err := e.Job(key, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func jobState(t *testing.T, e *Engine, id string) flink.JobStatus {
	t.Helper()
	return jobDetails(t, e, id).State
}

func view(t *testing.T, e *Engine, id string) JobView {
	t.Helper()
	v, err := e.View(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range v.Jobs {
		if j.ID == id {
			return j
		}
	}
	t.Fatalf("no job %s", id)
	return JobView{}
}

// savepoint takes a savepoint and waits for it.
func savepoint(t *testing.T, e *Engine, clk *fakeClock, id string, req flink.SavepointTriggerRequest) *flink.SavepointInfo {
	t.Helper()
	tr, err := e.TriggerSavepoint(key, id, req)
	if err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second)
	st, err := e.SavepointStatus(key, id, tr.RequestID)
	if err != nil || st.Status.ID != flink.OperationCompleted {
		t.Fatalf("savepoint: %+v, %v", st, err)
	}
	return st.Operation
}

// wantErr checks an error's HTTP status (0: connection refused) and text.
func wantErr(t *testing.T, err error, code int, contains string) {
	t.Helper()
	if err == nil || statusOf(err) != code || !strings.Contains(err.Error(), contains) {
		t.Fatalf("err = %v, want HTTP %d containing %q", err, code, contains)
	}
}

// withStandby adds a second JobManager pod, a copy of the first started a
// second later, behind the same Service.
func withStandby(o Observation) Observation {
	second := o.JobManagers[0]
	second.UID, second.Name, second.Hostname, second.Created = "jm-2", "jm-2", "jm-2", second.Created.Add(time.Second)
	o.JobManagers = append(o.JobManagers, second)
	for port, eps := range o.Services[0].Ports {
		if port == RESTPort {
			o.Services[0].Ports[port] = append(eps, Endpoint{Pod: second.UID, Port: port})
		}
	}
	return o
}

package flinksim

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// vertexIDs are the pipeline's vertex IDs: the program's, the same for
// every submission of it (StreamGraphHasherV2).
func vertexIDs(t *testing.T, e *Engine, clk *fakeClock) []string {
	t.Helper()
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 1})
	var out []string
	for _, v := range jobDetails(t, e, id).Vertices {
		out = append(out, v.ID)
	}
	if err := e.CancelJob(key, id, ""); err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second)
	return out
}

// pipelineEngine is an engine with taskManagers TaskManagers running the test
// pipeline, and the pipeline's vertex IDs.
func pipelineEngine(t *testing.T, taskManagers int) (*Engine, *fakeClock, []string) {
	t.Helper()
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(taskManagers), nil).Observation())
	if err := e.SetWorkload(key, pipeline(RateShape{Kind: "constant", Base: 100})); err != nil {
		t.Fatal(err)
	}
	return e, clk, vertexIDs(t, e, clk)
}

// Dispatcher#applyParallelismOverrides: the run request's
// pipeline.jobvertex-parallelism-overrides sets each named vertex's
// parallelism; the others keep the job's; an unknown ID is ignored; the
// job takes the slots of its widest vertex.
func TestParallelismOverridesInTheRunRequest(t *testing.T) {
	e, clk, ids := pipelineEngine(t, 2)
	overrides := fmt.Sprintf("%s:1,%s:4,%s:9", ids[0], ids[1], "0123456789abcdef0123456789abcdef")
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2, FlinkConfiguration: map[string]string{parallelismOverrides: overrides}})
	j := jobDetails(t, e, id)
	if got := fmt.Sprint(parallelisms(j)); got != "[1 4 2]" {
		t.Fatalf("parallelisms %s, want [1 4 2]", got)
	}
	if v := view(t, e, id); v.Parallelism != 4 {
		t.Errorf("the job takes %d slots, want its widest vertex's 4", v.Parallelism)
	}
}

// The same option in the cluster's configuration (the Dispatcher's) is
// applied too, and the request's wins over it.
func TestParallelismOverridesFromTheClusterConfiguration(t *testing.T) {
	e, clk, ids := pipelineEngine(t, 2)
	// The same program on a cluster configured with overrides.
	e, clk = newTestEngine(t)
	e.Observe(key, simple(tms(2), map[string]string{parallelismOverrides: ids[0] + ":3," + ids[2] + ":3"}).Observation())
	if err := e.SetWorkload(key, pipeline(RateShape{Kind: "constant", Base: 100})); err != nil {
		t.Fatal(err)
	}
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2, FlinkConfiguration: map[string]string{parallelismOverrides: ids[0] + ":1"}})
	if got := fmt.Sprint(parallelisms(jobDetails(t, e, id))); got != "[1 2 3]" {
		t.Fatalf("parallelisms %s, want [1 2 3]", got)
	}
}

// Dispatcher#applyParallelismOverrides parses the value of a vertex the
// graph has (Integer#parseInt) and JobVertex#setParallelism takes at
// least one or -1; a value under an unknown ID is never parsed, but every
// item must be a key-value pair (ConfigurationUtils#convertToMap).
func TestParallelismOverridesRefused(t *testing.T) {
	e, clk, ids := pipelineEngine(t, 1)
	const unknown = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name, value, want string
	}{
		{"no integer", ids[1] + ":four", `NumberFormatException: For input string: "four"`},
		{"no key-value pair", unknown, "Map item is not a key-value pair"},
		{"three parts", unknown + ":1:2", "Map item is not a key-value pair"},
		{"beyond an int", ids[1] + ":2147483648", `NumberFormatException: For input string: "2147483648"`},
		{"zero", ids[1] + ":0", "The parallelism must be at least one, or -1 (unset)."},
		{"below -1", ids[1] + ":-2", "The parallelism must be at least one, or -1 (unset)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.RunJar(key, upload(t, e), flink.JarRunRequest{FlinkConfiguration: map[string]string{parallelismOverrides: tc.value}})
			wantErr(t, err, http.StatusBadRequest, tc.want)
		})
	}
	t.Run("an unknown vertex's value is not read", func(t *testing.T) {
		id := running(t, e, clk, flink.JarRunRequest{Parallelism: 1, FlinkConfiguration: map[string]string{parallelismOverrides: unknown + ":four," + unknown[1:] + "a:0"}})
		if got := fmt.Sprint(parallelisms(jobDetails(t, e, id))); got != "[1 1 1]" {
			t.Errorf("parallelisms %s, want [1 1 1]", got)
		}
		if err := e.CancelJob(key, id, ""); err != nil {
			t.Fatal(err)
		}
		clk.step(2 * time.Second)
	})
}

// An override of -1 unsets the vertex's parallelism
// (ExecutionConfig#PARALLELISM_DEFAULT), which the scheduler runs as 1
// (SchedulerBase#normalizeParallelism), whatever the job's parallelism.
func TestParallelismOverrideMinusOneRunsTheVertexAtOne(t *testing.T) {
	e, clk, ids := pipelineEngine(t, 2)
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 3, FlinkConfiguration: map[string]string{parallelismOverrides: ids[1] + ":-1"}})
	j := jobDetails(t, e, id)
	if got := fmt.Sprint(parallelisms(j)); got != "[3 1 3]" {
		t.Fatalf("parallelisms %s, want [3 1 3]", got)
	}
	// The default max parallelism follows the normalized 1
	// (SchedulerBase#getDefaultMaxParallelism).
	if got := j.Vertices[1].MaxParallelism; got != 128 {
		t.Errorf("max parallelism %d, want 128", got)
	}
}

// An override above a vertex's max parallelism fails the job as
// ExecutionJobVertex does for any parallelism above it.
func TestParallelismOverrideAboveTheMaxParallelismFailsTheJob(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(4), nil).Observation())
	w := pipeline(RateShape{Kind: "constant", Base: 100})
	w.Vertices[1].MaxParallelism = 4
	if err := e.SetWorkload(key, w); err != nil {
		t.Fatal(err)
	}
	ids := vertexIDs(t, e, clk)
	id := submit(t, e, flink.JarRunRequest{Parallelism: 2, FlinkConfiguration: map[string]string{parallelismOverrides: ids[1] + ":8"}})
	clk.step(3 * time.Second)
	if s := jobState(t, e, id); s != flink.JobFailed {
		t.Fatalf("job %s, want FAILED", s)
	}
}

// On the AdaptiveScheduler an override is the vertex's upper bound, and
// per-vertex resource requirements rescale each vertex to its own: the
// job holds the slots of its widest vertex (one slot-sharing group).
func TestAdaptivePerVertexRequirements(t *testing.T) {
	e, clk, _, _, srv := newHTTPTest(t, "1.18")
	e.Observe(key, adaptive("1.18.1", 3).Observation())
	if err := e.SetWorkload(key, pipeline(RateShape{Kind: "constant", Base: 100})); err != nil {
		t.Fatal(err)
	}
	ids := vertexIDs(t, e, clk)
	id := submit(t, e, flink.JarRunRequest{Parallelism: 2, FlinkConfiguration: map[string]string{parallelismOverrides: ids[0] + ":1"}})
	clk.step(2 * time.Second)
	j := jobDetails(t, e, id)
	var got map[string]map[string]map[string]int
	restGet(t, srv, "/jobs/"+id+"/resource-requirements", &got)
	if fmt.Sprint(parallelisms(j)) != "[1 2 2]" || got[ids[0]]["parallelism"]["upperBound"] != 1 {
		t.Fatalf("%v %v", parallelisms(j), got)
	}
	body := fmt.Sprintf(`{%q: {"parallelism": {"lowerBound": 1, "upperBound": 1}}, %q: {"parallelism": {"lowerBound": 1, "upperBound": 6}}, %q: {"parallelism": {"lowerBound": 1, "upperBound": 3}}}`, ids[0], ids[1], ids[2])
	if code := restDo(t, srv, http.MethodPut, "/jobs/"+id+"/resource-requirements", body, nil); code != http.StatusOK {
		t.Fatalf("PUT: %d", code)
	}
	clk.step(5 * time.Second)
	j = jobDetails(t, e, id)
	if fmt.Sprint(parallelisms(j)) != "[1 6 3]" || view(t, e, id).Parallelism != 6 {
		t.Fatalf("after the PUT: %s %v, %d slots", j.State, parallelisms(j), view(t, e, id).Parallelism)
	}
}

// FLINK-33534: a request's overrides reach the Dispatcher from 1.18.1 on;
// in 1.17.x and 1.18.0 only the cluster's configuration is read, and the
// request's change nothing.
func TestParallelismOverridesOfTheRequestByVersion(t *testing.T) {
	for _, tc := range []struct {
		version, want string
	}{
		{"1.17.2", "[2 2 2]"}, {"1.18.0", "[2 2 2]"}, {"1.18.1", "[2 4 2]"}, {"1.19.1", "[2 4 2]"}, {"2.0.0", "[2 4 2]"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(2), nil)
			c.Version, c.Env = tc.version, s3Plugin(tc.version)
			e.Observe(key, c.Observation())
			if err := e.SetWorkload(key, pipeline(RateShape{Kind: "constant", Base: 100})); err != nil {
				t.Fatal(err)
			}
			ids := vertexIDs(t, e, clk)
			id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2, FlinkConfiguration: map[string]string{parallelismOverrides: ids[1] + ":4"}})
			if got := fmt.Sprint(parallelisms(jobDetails(t, e, id))); got != tc.want {
				t.Fatalf("parallelisms %s, want %s", got, tc.want)
			}
		})
	}
}

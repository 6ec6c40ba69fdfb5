package flinksim

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// pipeline is a three-vertex job: a source whose subtasks read 1000
// records/s each, a window at 500/s per subtask, a sink that never limits.
func pipeline(rate RateShape) Workload {
	return Workload{
		Vertices: []VertexModel{
			{Name: "Source: orders", CapacityPerSubtask: 1000},
			{Name: "Window(TumblingEventTimeWindows)", CapacityPerSubtask: 500, Selectivity: 0.5},
			{Name: "Sink: warehouse"},
		},
		Rate: rate,
	}
}

// restGet fetches a Flink path of the test cluster and decodes its JSON.
func restGet(t *testing.T, srv *httptest.Server, path string, into any) int {
	t.Helper()
	return restDo(t, srv, http.MethodGet, path, "", into)
}

func restDo(t *testing.T, srv *httptest.Server, method, path, body string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+"/clusters/team-a/demo"+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 && into != nil {
		if er, ok := into.(*flink.ErrorResponse); ok {
			_ = json.Unmarshal(b, er)
		}
	}
	return resp.StatusCode
}

type aggregated []struct {
	ID                       string
	Min, Max, Avg, Sum, Skew *float64
}

func (a aggregated) get(t *testing.T, id string) (min, max, avg, sum float64) {
	t.Helper()
	for _, m := range a {
		if m.ID == id {
			return *m.Min, *m.Max, *m.Avg, *m.Sum
		}
	}
	t.Fatalf("no metric %s in %+v", id, a)
	return
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

// TestWorkloadMetrics reads a job's task metrics as the operator would:
// the vertex list from the job, then each vertex's aggregated subtask
// metrics, checked against the minor's schema, with the MetricFetcher's
// one-interval lag and the 60 s windows of Flink's meters.
func TestWorkloadMetrics(t *testing.T) {
	e, clk, _, chk, srv := newHTTPTest(t, "1.20")
	sc := simple(tms(2), nil)
	sc.Version, sc.Env = "1.20.1", s3Plugin("1.20.1")
	e.Observe(key, sc.Observation())
	if err := e.SetWorkload(key, pipeline(RateShape{Kind: "constant", Base: 800})); err != nil {
		t.Fatal(err)
	}
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
	j := jobDetails(t, e, id)
	if len(j.Vertices) != 3 || j.Vertices[0].Name != "Source: orders" || j.Vertices[1].Parallelism != 2 || j.Vertices[2].MaxParallelism != 128 {
		t.Fatalf("vertices = %+v", j.Vertices)
	}
	src, win := j.Vertices[0].ID, j.Vertices[1].ID
	path := "/jobs/" + id + "/vertices/" + win + "/subtasks/metrics?get=busyTimeMsPerSecond,numRecordsInPerSecond"
	// The JobManager has fetched nothing yet: the first request reads an
	// empty store and starts the fetch.
	var first aggregated
	if code := restGet(t, srv, path, &first); code != 200 || len(first) != 0 {
		t.Fatalf("first read: HTTP %d %+v, want an empty list", code, first)
	}
	clk.step(70 * time.Second)
	var stale aggregated
	restGet(t, srv, path, &stale) // fetched 70 s ago: the tasks had just started
	_, busyMax, _, _ := stale.get(t, "busyTimeMsPerSecond")
	if busyMax != 1000 {
		// TimerGauges not updated yet read 0 idle, so 1000 busy.
		t.Errorf("busy before the first view update = %v, want 1000", busyMax)
	}
	var m aggregated
	restGet(t, srv, path, &m) // the fetch the previous request started
	// The window vertex gets the source's 800/s, 400 per subtask against
	// 500: 800 ms/s busy.
	_, _, busyAvg, _ := m.get(t, "busyTimeMsPerSecond")
	near(t, "window busy avg", busyAvg, 800, 1)
	_, _, _, in := m.get(t, "numRecordsInPerSecond")
	near(t, "window records in", in, 800, 1)

	// The source's backlog is its operator's pendingRecords, found by
	// listing the vertex's metric names.
	var names aggregated
	restGet(t, srv, "/jobs/"+id+"/vertices/"+src+"/subtasks/metrics", &names)
	pending := ""
	for _, n := range names {
		if strings.HasSuffix(n.ID, ".pendingRecords") {
			pending = n.ID
		}
	}
	if pending != "Source__orders.pendingRecords" {
		t.Fatalf("pending metric = %q in %+v", pending, names)
	}
	var lag aggregated
	restGet(t, srv, "/jobs/"+id+"/vertices/"+src+"/subtasks/metrics?get="+pending+"&agg=SUM", &lag)
	if len(lag) != 1 || lag[0].Sum == nil || *lag[0].Sum != 0 || lag[0].Max != nil {
		t.Errorf("lag = %+v, want sum 0 and no other aggregation", lag)
	}
	// One requested metric the vertex does not have empties the answer.
	var none aggregated
	restGet(t, srv, "/jobs/"+id+"/vertices/"+win+"/subtasks/metrics?get=busyTimeMsPerSecond,"+pending, &none)
	if len(none) != 0 {
		t.Errorf("with a missing metric: %+v, want []", none)
	}
	var bad flink.ErrorResponse
	chk.lenient = true // a request the schema refuses, as Flink does
	if code := restDo(t, srv, "GET", path+"&agg=median", "", &bad); code != 400 {
		t.Errorf("agg=median: HTTP %d, want 400", code)
	}
	// Vertex and job metric collections are arrays of id/value.
	chk.lenient = false
	var vm []metricValue
	restGet(t, srv, "/jobs/"+id+"/vertices/"+src+"/metrics?get=0."+pending+",1.numRecordsInPerSecond", &vm)
	if len(vm) != 2 || vm[1].Value == nil || *vm[1].Value != "400.0" {
		t.Errorf("vertex metrics = %+v", vm)
	}
	var jm []metricValue
	restGet(t, srv, "/jobs/"+id+"/metrics?get=numRestarts", &jm)
	if len(jm) != 1 || *jm[0].Value != "0" {
		t.Errorf("job metrics = %+v", jm)
	}
	var unknown []metricValue
	if code := restGet(t, srv, "/jobs/0123456789abcdef0123456789abcdef/metrics", &unknown); code != 200 || len(unknown) != 0 {
		t.Errorf("unknown job: HTTP %d %+v, want 200 []", code, unknown)
	}
}

// TestWorkloadBottleneck: a rate above the window vertex's capacity
// saturates it, back-pressures the source and leaves a backlog that grows
// by the difference, which the source's pendingRecords shows.
func TestWorkloadBottleneck(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	w := pipeline(RateShape{Kind: "constant", Base: 1500})
	w.Vertices[1].Skew = 0.5
	if err := e.SetWorkload(key, w); err != nil {
		t.Fatal(err)
	}
	id := running(t, e, clk, flink.JarRunRequest{Parallelism: 2})
	v0, _ := e.View(key)
	clk.step(100 * time.Second)
	v1, _ := e.View(key)
	// Skew 0.5 puts 75% of the window's input on its first subtask, which
	// saturates at 500/s: the source reads 666.7/s of the 1500.
	near(t, "throughput", v1.Workload.Throughput, 500/0.75, 0.5)
	near(t, "backlog growth", v1.Workload.Backlog-v0.Workload.Backlog, 100*(1500-500/0.75), 1000)
	j := jobDetails(t, e, id)
	win := j.Vertices[1].ID
	e.mu.Lock()
	c := e.clusters[key]
	s := e.dumpMetrics(c, c.jms[0], clk.now())
	e.mu.Unlock()
	hot, cold := s.jobs[id].tasks[win][0], s.jobs[id].tasks[win][1]
	if hot["busyTimeMsPerSecond"] != "1000.0" || cold["idleTimeMsPerSecond"] == "0" {
		t.Errorf("window subtasks: hot %v, cold %v", hot, cold)
	}
	srcSub := s.jobs[id].tasks[j.Vertices[0].ID][0]
	if srcSub["backPressuredTimeMsPerSecond"] == "0" {
		t.Errorf("source not back-pressured: %v", srcSub)
	}
	if srcSub["Source__orders.pendingRecords"] == "0" {
		t.Errorf("no pending records: %v", srcSub)
	}
	// A job that does not run reads nothing: the backlog grows by the rate.
	if err := e.SetJobState(key, id, flink.JobFailed); err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second)
	before, _ := e.View(key)
	clk.step(10 * time.Second)
	after, _ := e.View(key)
	near(t, "backlog without a job", after.Workload.Backlog-before.Workload.Backlog, 15000, 1)
}

func TestRateShapes(t *testing.T) {
	d := func(s string) Duration { v, _ := time.ParseDuration(s); return Duration{v} }
	for _, tc := range []struct {
		r    RateShape
		at   float64
		want float64
	}{
		{RateShape{Kind: "constant", Base: 10}, 99, 10},
		{RateShape{Kind: "ramp", Base: 10, Peak: 110, After: d("10s"), Ramp: d("100s")}, 5, 10},
		{RateShape{Kind: "ramp", Base: 10, Peak: 110, After: d("10s"), Ramp: d("100s")}, 60, 60},
		{RateShape{Kind: "ramp", Base: 10, Peak: 110, After: d("10s"), Ramp: d("100s")}, 500, 110},
		{RateShape{Kind: "drop", Base: 100, Peak: 20}, 1, 20},
		{RateShape{Kind: "spike", Base: 10, Peak: 50, After: d("5s"), Period: d("10s")}, 7, 50},
		{RateShape{Kind: "spike", Base: 10, Peak: 50, After: d("5s"), Period: d("10s")}, 15, 10},
		{RateShape{Kind: "oscillate", Base: 0, Peak: 100, Period: d("40s")}, 20, 100},
		{RateShape{Kind: "oscillate", Base: 0, Peak: 100, Period: d("40s")}, 40, 0},
	} {
		near(t, tc.r.Kind, tc.r.at(tc.at), tc.want, 1e-9)
	}
}

func TestBadWorkloads(t *testing.T) {
	e, _ := newTestEngine(t)
	for _, w := range []Workload{
		{Rate: RateShape{Kind: "constant"}},
		{Vertices: []VertexModel{{Name: "Source: x", Skew: 2}}, Rate: RateShape{Kind: "constant"}},
		{Vertices: []VertexModel{{Name: "Source: x"}}, Rate: RateShape{Kind: "sawtooth"}},
		{Vertices: []VertexModel{{Name: "Source: x"}}, Rate: RateShape{Kind: "spike", Peak: 5}},
	} {
		wantErr(t, e.SetWorkload(key, w), 400, "Flink REST simulator")
	}
}

func TestDefaultMaxParallelismAndJavaDoubles(t *testing.T) {
	for p, want := range map[int]int{1: 128, 85: 128, 86: 256, 200: 512, 30000: 32768} {
		if got := defaultMaxParallelism(p); got != want {
			t.Errorf("defaultMaxParallelism(%d) = %d, want %d", p, got, want)
		}
	}
	for v, want := range map[float64]string{1000: "1000.0", 0: "0.0", 12.5: "12.5", 1.5e7: "1.5E7", 0.0001: "1.0E-4"} {
		if got := javaDouble(v); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", v, got, want)
		}
	}
}

// A vertex bounded by what its downstream system takes (TotalCapacity)
// is not relieved by more subtasks: the job reads the same, and its
// subtasks stay busy, waiting on it.
func TestTotalCapacityIsNotRelievedByMoreSubtasks(t *testing.T) {
	models := []VertexModel{{Name: "Source: orders", CapacityPerSubtask: 5000}, {Name: "Sink: db", CapacityPerSubtask: 500, TotalCapacity: 600}}
	for _, p := range []int{2, 4, 8} {
		read, left, out := Flow(models, []int{1, p}, 1000, 0)
		if read != 600 || left != 400 {
			t.Errorf("parallelism %d: read %.0f, left %.0f; want 600 and 400", p, read, left)
		}
		if out[1].BusyHot != 1000 || out[0].BPHot == 0 {
			t.Errorf("parallelism %d: sink busy %.0f, source back-pressured %.0f", p, out[1].BusyHot, out[0].BPHot)
		}
	}
	// Below the total, the per-subtask capacity is what bounds.
	if read, _, _ := Flow(models, []int{1, 1}, 1000, 0); read != 500 {
		t.Errorf("one subtask read %.0f, want 500", read)
	}
}

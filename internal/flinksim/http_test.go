package flinksim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

// schemaChecker wraps the simulator's handler and validates every Flink
// REST request and 2xx response against the official schema.
type schemaChecker struct {
	t      *testing.T
	schema *flinkschema.Schema
	next   http.Handler

	// lenient skips request validation, for tests that send bad requests.
	lenient bool

	mu   sync.Mutex
	seen map[string]int // operationId -> validated responses
}

func (s *schemaChecker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 4)
	if len(segs) < 4 || segs[0] != "clusters" {
		s.next.ServeHTTP(w, r)
		return
	}
	flinkPath := "/" + segs[3]
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	fr := r.Clone(r.Context())
	fr.URL.Path = flinkPath
	if err := s.schema.ValidateRequest(fr, body); err != nil && !s.lenient {
		s.t.Errorf("request: %v", err)
	}
	rec := httptest.NewRecorder()
	s.next.ServeHTTP(rec, r)
	if rec.Code >= 200 && rec.Code < 300 {
		if err := s.schema.ValidateResponse(r.Method, flinkPath, rec.Code, rec.Body.Bytes()); err != nil {
			s.t.Errorf("response: %v\n%s", err, rec.Body.Bytes())
		}
		_, op, _, _ := s.schema.Operation(r.Method, flinkPath)
		s.mu.Lock()
		s.seen[op.OperationID]++
		s.mu.Unlock()
	} else {
		var er flink.ErrorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || len(er.Errors) == 0 {
			s.t.Errorf("%s %s: HTTP %d without Flink's error body: %s", r.Method, r.URL.Path, rec.Code, rec.Body.Bytes())
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func newHTTPTest(t *testing.T) (*Engine, *fakeClock, *flink.Client, *schemaChecker, *httptest.Server) {
	t.Helper()
	schema, err := flinkschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, clk := newTestEngine(t)
	chk := &schemaChecker{t: t, schema: schema, next: NewHandler(e, logr.Discard()), seen: map[string]int{}}
	srv := httptest.NewServer(chk)
	t.Cleanup(srv.Close)
	tmpl := srv.URL + "/clusters/{namespace}/{name}"
	c := flink.NewClient(flink.Resolver{Override: tmpl}.BaseURL(key.Namespace, key.Name), srv.Client())
	c.MaxRetries = 0
	return e, clk, c, chk, srv
}

// TestRESTFollowsSchema drives every endpoint the simulator serves through
// the operator's own client, validating each exchange against the schema.
func TestRESTFollowsSchema(t *testing.T) {
	e, clk, c, chk, _ := newHTTPTest(t)
	ctx := context.Background()
	e.Observe(key, obs("tm-1", "tm-2"))

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, jarID, err := c.UploadJar(ctx, "wordcount.jar", strings.NewReader("PK"))
	must(err)
	jobID, err := c.RunJar(ctx, jarID, flink.JarRunRequest{EntryClass: "com.example.WordCount", Parallelism: 2, ProgramArgsList: []string{"--x"}})
	must(err)
	clk.step(25 * time.Second)

	ov, err := c.Overview(ctx)
	must(err)
	if ov.FlinkVersion != "1.19.1" || ov.SlotsTotal != 4 || ov.SlotsAvailable != 2 || ov.JobsRunning != 1 {
		t.Errorf("overview = %+v", ov)
	}
	_, err = c.DashboardConfiguration(ctx)
	must(err)
	_, err = c.Jobs(ctx)
	must(err)
	_, err = c.JobsOverview(ctx)
	must(err)
	j, err := c.Job(ctx, jobID)
	must(err)
	if j.State != flink.JobRunning {
		t.Errorf("job = %+v", j)
	}
	_, err = c.TaskManagers(ctx)
	must(err)

	cpTrig, err := c.TriggerCheckpoint(ctx, jobID, flink.CheckpointTriggerRequest{CheckpointType: "FULL"})
	must(err)
	st, err := c.CheckpointStatus(ctx, jobID, cpTrig)
	must(err)
	if st.Status.ID != flink.OperationInProgress {
		t.Errorf("checkpoint status = %+v", st)
	}
	clk.step(time.Second)
	_, err = c.CheckpointStatus(ctx, jobID, cpTrig)
	must(err)

	spTrig, err := c.TriggerSavepoint(ctx, jobID, flink.SavepointTriggerRequest{TargetDirectory: "s3://b/sp", FormatType: flink.SavepointFormatNative})
	must(err)
	_, err = c.SavepointStatus(ctx, jobID, spTrig)
	must(err)
	clk.step(2 * time.Second)
	sp, err := c.SavepointStatus(ctx, jobID, spTrig)
	must(err)
	if sp.Status.ID != flink.OperationCompleted || !strings.HasPrefix(sp.Operation.Location, "s3://b/sp/savepoint-") {
		t.Errorf("savepoint = %+v", sp)
	}

	// A failed savepoint carries a failure cause.
	e.SetSavepointFault(key, FaultFail)
	failTrig, err := c.TriggerSavepoint(ctx, jobID, flink.SavepointTriggerRequest{})
	must(err)
	clk.step(2 * time.Second)
	failed, err := c.SavepointStatus(ctx, jobID, failTrig)
	must(err)
	if failed.Operation == nil || !strings.Contains(failed.Operation.FailureCause.Message(), "fault injected") {
		t.Errorf("failed savepoint = %+v", failed.Operation)
	}
	e.ClearFaults(key)

	// Restart after a TaskManager is replaced; checkpoints show the restore
	// from the newest of the latest checkpoint and savepoint.
	before, err := c.Checkpoints(ctx, jobID)
	must(err)
	newest := before.Latest.Completed
	if before.Latest.Savepoint.ID > newest.ID {
		newest = before.Latest.Savepoint
	}
	e.Observe(key, obs("tm-1", "tm-3"))
	clk.step(3 * time.Second)
	cps, err := c.Checkpoints(ctx, jobID)
	must(err)
	if r := cps.Latest.Restored; r == nil || r.ExternalPath != newest.ExternalPath || r.ID != newest.ID {
		t.Errorf("restored = %+v, want %+v", r, newest)
	}

	stopTrig, err := c.StopWithSavepoint(ctx, jobID, flink.StopWithSavepointRequest{TargetDirectory: "s3://b/sp", Drain: false})
	must(err)
	clk.step(2 * time.Second)
	stop, err := c.SavepointStatus(ctx, jobID, stopTrig)
	must(err)
	if stop.Operation == nil || stop.Operation.Location == "" {
		t.Errorf("stop = %+v", stop)
	}
	j, err = c.Job(ctx, jobID)
	must(err)
	if j.State != flink.JobFinished {
		t.Errorf("after stop = %s", j.State)
	}

	second, err := c.RunJar(ctx, jarID, flink.JarRunRequest{SavepointPath: stop.Operation.Location, AllowNonRestoredState: true})
	must(err)
	must(c.CancelJob(ctx, second))
	_, err = c.Checkpoints(ctx, second)
	must(err)
	_, err = c.Job(ctx, second)
	must(err)

	for _, op := range []string{
		"getClusterOverview", "getDashboardConfiguration", "getJobIdsWithStatusesOverview", "getJobsOverview",
		"getJobDetails", "getCheckpointingStatistics", "triggerCheckpoint", "getCheckpointStatus",
		"triggerSavepoint", "getSavepointStatus", "triggerStopWithSavepoint", "cancelJob", "uploadJar",
		"submitJobFromJar", "getTaskManagers",
	} {
		if chk.seen[op] == 0 {
			t.Errorf("operation %s was not exercised", op)
		}
	}
}

func TestRESTErrors(t *testing.T) {
	e, _, c, chk, srv := newHTTPTest(t)
	chk.lenient = true
	ctx := context.Background()

	// Unknown cluster and JobManager down: 503, which the client calls unavailable.
	if _, err := c.Overview(ctx); !flink.IsUnavailable(err) {
		t.Errorf("unknown cluster: %v", err)
	}
	e.Observe(key, Observation{JobManagerUID: "jm-1", Version: "1.19.1"})
	if _, err := c.Overview(ctx); !flink.IsUnavailable(err) {
		t.Errorf("JobManager not ready: %v", err)
	}
	e.Observe(key, obs("tm-1"))
	if _, err := c.Job(ctx, "0123456789abcdef0123456789abcdef"); !flink.IsNotFound(err) {
		t.Errorf("unknown job: %v", err)
	}

	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/clusters/team-a/demo/v1/overview", "", 200},
		{"GET", "/clusters/team-a/demo/jobmanager/config", "", 404},
		{"PUT", "/clusters/team-a/demo/overview", "", 404},
		{"POST", "/clusters/team-a/demo/jobs/0123456789abcdef0123456789abcdef/savepoints", `{"targetDirectory":"x"}`, 400},
		{"POST", "/clusters/team-a/demo/jars/upload", "not multipart", 400},
		{"GET", "/elsewhere", "", 404},
		{"GET", "/healthz", "", 200},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestAdminAPI(t *testing.T) {
	e, clk, c, _, srv := newHTTPTest(t)
	ctx := context.Background()
	e.Observe(key, obs("tm-1"))
	_, jarID, _ := c.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	jobID, _ := c.RunJar(ctx, jarID, flink.JarRunRequest{})
	admin := srv.URL + "/admin/clusters/team-a/demo"
	do := func(method, url, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %s, want %d", method, url, resp.StatusCode, b, want)
		}
		return b
	}

	do("POST", admin+"/unavailable", `{"requests":2}`, 204)
	for i, want := range []bool{true, true, false} {
		if _, err := c.Overview(ctx); flink.IsUnavailable(err) != want {
			t.Errorf("request %d: err = %v", i, err)
		}
	}
	do("POST", admin+"/unavailable", `{}`, 204)
	if _, err := c.Overview(ctx); !flink.IsUnavailable(err) {
		t.Errorf("until cleared: %v", err)
	}
	do("DELETE", admin+"/faults", "", 204)

	do("POST", admin+"/faults", `{"savepoint":"stall"}`, 204)
	trig, err := c.StopWithSavepoint(ctx, jobID, flink.StopWithSavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	clk.step(time.Minute)
	if st, _ := c.SavepointStatus(ctx, jobID, trig); st.Status.ID != flink.OperationInProgress {
		t.Errorf("stalled = %+v", st)
	}
	do("POST", admin+"/faults", `{"savepoint":"explode"}`, 400)
	do("DELETE", admin+"/faults", "", 204)

	var v ClusterView
	if err := json.Unmarshal(do("GET", admin, "", 200), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Jobs) != 1 || v.Jobs[0].SavepointsTriggered != 1 || v.Jobs[0].StopsTriggered != 1 || v.Jobs[0].State != flink.JobFinished {
		t.Errorf("view = %+v", v)
	}
	if v.Requests["POST /jobs/{jobid}/stop"] != 1 {
		t.Errorf("requests = %v", v.Requests)
	}

	second, _ := c.RunJar(ctx, jarID, flink.JarRunRequest{})
	do("POST", admin+"/jobs/"+second+"/state", `{"state":"FAILED"}`, 204)
	if j, _ := c.Job(ctx, second); j.State != flink.JobFailed {
		t.Errorf("forced = %s", j.State)
	}
	do("POST", admin+"/jobs/"+second+"/state", `{"state":"RUNNING"}`, 400)
	do("GET", srv.URL+"/admin/clusters/team-a/missing", "", 404)
	b := do("GET", srv.URL+"/admin/clusters", "", 200)
	if !strings.Contains(string(b), `"name":"demo"`) {
		t.Errorf("clusters = %s", b)
	}
}

// TestArtifacts serves the stand-in jar that the local platform's job
// example fetches, and nothing that is not a jar.
func TestArtifacts(t *testing.T) {
	srv := httptest.NewServer(NewHandler(NewEngine(EngineOptions{}), logr.Discard()))
	defer srv.Close()
	for path, want := range map[string]int{
		"/artifacts/wordcount.jar": http.StatusOK,
		"/artifacts/notes.txt":     http.StatusNotFound,
		"/artifacts/a/b.jar":       http.StatusNotFound,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
		if want == http.StatusOK && resp.Header.Get("Content-Type") != "application/java-archive" {
			t.Errorf("GET %s: content type %q", path, resp.Header.Get("Content-Type"))
		}
	}
}

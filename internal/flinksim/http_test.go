package flinksim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
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
// REST request and 2xx response against the schema of the minor the test
// cluster runs.
type schemaChecker struct {
	t      *testing.T
	schema *flinkschema.Schema
	next   http.Handler

	// lenient skips request validation, for tests that send bad requests.
	lenient bool

	mu   sync.Mutex
	seen map[string]int // operationId -> validated responses
}

// recorder passes a response through while keeping a copy; it can still
// be hijacked, which is how the simulator refuses a connection.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return r.ResponseWriter.(http.Hijacker).Hijack()
}

func (s *schemaChecker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 4)
	if len(segs) < 4 || segs[0] != "clusters" {
		s.next.ServeHTTP(w, r)
		return
	}
	flinkPath := "/" + segs[3]
	if rest, ok := strings.CutPrefix(segs[3], "pods/"); ok {
		_, after, _ := strings.Cut(rest, "/")
		flinkPath = "/" + after
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	fr := r.Clone(r.Context())
	fr.URL.Path = flinkPath
	if err := s.schema.ValidateRequest(fr, body); err != nil && !s.lenient {
		s.t.Errorf("request: %v", err)
	}
	rec := &recorder{ResponseWriter: w}
	s.next.ServeHTTP(rec, r)
	switch {
	case rec.status == 0:
		// Refused: nothing was answered.
	case rec.status >= 200 && rec.status < 300:
		if err := s.schema.ValidateResponse(r.Method, flinkPath, rec.status, rec.body.Bytes()); err != nil {
			s.t.Errorf("response: %v\n%s", err, rec.body.Bytes())
		}
		_, op, _, _ := s.schema.Operation(r.Method, flinkPath)
		s.mu.Lock()
		s.seen[op.OperationID]++
		s.mu.Unlock()
	default:
		var er flink.ErrorResponse
		if err := json.Unmarshal(rec.body.Bytes(), &er); err != nil || len(er.Errors) == 0 {
			s.t.Errorf("%s %s: HTTP %d without Flink's error body: %s", r.Method, r.URL.Path, rec.status, rec.body.Bytes())
		}
	}
}

func newHTTPTest(t *testing.T, minor string) (*Engine, *fakeClock, *flink.Client, *schemaChecker, *httptest.Server) {
	t.Helper()
	schema, err := flinkschema.ForMinor(minor)
	if err != nil {
		t.Fatal(err)
	}
	e, clk := newTestEngine(t)
	chk := &schemaChecker{t: t, schema: schema, next: NewHandler(e, logr.Discard()), seen: map[string]int{}}
	srv := httptest.NewServer(chk)
	t.Cleanup(srv.Close)
	c := flink.NewClient(flink.Resolver{Override: srv.URL + "/clusters/{namespace}/{name}"}.BaseURL(key.Namespace, key.Name), srv.Client())
	c.MaxRetries = 0
	return e, clk, c, chk, srv
}

// patches are one release of each supported minor.
var patches = map[string]string{"1.17": "1.17.2", "1.18": "1.18.1", "1.19": "1.19.1", "1.20": "1.20.1", "2.0": "2.0.0", "2.1": "2.1.1", "2.2": "2.2.0"}

// TestRESTFollowsSchema drives every endpoint the simulator serves through
// the operator's own client, for every supported minor, validating each
// exchange against that minor's schema.
func TestRESTFollowsSchema(t *testing.T) {
	for _, minor := range flinkschema.Minors {
		t.Run(minor, func(t *testing.T) {
			e, clk, c, chk, _ := newHTTPTest(t, minor)
			ctx := context.Background()
			sc := simple(tms(2), nil)
			sc.Version, sc.Env = patches[minor], s3Plugin(patches[minor])
			e.Observe(key, sc.Observation())
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
			_, err = c.Job(ctx, jobID) // INITIALIZING: no vertices yet
			must(err)
			clk.step(25 * time.Second)

			ov, err := c.Overview(ctx)
			must(err)
			if ov.FlinkVersion != patches[minor] || ov.SlotsTotal != 4 || ov.SlotsAvailable != 2 || ov.JobsRunning != 1 {
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
			if failed.Operation == nil || !strings.Contains(failed.Operation.FailureCause.Message(), "Failure to finalize checkpoint.") {
				t.Errorf("failed savepoint = %+v", failed.Operation)
			}
			e.ClearFaults(key)

			// The TaskManager running the job is replaced: the job
			// restores its latest checkpoint.
			before, err := c.Checkpoints(ctx, jobID)
			must(err)
			sc.TaskManagers = []string{"tm-b", "tm-c"}
			e.Observe(key, sc.Observation())
			clk.step(4 * time.Second)
			cps, err := c.Checkpoints(ctx, jobID)
			must(err)
			if r := cps.Latest.Restored; r == nil || r.ExternalPath != before.Latest.Completed.ExternalPath {
				t.Errorf("restored = %+v, want %+v", r, before.Latest.Completed)
			}
			ex, err := c.JobExceptions(ctx, jobID)
			must(err)
			if len(ex.ExceptionHistory.Entries) != 1 || !strings.Contains(ex.ExceptionHistory.Entries[0].Stacktrace, "The TaskExecutor is shutting down.") {
				t.Errorf("exceptions = %+v", ex)
			}

			stopTrig, err := c.StopWithSavepoint(ctx, jobID, flink.StopWithSavepointRequest{TargetDirectory: "s3://b/sp", Drain: false})
			must(err)
			clk.step(2 * time.Second)
			stop, err := c.SavepointStatus(ctx, jobID, stopTrig)
			must(err)
			if stop.Operation == nil || stop.Operation.Location == "" {
				t.Fatalf("stop = %+v", stop)
			}
			if j, _ := c.Job(ctx, jobID); j.State != flink.JobFinished {
				t.Errorf("after stop = %s", j.State)
			}

			second, err := c.RunJar(ctx, jarID, flink.JarRunRequest{SavepointPath: stop.Operation.Location, AllowNonRestoredState: true})
			must(err)
			must(c.DeleteJar(ctx, jarID))
			clk.step(2 * time.Second)
			must(c.CancelJob(ctx, second))
			_, err = c.Checkpoints(ctx, second)
			must(err)
			_, err = c.Job(ctx, second)
			must(err)

			for _, op := range []string{
				"getClusterOverview", "getDashboardConfiguration", "getJobIdsWithStatusesOverview", "getJobsOverview",
				"getJobDetails", "getCheckpointingStatistics", "triggerCheckpoint", "getCheckpointStatus",
				"triggerSavepoint", "getSavepointStatus", "triggerStopWithSavepoint", "cancelJob", "uploadJar",
				"submitJobFromJar", "getTaskManagers", "getJobExceptions", "deleteJar",
			} {
				if chk.seen[op] == 0 {
					t.Errorf("operation %s was not exercised", op)
				}
			}
		})
	}
}

// Request bodies are read as the answering minor reads them: before 1.20
// an unknown property is a 400 (the strict ObjectMapper); from 1.20 it is
// ignored (FLINK-35302). An enum value is read by its exact name in every
// minor.
func TestUnknownBodyFields(t *testing.T) {
	for _, tc := range []struct {
		minor string
		body  string
		want  int
	}{
		{"1.17", `{"target-directory":"s3://b/sp","bogus":1}`, http.StatusBadRequest},
		{"1.19", `{"target-directory":"s3://b/sp","bogus":1}`, http.StatusBadRequest},
		{"1.20", `{"target-directory":"s3://b/sp","bogus":1}`, http.StatusAccepted},
		{"2.2", `{"target-directory":"s3://b/sp","bogus":1}`, http.StatusAccepted},
		{"1.19", `{"target-directory":7}`, http.StatusBadRequest},
		// An enum by its exact name only (Jackson without
		// ACCEPT_CASE_INSENSITIVE_ENUMS).
		{"1.19", `{"target-directory":"s3://b/sp","formatType":"native"}`, http.StatusBadRequest},
		{"1.19", `{"target-directory":"s3://b/sp","formatType":"NATIVE"}`, http.StatusAccepted},
		{"2.2", `{"target-directory":"s3://b/sp","formatType":"Canonical"}`, http.StatusBadRequest},
		{"1.19", `not json`, http.StatusBadRequest},
		{"1.19", ``, http.StatusAccepted},
	} {
		t.Run(tc.minor+" "+tc.body, func(t *testing.T) {
			e, clk, c, chk, srv := newHTTPTest(t, tc.minor)
			chk.lenient = true
			sc := simple(tms(1), nil)
			sc.Version, sc.Env = patches[tc.minor], s3Plugin(patches[tc.minor])
			e.Observe(key, sc.Observation())
			_, jar, _ := c.UploadJar(context.Background(), "job.jar", strings.NewReader("PK"))
			id, err := c.RunJar(context.Background(), jar, flink.JarRunRequest{})
			if err != nil {
				t.Fatal(err)
			}
			clk.step(2 * time.Second)
			resp, err := http.Post(srv.URL+"/clusters/team-a/demo/jobs/"+id+"/savepoints", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("HTTP %d %s, want %d", resp.StatusCode, b, tc.want)
			}
			if tc.want == http.StatusBadRequest && !strings.Contains(string(b), "Request did not match expected format SavepointTriggerRequestBody.") {
				t.Errorf("body = %s", b)
			}
		})
	}
}

// Each minor serves the paths its schema has.
func TestPathsPerMinor(t *testing.T) {
	for _, tc := range []struct {
		minor, method, path string
		want                int
	}{
		// /jobs/{jobid}/resource-requirements came in 1.18.
		{"1.17", "GET", "/jobs/0123456789abcdef0123456789abcdef/resource-requirements", http.StatusNotFound},
		// Flink serves a vertex's details; the simulator does not.
		{"1.18", "GET", "/jobs/0123456789abcdef0123456789abcdef/vertices/0123456789abcdef0123456789abcdef", http.StatusNotImplemented},
		{"1.19", "GET", "/v1/overview", http.StatusOK},
		{"1.19", "PUT", "/overview", http.StatusNotFound},
		{"1.19", "GET", "/nope", http.StatusNotFound},
		{"1.19", "GET", "/jobs/not-an-id", http.StatusBadRequest},
	} {
		t.Run(tc.minor+" "+tc.method+" "+tc.path, func(t *testing.T) {
			e, _, _, chk, srv := newHTTPTest(t, tc.minor)
			chk.lenient = true
			sc := simple(tms(1), nil)
			sc.Version, sc.Env = patches[tc.minor], s3Plugin(patches[tc.minor])
			e.Observe(key, sc.Observation())
			req, _ := http.NewRequest(tc.method, srv.URL+"/clusters/team-a/demo"+tc.path, nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("HTTP %d %s, want %d", resp.StatusCode, b, tc.want)
			}
			if tc.want == http.StatusNotFound && !strings.Contains(string(b), "Not found: ") {
				t.Errorf("body = %s", b)
			}
		})
	}
}

// When no JobManager listens the client's connection fails without a
// response, as a refused connection does.
func TestRefusedConnection(t *testing.T) {
	e, _, c, _, _ := newHTTPTest(t, "1.19")
	ctx := context.Background()
	var fe *flink.Error
	if _, err := c.Overview(ctx); !errors.As(err, &fe) || fe.StatusCode != 0 || !flink.IsUnavailable(err) {
		t.Errorf("unknown cluster: %v", err)
	}
	bad := simple(tms(1), map[string]string{"jobmanager.memory.process.size": "tiny"})
	e.Observe(key, bad.Observation())
	if _, err := c.Overview(ctx); !errors.As(err, &fe) || fe.StatusCode != 0 {
		t.Errorf("JobManager that refused to start: %v", err)
	}
	if _, err := c.TriggerSavepoint(ctx, "0123456789abcdef0123456789abcdef", flink.SavepointTriggerRequest{}); !errors.As(err, &fe) || fe.StatusCode != 0 {
		t.Errorf("POST to a JobManager that refused to start: %v", err)
	}
}

// A lost answer (LoseAnswers): the request takes effect and the client
// gets no answer, as from a reset connection; only the requests counted
// lose theirs. Flink deduplicates the retry by its trigger ID
// (DispatcherCachedOperationsHandler registers a key once), so the same
// stop sent again is answered and stops nothing twice.
func TestLostAnswers(t *testing.T) {
	e, clk, c, _, _ := newHTTPTest(t, "1.19")
	ctx := context.Background()
	e.Observe(key, simple(tms(1), s3Plugin("1.19.1")).Observation())
	id := running(t, e, clk, flink.JarRunRequest{})
	e.LoseAnswers(key, "POST /jobs/{jobid}/stop", 1)
	req := flink.StopWithSavepointRequest{TargetDirectory: "s3://state/savepoints", TriggerID: "0123456789abcdef0123456789abcdef"}
	var fe *flink.Error
	if _, err := c.StopWithSavepoint(ctx, id, req); !errors.As(err, &fe) || fe.StatusCode != 0 {
		t.Fatalf("stop with its answer lost: %v, want no answer", err)
	}
	if v := view(t, e, id); v.StopsTriggered != 1 {
		t.Errorf("the stop whose answer was lost: %d stops reached the job, want 1", v.StopsTriggered)
	}
	if v, _ := e.View(key); v.LostAnswers["POST /jobs/{jobid}/stop"] != 0 {
		t.Errorf("answers still to lose: %v, want none", v.LostAnswers)
	}
	if _, err := c.Job(ctx, id); err != nil {
		t.Errorf("a GET after the lost answer: %v", err)
	}
	got, err := c.StopWithSavepoint(ctx, id, req)
	if err != nil || got != req.TriggerID {
		t.Fatalf("the same stop again: %q, %v; want its trigger ID answered", got, err)
	}
	if v := view(t, e, id); v.StopsTriggered != 1 {
		t.Errorf("after the retry: %d stops, want 1", v.StopsTriggered)
	}
	e.LoseAnswers(key, "GET /jobs/{jobid}", -1)
	if _, err := c.Job(ctx, id); err != nil {
		t.Errorf("a fault cleared with n <= 0 still loses answers: %v", err)
	}
}

func TestRESTErrors(t *testing.T) {
	e, clk, c, chk, srv := newHTTPTest(t, "1.19")
	chk.lenient = true
	ctx := context.Background()
	e.Observe(key, simple(tms(1), nil).Observation())
	if _, err := c.Job(ctx, "0123456789abcdef0123456789abcdef"); !flink.IsNotFound(err) || !strings.Contains(err.Error(), "org.apache.flink.runtime.rest.NotFoundException: Job 0123456789abcdef0123456789abcdef not found") {
		t.Errorf("unknown job: %v", err)
	}
	_, jar, _ := c.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	id, _ := c.RunJar(ctx, jar, flink.JarRunRequest{})
	clk.step(2 * time.Second)
	if _, err := c.RunJar(ctx, jar, flink.JarRunRequest{JobID: id}); err == nil || !strings.Contains(err.Error(), "HTTP 400: org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.") {
		t.Errorf("duplicate: %v", err)
	}
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/clusters/team-a/demo/jars/upload", "not multipart", 400},
		{"DELETE", "/clusters/team-a/demo/jars/" + jar, "", 200},
		{"POST", "/clusters/team-a/demo/jobs/" + id + "/savepoints", `{"triggerId":"short"}`, 400},
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
	e, clk, c, _, srv := newHTTPTest(t, "1.19")
	ctx := context.Background()
	e.Observe(key, simple(tms(1), map[string]string{"restart-strategy.fixed-delay.attempts": "1"}).Observation())
	_, jarID, _ := c.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	jobID, _ := c.RunJar(ctx, jarID, flink.JarRunRequest{})
	clk.step(2 * time.Second)
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

	do("POST", admin+"/faults", `{"savepoint":"stall","cancelDelay":"1m"}`, 204)
	trig, err := c.StopWithSavepoint(ctx, jobID, flink.StopWithSavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	clk.step(time.Minute)
	if st, _ := c.SavepointStatus(ctx, jobID, trig); st.Status.ID != flink.OperationInProgress {
		t.Errorf("stalled = %+v", st)
	}
	do("POST", admin+"/faults", `{"savepoint":"explode"}`, 400)
	do("POST", admin+"/faults", `{"stop":"hang"}`, 400)
	do("POST", admin+"/faults", `{"savepointDelay":"soon"}`, 400)
	do("POST", admin+"/faults", `{"restoreDelay":"soon"}`, 400)
	do("POST", admin+"/faults", `{"stop":"tasksDoNotFinish","savepointDelay":"5m"}`, 204)
	if v, _ := e.View(key); v.StopFault != StopTasksDoNotFinish {
		t.Errorf("stop fault = %q", v.StopFault)
	}
	do("DELETE", admin+"/faults", "", 204)
	if v, _ := e.View(key); v.StopFault != StopFinishes {
		t.Errorf("stop fault after clearing = %q", v.StopFault)
	}
	clk.step(2 * time.Second)
	b := do("POST", admin+"/operations/expire", "", 200)
	if !strings.Contains(string(b), `"expired":1`) {
		t.Errorf("expire = %s", b)
	}

	var v ClusterView
	if err := json.Unmarshal(do("GET", admin, "", 200), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Jobs) != 1 || v.Jobs[0].SavepointsTriggered != 1 || v.Jobs[0].StopsTriggered != 1 || v.Jobs[0].State != flink.JobFinished {
		t.Errorf("view = %+v", v)
	}
	if v.Requests["POST /jobs/{jobid}/stop"] != 1 || len(v.JobManagers) != 1 || !v.JobManagers[0].Leader {
		t.Errorf("view = %+v", v)
	}

	second, _ := c.RunJar(ctx, jarID, flink.JarRunRequest{})
	clk.step(2 * time.Second)
	do("POST", admin+"/jobs/"+second+"/fail", `{"cause":"boom"}`, 204)
	if j, _ := c.Job(ctx, second); j.State != flink.JobRestarting {
		t.Errorf("after one failure = %s", j.State)
	}
	clk.step(4 * time.Second)
	do("POST", admin+"/jobs/"+second+"/fail", `{}`, 204)
	clk.step(time.Second)
	if j, _ := c.Job(ctx, second); j.State != flink.JobFailed {
		t.Errorf("after the attempts = %s", j.State)
	}
	third, _ := c.RunJar(ctx, jarID, flink.JarRunRequest{})
	clk.step(2 * time.Second)
	do("POST", admin+"/jobs/"+third+"/state", `{"state":"FAILED"}`, 204)
	if j, _ := c.Job(ctx, third); j.State != flink.JobFailed {
		t.Errorf("forced = %s", j.State)
	}
	do("POST", admin+"/jobs/"+third+"/state", `{"state":"RUNNING"}`, 400)
	b = do("POST", admin+"/paths/lose", `{"path":"s3://bucket/savepoints"}`, 200)
	if !strings.Contains(string(b), `"removed":`) {
		t.Errorf("lose = %s", b)
	}
	if b := do("POST", admin+"/jobstore/expire", "", 200); !strings.Contains(string(b), `"expired":3`) {
		t.Errorf("jobstore/expire = %s", b)
	}
	// A POST: Go's transport sends an idempotent request again by itself
	// when a reused connection is reset before any answer.
	do("POST", admin+"/answers/lose", `{"endpoint":"POST /jars/{jarid}/run","requests":1}`, 204)
	var fe *flink.Error
	if _, err := c.RunJar(ctx, jarID, flink.JarRunRequest{}); !errors.As(err, &fe) || fe.StatusCode != 0 {
		t.Errorf("answer to lose: %v", err)
	}
	if _, err := c.RunJar(ctx, jarID, flink.JarRunRequest{}); err != nil {
		t.Errorf("after the one lost answer: %v", err)
	}
	do("POST", admin+"/answers/lose", `{"requests":1}`, 400)
	do("POST", admin+"/jobmanager/stop", "", 204)
	do("POST", admin+"/jobmanager/lose", "", 204)
	if jobs, err := c.Jobs(ctx); err != nil || len(jobs.Jobs) != 0 {
		t.Errorf("after losing the JobManager: %+v, %v", jobs, err)
	}
	do("GET", srv.URL+"/admin/clusters/team-a/missing", "", 404)
	if b := do("GET", srv.URL+"/admin/clusters", "", 200); !strings.Contains(string(b), `"name":"demo"`) {
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

// The Service balances connections, not requests: a client that keeps its
// connection talks to one JobManager; a new connection may reach another,
// which does not have the jar the first one received.
func TestServiceBalancesConnections(t *testing.T) {
	e, _, c, _, srv := newHTTPTest(t, "1.19")
	sc := simple(tms(1), map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo", "high-availability.storageDir": "s3://bucket/ha",
	})
	o := withStandby(sc.Observation())
	e.Observe(key, o)
	ctx := context.Background()
	_, jar, err := c.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunJar(ctx, jar, flink.JarRunRequest{}); err != nil {
		t.Fatalf("run on the same connection: %v", err)
	}
	_, jar, _ = c.UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	fresh := flink.NewClient(flink.Resolver{Override: srv.URL + "/clusters/{namespace}/{name}"}.BaseURL(key.Namespace, key.Name),
		&http.Client{Transport: &http.Transport{}})
	fresh.MaxRetries = 0
	if _, err := fresh.RunJar(ctx, jar, flink.JarRunRequest{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("run on another connection, which reached the other JobManager: %v", err)
	}
}

// A JobManager pod can be addressed directly, bypassing the Service, as
// the operator does to upload and run a jar on one JobManager.
func TestPodURLs(t *testing.T) {
	e, _, _, _, srv := newHTTPTest(t, "1.19")
	sc := simple(tms(1), map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo", "high-availability.storageDir": "s3://bucket/ha",
	})
	o := withStandby(sc.Observation())
	e.Observe(key, o)
	// Each pod at its own UID; a pod that does not exist at none.
	podAt := func(name, uid string) *flink.Client {
		c := flink.NewClient(flink.Resolver{PodOverride: srv.URL + "/clusters/{namespace}/{name}/pods/{pod}@{uid}"}.JobManagerURL(key.Namespace, key.Name, name, uid, ""),
			&http.Client{Transport: &http.Transport{}})
		c.MaxRetries = 0
		return c
	}
	pod := func(name string) *flink.Client {
		for _, jm := range o.JobManagers {
			if jm.Name == name {
				return podAt(name, jm.UID)
			}
		}
		return podAt(name, name+"-uid")
	}
	ctx := context.Background()
	_, jar, err := pod("jm-2").UploadJar(ctx, "job.jar", strings.NewReader("PK"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pod("jm-1").RunJar(ctx, jar, flink.JarRunRequest{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("run on the other pod: %v", err)
	}
	if _, err := pod("jm-2").RunJar(ctx, jar, flink.JarRunRequest{}); err != nil {
		t.Errorf("run on the pod that has the jar: %v", err)
	}
	var fe *flink.Error
	if _, err := pod("jm-9").Overview(ctx); !errors.As(err, &fe) || fe.StatusCode != 0 {
		t.Errorf("a pod that does not exist: %v", err)
	}
	// A later incarnation of jm-2's name, which the simulator has not
	// seen yet, is not the process it runs for the earlier one.
	if _, err := podAt("jm-2", "jm-2-successor").Overview(ctx); !errors.As(err, &fe) || fe.StatusCode != 0 {
		t.Errorf("a pod's successor of the same name, not yet observed: %v, want the connection refused", err)
	}
	// A name alone names no incarnation: the harness's template is wrong,
	// and the answer says so rather than guess the process.
	if _, err := podAt("jm-2", "").Overview(ctx); !errors.As(err, &fe) || fe.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "{pod}@{uid}") {
		t.Errorf("a pod addressed by its name alone: %v, want 400 naming the template", err)
	}
}

package flink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testJobID = "0123456789abcdef0123456789abcdef"

func newTestClient(t *testing.T, h http.HandlerFunc) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL+"/", srv.Client())
	c.RetryBackoff = time.Millisecond
	return c, srv
}

func TestResolver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		override string
		want     string
	}{
		{"service DNS by default", "", "http://demo-jobmanager.team-a.svc:8081"},
		{"override template", "http://127.0.0.1:8089/clusters/{namespace}/{name}", "http://127.0.0.1:8089/clusters/team-a/demo"},
		{"override repeats placeholders", "http://{name}.{namespace}:1/{name}", "http://demo.team-a:1/demo"},
		{"override without placeholders", "http://flink:8081", "http://flink:8081"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Resolver{Override: tc.override}).BaseURL("team-a", "demo"); got != tc.want {
				t.Errorf("BaseURL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGetRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		statuses  []int // answered in order; the last one repeats
		wantCalls int32
		wantErr   bool
		wantCode  int
	}{
		{"ok at once", []int{200}, 1, false, 0},
		{"503 then ok", []int{503, 200}, 2, false, 0},
		{"500 twice then ok", []int{500, 500, 200}, 3, false, 0},
		{"503 forever gives up after retries", []int{503}, 3, true, 503},
		{"404 is not retried", []int{404}, 1, true, 404},
		{"400 is not retried", []int{400}, 1, true, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1)) - 1
				code := tc.statuses[min(n, len(tc.statuses)-1)]
				w.WriteHeader(code)
				if code == 200 {
					_, _ = io.WriteString(w, `{"flink-version":"1.18.1","taskmanagers":2}`)
				} else {
					_, _ = io.WriteString(w, `{"errors":["boom\nat stack"]}`)
				}
			})
			ov, err := c.Overview(context.Background())
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("calls = %d, want %d", got, tc.wantCalls)
			}
			if tc.wantErr {
				var fe *Error
				if !errors.As(err, &fe) || fe.StatusCode != tc.wantCode {
					t.Fatalf("err = %v, want *Error with status %d", err, tc.wantCode)
				}
				if fe.Endpoint != "/overview" || fe.Method != "GET" || !strings.Contains(err.Error(), "GET /overview: HTTP") || !strings.HasSuffix(err.Error(), ": boom") {
					t.Errorf("error %q does not name the endpoint and status", err)
				}
				return
			}
			if err != nil || ov.FlinkVersion != "1.18.1" || ov.TaskManagers != 2 {
				t.Fatalf("Overview = %+v, %v", ov, err)
			}
		})
	}
}

// Operations that start something must reach Flink exactly once, even when
// the answer is a 503.
func TestTriggersAreNeverRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(*Client) error
	}{
		{"savepoint", func(c *Client) error {
			_, err := c.TriggerSavepoint(context.Background(), testJobID, SavepointTriggerRequest{TargetDirectory: "s3://b/sp"})
			return err
		}},
		{"stop with savepoint", func(c *Client) error {
			_, err := c.StopWithSavepoint(context.Background(), testJobID, StopWithSavepointRequest{})
			return err
		}},
		{"checkpoint", func(c *Client) error {
			_, err := c.TriggerCheckpoint(context.Background(), testJobID, CheckpointTriggerRequest{})
			return err
		}},
		{"run jar", func(c *Client) error {
			_, err := c.RunJar(context.Background(), "x.jar", JarRunRequest{})
			return err
		}},
		{"cancel", func(c *Client) error { return c.CancelJob(context.Background(), testJobID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			err := tc.call(c)
			if !IsUnavailable(err) {
				t.Errorf("err = %v, want unavailable", err)
			}
			if calls.Load() != 1 {
				t.Errorf("calls = %d, want exactly 1", calls.Load())
			}
		})
	}
}

func TestUnreachableAndTimeout(t *testing.T) {
	// A listener that is closed at once: connection refused.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := NewClient(url, nil)
	c.RetryBackoff = time.Millisecond
	_, err := c.Jobs(context.Background())
	var fe *Error
	if !errors.As(err, &fe) || fe.StatusCode != 0 || !IsUnavailable(err) || IsNotFound(err) {
		t.Fatalf("err = %#v, want unreachable", err)
	}
	if !strings.Contains(err.Error(), "GET /jobs: unreachable") {
		t.Errorf("error %q does not say unreachable", err)
	}

	block := make(chan struct{})
	slow, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(block) })
	slow.RequestTimeout = 20 * time.Millisecond
	slow.MaxRetries = 0
	start := time.Now()
	_, err = slow.Job(context.Background(), testJobID)
	if !IsUnavailable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline exceeded", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}

	// A jar run is answered once main() has submitted the job: it
	// outlasts the timeout of a read.
	late, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		_, _ = w.Write([]byte(`{"jobid":"` + testJobID + `"}`))
	})
	late.RequestTimeout = 20 * time.Millisecond
	if id, err := late.RunJar(context.Background(), "x.jar", JarRunRequest{}); err != nil || id != testJobID {
		t.Errorf("RunJar answered after 200 ms with a 20 ms read timeout = %q, %v; want the job", id, err)
	}
}

func TestRequestsOnTheWire(t *testing.T) {
	type seen struct{ method, path, query, ctype, body string }
	for _, tc := range []struct {
		name   string
		call   func(*Client) (any, error)
		answer string
		want   seen
		check  func(t *testing.T, got any)
	}{
		{
			name: "savepoint trigger",
			call: func(c *Client) (any, error) {
				return c.TriggerSavepoint(context.Background(), testJobID, SavepointTriggerRequest{TargetDirectory: "s3://b/sp", FormatType: SavepointFormatCanonical})
			},
			answer: `{"request-id":"fedcba9876543210fedcba9876543210"}`,
			want:   seen{"POST", "/jobs/" + testJobID + "/savepoints", "", "application/json", `{"target-directory":"s3://b/sp","cancel-job":false,"formatType":"CANONICAL"}`},
			check: func(t *testing.T, got any) {
				if got != "fedcba9876543210fedcba9876543210" {
					t.Errorf("trigger id = %v", got)
				}
			},
		},
		{
			name: "stop with savepoint uses camelCase targetDirectory",
			call: func(c *Client) (any, error) {
				return c.StopWithSavepoint(context.Background(), testJobID, StopWithSavepointRequest{TargetDirectory: "s3://b/sp", Drain: true})
			},
			answer: `{"request-id":"fedcba9876543210fedcba9876543210"}`,
			want:   seen{"POST", "/jobs/" + testJobID + "/stop", "", "application/json", `{"targetDirectory":"s3://b/sp","drain":true}`},
		},
		{
			name:   "cancel",
			call:   func(c *Client) (any, error) { return nil, c.CancelJob(context.Background(), testJobID) },
			answer: `{}`,
			want:   seen{"PATCH", "/jobs/" + testJobID, "mode=CANCEL", "", ""},
		},
		{
			name: "run jar",
			call: func(c *Client) (any, error) {
				return c.RunJar(context.Background(), "abc_job.jar", JarRunRequest{EntryClass: "com.x.Main", ProgramArgsList: []string{"--a", "1"}, Parallelism: 4, SavepointPath: "s3://b/sp/1", AllowNonRestoredState: true})
			},
			answer: `{"jobid":"` + testJobID + `"}`,
			want:   seen{"POST", "/jars/abc_job.jar/run", "", "application/json", `{"entryClass":"com.x.Main","programArgsList":["--a","1"],"parallelism":4,"savepointPath":"s3://b/sp/1","allowNonRestoredState":true}`},
			check: func(t *testing.T, got any) {
				if got != testJobID {
					t.Errorf("job id = %v", got)
				}
			},
		},
		{
			name: "savepoint status completed",
			call: func(c *Client) (any, error) {
				return c.SavepointStatus(context.Background(), testJobID, "fedcba9876543210fedcba9876543210")
			},
			answer: `{"status":{"id":"COMPLETED"},"operation":{"location":"s3://b/sp/savepoint-1"}}`,
			want:   seen{"GET", "/jobs/" + testJobID + "/savepoints/fedcba9876543210fedcba9876543210", "", "", ""},
			check: func(t *testing.T, got any) {
				op := got.(*SavepointOperation)
				if op.Status.ID != OperationCompleted || op.Operation.Location != "s3://b/sp/savepoint-1" {
					t.Errorf("status = %+v", op)
				}
			},
		},
		{
			name: "savepoint status failed",
			call: func(c *Client) (any, error) {
				return c.SavepointStatus(context.Background(), testJobID, "fedcba9876543210fedcba9876543210")
			},
			answer: `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.io.IOException","stack-trace":"java.io.IOException: disk full"}}}`,
			want:   seen{"GET", "/jobs/" + testJobID + "/savepoints/fedcba9876543210fedcba9876543210", "", "", ""},
			check: func(t *testing.T, got any) {
				op := got.(*SavepointOperation)
				if op.Operation.FailureCause.Message() != "java.io.IOException: disk full" {
					t.Errorf("status = %+v", op)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got seen
			c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)}
				w.WriteHeader(http.StatusAccepted)
				_, _ = io.WriteString(w, tc.answer)
			})
			out, err := tc.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("request\n got %+v\nwant %+v", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, out)
			}
		})
	}
}

func TestUploadJar(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/jars/upload" {
			http.NotFound(w, r)
			return
		}
		f, fh, err := r.FormFile("jarfile")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(f)
		if fh.Header.Get("Content-Type") != "application/x-java-archive" || fh.Filename != "job.jar" || string(b) != "PK\x03\x04" {
			http.Error(w, "bad part", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, `{"filename":"/tmp/flink-web/flink-web-upload/1a2b_job.jar","status":"success"}`)
	})
	resp, id, err := c.UploadJar(context.Background(), "/some/dir/job.jar", strings.NewReader("PK\x03\x04"))
	if err != nil {
		t.Fatal(err)
	}
	if id != "1a2b_job.jar" || resp.Status != "success" {
		t.Errorf("UploadJar = %+v, %q", resp, id)
	}
}

func TestJobStatusTerminal(t *testing.T) {
	for s, want := range map[JobStatus]bool{JobRunning: false, JobRestarting: false, JobFailing: false, JobFailed: true, JobCanceled: true, JobFinished: true} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
}

// TestErrorKinds: the refusals the lifecycle reads are told apart by
// status and Flink's message, not by status alone.
func TestErrorKinds(t *testing.T) {
	duplicate := "org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\nCaused by: org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted."
	for _, tc := range []struct {
		name              string
		err               error
		duplicate, absent bool
	}{
		{"a duplicate run", &Error{StatusCode: 400, Messages: []string{duplicate}}, true, false},
		{"another refused run", &Error{StatusCode: 400, Messages: []string{"org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\nCaused by: java.lang.ClassNotFoundException: Main"}}, false, false},
		{"a duplicate's text on a 500", &Error{StatusCode: 500, Messages: []string{duplicate}}, false, false},
		{"no checkpoint statistics", &Error{StatusCode: 404, Messages: []string{"Checkpointing has not been enabled."}}, false, true},
		{"an unknown job", &Error{StatusCode: 404, Messages: []string{"org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (0123)"}}, false, false},
		{"unreachable", &Error{Err: errors.New("connection refused")}, false, false},
		{"wrapped", fmt.Errorf("run job: %w", &Error{StatusCode: 400, Messages: []string{duplicate}}), true, false},
	} {
		if got := IsDuplicateSubmission(tc.err); got != tc.duplicate {
			t.Errorf("%s: IsDuplicateSubmission = %v", tc.name, got)
		}
		if got := IsHistoryAbsent(tc.err); got != tc.absent {
			t.Errorf("%s: IsHistoryAbsent = %v", tc.name, got)
		}
	}
}

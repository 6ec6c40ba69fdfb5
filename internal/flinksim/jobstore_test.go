package flinksim

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// finished runs a job and stops it with a savepoint: it is FINISHED 2 s
// later, when its Dispatcher archives it in the job store.
func finished(t *testing.T, e *Engine, clk *fakeClock, req flink.JarRunRequest) string {
	t.Helper()
	id := running(t, e, clk, req)
	if _, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{}); err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second)
	if s := view(t, e, id).State; s != flink.JobFinished {
		t.Fatalf("job %s is %s", id, s)
	}
	return id
}

// jobSeen is what the REST API shows of a job: whether GET /jobs/{jobid}
// answers (else its status), and whether /jobs/overview and /jobs list it.
type jobSeen struct {
	detail          int
	overview, listd bool
}

func seen(t *testing.T, e *Engine, id string) jobSeen {
	t.Helper()
	s := jobSeen{detail: http.StatusOK}
	if _, err := e.Job(key, id); err != nil {
		s.detail = statusOf(err)
	}
	ov, err := e.JobsOverview(key)
	if err != nil {
		t.Fatal(err)
	}
	s.overview = slices.ContainsFunc(ov.Jobs, func(j flink.JobDetails) bool { return j.JID == id })
	ids, err := e.Jobs(key)
	if err != nil {
		t.Fatal(err)
	}
	s.listd = slices.ContainsFunc(ids.Jobs, func(j flink.JobIDWithStatus) bool { return j.ID == id })
	return s
}

// TestJobStoreExpiry: a terminal job stays in its JobManager's job store
// (ExecutionGraphInfoStore) for jobstore.expiration-time after it was
// archived. The file store (the default) stops listing it then but serves
// its graph until its cleanup deletes the file: the cleanup it schedules
// every expiration-time, or the next job's archiving; its /overview
// counters never go down. The memory store forgets the job at once.
func TestJobStoreExpiry(t *testing.T) {
	gone := jobSeen{detail: http.StatusNotFound}
	kept := jobSeen{detail: http.StatusOK, overview: true, listd: true}
	unlisted := jobSeen{detail: http.StatusOK}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		// The job finishes at 4 s, archived then; expiry 60 s.
		at   []time.Duration
		want []jobSeen
		// wantFinished is /overview's jobs-finished at the end.
		wantFinished int32
	}{
		{"file store", map[string]string{"jobstore.expiration-time": "60"},
			[]time.Duration{63 * time.Second, 64 * time.Second, 119 * time.Second, 120 * time.Second},
			[]jobSeen{kept, unlisted, unlisted, gone}, 1},
		{"memory store", map[string]string{"jobstore.expiration-time": "60", "jobstore.type": "memory"},
			[]time.Duration{63 * time.Second, 64 * time.Second},
			[]jobSeen{kept, gone}, 0},
		{"default expiry, an hour", nil,
			[]time.Duration{3603 * time.Second, 3604 * time.Second, 7200 * time.Second},
			[]jobSeen{kept, unlisted, gone}, 1},
		{"memory store without expiry", map[string]string{"jobstore.expiration-time": "0", "jobstore.type": "Memory"},
			[]time.Duration{24 * time.Hour}, []jobSeen{kept}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			start := clk.t
			e.Observe(key, simple(tms(1), tc.settings).Observation())
			id := finished(t, e, clk, flink.JarRunRequest{})
			for i, at := range tc.at {
				clk.t = start.Add(at)
				if got := seen(t, e, id); got != tc.want[i] {
					t.Errorf("at %s: %+v, want %+v", at, got, tc.want[i])
				}
			}
			if ov, _ := e.Overview(key); ov.JobsFinished != tc.wantFinished {
				t.Errorf("jobs-finished = %d, want %d", ov.JobsFinished, tc.wantFinished)
			}
		})
	}
}

// TestJobStoreCleanupOnPut: archiving a job runs the file store's cache
// maintenance, which deletes every expired job's file.
func TestJobStoreCleanupOnPut(t *testing.T) {
	e, clk := newTestEngine(t)
	start := clk.t
	e.Observe(key, simple(tms(2), map[string]string{"jobstore.expiration-time": "60"}).Observation())
	first := finished(t, e, clk, flink.JarRunRequest{})
	clk.t = start.Add(70 * time.Second)
	if got := seen(t, e, first); got.detail != http.StatusOK || got.overview {
		t.Fatalf("expired, not cleaned up: %+v", got)
	}
	second := finished(t, e, clk, flink.JarRunRequest{})
	if got := seen(t, e, first); got.detail != http.StatusNotFound {
		t.Errorf("after the next job was archived: %+v", got)
	}
	if got := seen(t, e, second); got.detail != http.StatusOK || !got.overview {
		t.Errorf("the job archived last: %+v", got)
	}
}

// TestJobStoreCapacity: beyond jobstore.max-capacity the oldest archived
// job is evicted.
func TestJobStoreCapacity(t *testing.T) {
	for _, typ := range []string{"File", "Memory"} {
		t.Run(typ, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(2), map[string]string{"jobstore.max-capacity": "1", "jobstore.type": typ}).Observation())
			first := finished(t, e, clk, flink.JarRunRequest{})
			second := finished(t, e, clk, flink.JarRunRequest{})
			if got := seen(t, e, first); got.detail != http.StatusNotFound || got.overview {
				t.Errorf("the evicted job: %+v", got)
			}
			if got := seen(t, e, second); got.detail != http.StatusOK || !got.overview {
				t.Errorf("the job archived last: %+v", got)
			}
		})
	}
}

// TestResubmitExpiredJob: the job result store, not the job store,
// decides whether a job ID may run again. Without high availability the
// EmbeddedJobResultStore keeps the ID for the life of the process, so a
// job that expired from the job store (GET /jobs/{jobid} is a 404) is
// still refused; with the file job result store, which deletes the entry
// on commit, it runs.
func TestResubmitExpiredJob(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	ha := map[string]string{
		"high-availability.type": "zookeeper", "high-availability.zookeeper.quorum": "zk:2181",
		"high-availability.storageDir": "s3://bucket/ha",
	}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		wantOK   bool
	}{
		{"without high availability", nil, false},
		{"with high availability", ha, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), tc.settings).Observation())
			finished(t, e, clk, flink.JarRunRequest{JobID: id})
			if n := e.ExpireJobs(key); n != 1 {
				t.Fatalf("expired %d jobs, want 1", n)
			}
			clk.step(time.Second)
			if got := seen(t, e, id); got != (jobSeen{detail: http.StatusNotFound}) {
				t.Fatalf("after the expiry: %+v", got)
			}
			_, err := e.RunJar(key, upload(t, e), flink.JarRunRequest{JobID: id})
			if tc.wantOK {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErr(t, err, http.StatusBadRequest, "DuplicateJobSubmissionException: Job has already been submitted.")
		})
	}
}

// TestJobStoreOptions: the file store's Guava cache refuses a negative
// expiry or capacity, and the JobManager does not start.
func TestJobStoreOptions(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		wantDown string
	}{
		{map[string]string{"jobstore.expiration-time": "-1"}, "duration cannot be negative"},
		{map[string]string{"jobstore.max-capacity": "-1"}, "maximum size must not be negative"},
		{map[string]string{"jobstore.expiration-time": "an hour"}, "Could not parse value 'an hour' for key 'jobstore.expiration-time'"},
		{map[string]string{"jobstore.type": "disk"}, "Could not parse value 'disk' for key 'jobstore.type'"},
		{map[string]string{"jobstore.expiration-time": "-1", "jobstore.type": "memory"}, ""},
	} {
		e, _ := newTestEngine(t)
		e.Observe(key, simple(tms(1), tc.settings).Observation())
		v, _ := e.View(key)
		if down := v.JobManagers[0].Down; (tc.wantDown == "") != (down == "") || !strings.Contains(down, tc.wantDown) {
			t.Errorf("%v: JobManager down = %q, want %q", tc.settings, down, tc.wantDown)
		}
	}
}

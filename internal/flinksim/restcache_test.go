package flinksim

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// cached is a cluster of a version whose REST caches keep their defaults
// unless settings set them.
func cached(version string, settings map[string]string) SimpleCluster {
	c := simple(tms(1), merge(map[string]string{"web.refresh-interval": ""}, settings))
	c.Version, c.Env = version, s3Plugin(version)
	return c
}

func overviewState(t *testing.T, e *Engine, id string) flink.JobStatus {
	t.Helper()
	ov, err := e.JobsOverview(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range ov.Jobs {
		if j.JID == id {
			return j.State
		}
	}
	t.Fatalf("/jobs/overview does not list %s", id)
	return ""
}

// TestExecutionGraphCache: GET /jobs/{jobid} and /jobs/{jobid}/exceptions
// read the receiving JobManager's DefaultExecutionGraphCache, which keeps
// the graph it fetched for web.refresh-interval (3 s; a Long of
// milliseconds before 1.20, a Duration from 1.20); /jobs/overview asks the
// Dispatcher every time.
func TestExecutionGraphCache(t *testing.T) {
	for _, tc := range []struct {
		version, refresh string
		ttl              time.Duration
	}{
		{"1.17.2", "", 3 * time.Second},
		{"1.19.1", "10000", 10 * time.Second},
		{"1.20.0", "", 3 * time.Second},
		{"1.20.0", "10 s", 10 * time.Second},
		{"2.2.0", "1500 ms", 1500 * time.Millisecond},
	} {
		t.Run(tc.version+"/"+tc.refresh, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, cached(tc.version, map[string]string{"web.refresh-interval": tc.refresh}).Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			clk.step(time.Minute)
			_ = jobDetails(t, e, id) // fetched now: RUNNING, no exceptions
			if err := e.SetJobState(key, id, flink.JobFailed); err != nil {
				t.Fatal(err)
			}
			clk.step(time.Millisecond)
			if s := overviewState(t, e, id); s != flink.JobFailed {
				t.Errorf("/jobs/overview says %s, want FAILED", s)
			}
			ex, err := e.JobExceptions(key, id)
			if err != nil || len(ex.ExceptionHistory.Entries) != 0 {
				t.Errorf("exceptions from the cached graph = %+v, %v; want none yet", ex, err)
			}
			clk.step(tc.ttl - 2*time.Millisecond)
			if s := jobState(t, e, id); s != flink.JobRunning {
				t.Errorf("just before the cache expires: %s, want the cached RUNNING", s)
			}
			clk.step(time.Millisecond)
			if s := jobState(t, e, id); s != flink.JobFailed {
				t.Errorf("once the cache expired: %s, want FAILED", s)
			}
			if ex, err := e.JobExceptions(key, id); err != nil || len(ex.ExceptionHistory.Entries) != 1 {
				t.Errorf("exceptions = %+v, %v; want the failure", ex, err)
			}
			if cfg, _ := e.DashboardConfiguration(key); cfg.RefreshInterval != tc.ttl.Milliseconds() {
				t.Errorf("/config refresh-interval = %d, want %d", cfg.RefreshInterval, tc.ttl.Milliseconds())
			}
		})
	}
}

// TestStaleStatusAfterStop: right after a stop-with-savepoint completes,
// GET /jobs/{jobid} can still say RUNNING for up to web.refresh-interval,
// while /jobs/overview says FINISHED.
func TestStaleStatusAfterStop(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, cached("1.19.1", nil).Observation())
	id := running(t, e, clk, flink.JarRunRequest{})
	clk.step(time.Minute)
	_ = jobDetails(t, e, id)
	tr, err := e.StopWithSavepoint(key, id, flink.StopWithSavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	clk.step(2 * time.Second) // the savepoint completes; the job FINISHES
	if st, err := e.SavepointStatus(key, id, tr.RequestID); err != nil || st.Status.ID != flink.OperationCompleted {
		t.Fatalf("stop = %+v, %v", st, err)
	}
	if s := jobState(t, e, id); s != flink.JobRunning {
		t.Errorf("GET /jobs/{jobid} after the stop: %s, want the cached RUNNING", s)
	}
	if s := overviewState(t, e, id); s != flink.JobFinished {
		t.Errorf("/jobs/overview after the stop: %s, want FINISHED", s)
	}
	clk.step(time.Second)
	if s := jobState(t, e, id); s != flink.JobFinished {
		t.Errorf("3 s after the last fetch: %s, want FINISHED", s)
	}
}

// TestExecutionGraphCachePerJobManager: each JobManager's REST endpoint has
// its own cache: with high availability a standby JobManager fetches the
// leader's graph afresh while the leader answers from its cache; a new
// process starts with none.
func TestExecutionGraphCachePerJobManager(t *testing.T) {
	e, clk := newTestEngine(t)
	c := cached("1.19.1", map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo", "high-availability.storageDir": "s3://bucket/ha",
	})
	o := c.Observation()
	standby := o.JobManagers[0]
	// Not Ready: the Service sends the jar upload and run to the leader.
	standby.UID, standby.Name, standby.Created, standby.Ready = "jm-2", "jm-2", standby.Created.Add(time.Hour), false
	o.JobManagers = append(o.JobManagers, standby)
	e.Observe(key, o)
	id := running(t, e, clk, flink.JarRunRequest{})
	via := func(jm string) flink.JobStatus {
		t.Helper()
		j, err := e.job(target{k: key, cluster: key, jm: jm, direct: true}, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.State
	}
	clk.step(time.Minute)
	_ = via("jm-1#0")
	if err := e.CancelJob(key, id, ""); err != nil {
		t.Fatal(err)
	}
	clk.step(time.Millisecond)
	if s := via("jm-1#0"); s != flink.JobRunning {
		t.Errorf("the leader's cache: %s, want RUNNING", s)
	}
	if s := via("jm-2#0"); s != flink.JobCancelling {
		t.Errorf("the standby's first fetch: %s, want CANCELLING", s)
	}
}

// TestCheckpointStatisticsCache: GET /jobs/{jobid}/checkpoints lags the
// job's checkpoints. From 1.18 AbstractCheckpointStatsHandler keeps the
// statistics for rest.cache.checkpoint-statistics.timeout (3 s, falling
// back to web.refresh-interval), apart from the execution graph cache, at
// most rest.cache.checkpoint-statistics.size jobs (0: none); before 1.18
// they come from the execution graph cache.
func TestCheckpointStatisticsCache(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		settings      map[string]string
		ttl           time.Duration
	}{
		{"1.17 graph cache", "1.17.2", map[string]string{"web.refresh-interval": "5000"}, 5 * time.Second},
		{"1.18 default", "1.18.1", nil, 3 * time.Second},
		{"1.18 own timeout", "1.18.1", map[string]string{"web.refresh-interval": "1", "rest.cache.checkpoint-statistics.timeout": "10 s"}, 10 * time.Second},
		{"1.19 falls back to web.refresh-interval", "1.19.1", map[string]string{"web.refresh-interval": "5000"}, 5 * time.Second},
		{"2.2 default", "2.2.0", nil, 3 * time.Second},
		{"2.2 size 0", "2.2.0", map[string]string{"rest.cache.checkpoint-statistics.size": "0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			// Only triggered checkpoints: the counts change when the test
			// says.
			e.Observe(key, cached(tc.version, merge(map[string]string{"execution.checkpointing.interval": ""}, tc.settings)).Observation())
			id := running(t, e, clk, flink.JarRunRequest{})
			clk.step(time.Minute)
			_ = jobDetails(t, e, id)
			before, err := e.Checkpoints(key, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.TriggerCheckpoint(key, id, flink.CheckpointTriggerRequest{}); err != nil {
				t.Fatal(err)
			}
			clk.step(time.Millisecond)
			if tc.ttl > 0 {
				clk.step(tc.ttl - 2*time.Millisecond)
				if cp, _ := e.Checkpoints(key, id); cp.Counts.Total != before.Counts.Total {
					t.Errorf("just before the cache expires: %+v, want the cached %+v", cp.Counts, before.Counts)
				}
				clk.step(time.Millisecond)
			}
			if cp, _ := e.Checkpoints(key, id); cp.Counts.Total != before.Counts.Total+1 {
				t.Errorf("once the cache expired: %+v, want one more than %+v", cp.Counts, before.Counts)
			}
		})
	}
}

// TestCheckpointStatisticsCacheKeepsFailures: the checkpoint statistics
// cache keeps the Dispatcher's future, failed or not, so a job's 404 is
// answered until it expires even once the job runs; the execution graph
// cache drops a failed fetch.
func TestCheckpointStatisticsCacheKeepsFailures(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	e, clk := newTestEngine(t)
	e.Observe(key, cached("1.19.1", nil).Observation())
	_, err := e.Checkpoints(key, id)
	wantErr(t, err, http.StatusNotFound, "Job "+id+" not found")
	_, err = e.Job(key, id)
	wantErr(t, err, http.StatusNotFound, "Job "+id+" not found")
	submit(t, e, flink.JarRunRequest{JobID: id})
	clk.step(2 * time.Second) // initialized and deployed
	if s := jobState(t, e, id); s != flink.JobRunning {
		t.Errorf("job details: %s, want RUNNING", s)
	}
	_, err = e.Checkpoints(key, id)
	wantErr(t, err, http.StatusNotFound, "Job "+id+" not found")
	clk.step(time.Second)
	if _, err := e.Checkpoints(key, id); err != nil {
		t.Errorf("once the cached failure expired: %v", err)
	}
}

// TestRESTCacheOptions: RestHandlerConfiguration refuses a refresh
// interval under a millisecond, Guava a negative checkpoint statistics
// timeout or size; the JobManager does not start.
func TestRESTCacheOptions(t *testing.T) {
	for _, tc := range []struct {
		version  string
		settings map[string]string
		wantDown string
	}{
		{"1.19.1", map[string]string{"web.refresh-interval": "0"}, "The refresh interval (ms) should be larger than 0."},
		{"2.2.0", map[string]string{"web.refresh-interval": "0 s"}, "The refresh interval (ms) should be larger than 0."},
		{"1.19.1", map[string]string{"web.refresh-interval": "3 s"}, "Could not parse value '3 s' for key 'web.refresh-interval'"},
		{"1.19.1", map[string]string{"rest.cache.checkpoint-statistics.size": "-1"}, "maximum size must not be negative"},
		{"1.17.2", map[string]string{"rest.cache.checkpoint-statistics.size": "-1"}, ""},
	} {
		e, _ := newTestEngine(t)
		e.Observe(key, cached(tc.version, tc.settings).Observation())
		v, _ := e.View(key)
		if down := v.JobManagers[0].Down; (tc.wantDown == "") != (down == "") || !strings.Contains(down, tc.wantDown) {
			t.Errorf("%s %v: JobManager down = %q, want %q", tc.version, tc.settings, down, tc.wantDown)
		}
	}
}

package flinksim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestRetentionOnSuspension: a JobManager that shuts down gracefully (its
// pod deleted, evicted or rolled: SIGTERM) suspends its jobs and shuts
// their checkpoint stores down with SUSPENDED. Without high availability
// StandaloneCompletedCheckpointStore deletes every retained checkpoint
// unless the retention is RETAIN_ON_CANCELLATION; with it
// DefaultCompletedCheckpointStore keeps them for the next leader, which
// recovers from the latest. A crash deletes nothing. Checkpoints subsumed
// beyond num-retained are gone either way.
func TestRetentionOnSuspension(t *testing.T) {
	ha := map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo",
		"high-availability.storageDir": "s3://bucket/ha",
	}
	ends := []struct {
		name     string
		graceful bool
		end      func(e *Engine, c SimpleCluster)
	}{
		{"pod deleted", true, func(e *Engine, c SimpleCluster) {
			o := c.Observation()
			o.JobManagers[0].Running = false // terminating: SIGTERM
			e.Observe(key, o)
			c.JobManager = "jm-2"
			e.Observe(key, c.Observation())
		}},
		{"admin stop", true, func(e *Engine, _ SimpleCluster) { _ = e.StopJobManager(key) }},
		{"crash", false, func(e *Engine, _ SimpleCluster) { _ = e.LoseJobManager(key) }},
	}
	for _, retention := range []string{"", "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"} {
		for _, withHA := range []bool{false, true} {
			for _, end := range ends {
				name := fmt.Sprintf("%s/HA=%v/%s", retention, withHA, end.name)
				t.Run(name, func(t *testing.T) {
					settings := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": retention, "state.checkpoints.num-retained": "2"}
					if withHA {
						settings = merge(settings, ha)
					}
					e, clk := newTestEngine(t)
					c := simple(tms(1), settings)
					e.Observe(key, c.Observation())
					id := running(t, e, clk, flink.JarRunRequest{})
					clk.step(35 * time.Second) // chk-1, chk-2, chk-3 complete; chk-1 is subsumed
					chk := func(n int) string { return fmt.Sprintf("s3://bucket/checkpoints/%s/chk-%d", id, n) }
					end.end(e, c)

					if onStorage(t, e, chk(1)) {
						t.Errorf("%s was subsumed, yet it is there", chk(1))
					}
					wantKept := !end.graceful || withHA || retention == "RETAIN_ON_CANCELLATION"
					for _, n := range []int{2, 3} {
						if kept := onStorage(t, e, chk(n)); kept != wantKept {
							t.Errorf("%s kept: %v, want %v", chk(n), kept, wantKept)
						}
					}
					if v := view(t, e, id); end.graceful && !withHA && (v.State != flink.JobSuspended || v.Present) {
						t.Errorf("after a graceful stop the job is %s (present %v), want SUSPENDED and gone", v.State, v.Present)
					}
					if !withHA {
						return
					}
					clk.step(20 * time.Second) // a crashed leader's lease expires; the job initializes and deploys
					if v := view(t, e, id); v.State != flink.JobRunning || v.RestoredFrom == nil || v.RestoredFrom.ExternalPath != chk(3) {
						t.Errorf("the next leader recovered %+v, want the job running from %s", v, chk(3))
					}
				})
			}
		}
	}
}

// TestRestoreFromCheckpointDeletedOnSuspension: without high availability
// a JobManager whose pod is rolled deletes the job's checkpoints as it
// suspends it, so a new job submitted from the last checkpoint fails at
// initialization.
func TestRestoreFromCheckpointDeletedOnSuspension(t *testing.T) {
	e, clk := newTestEngine(t)
	e.Observe(key, simple(tms(1), nil).Observation())
	id := running(t, e, clk, flink.JarRunRequest{})
	clk.step(15 * time.Second)
	cp, err := e.Checkpoints(key, id)
	if err != nil || cp.Latest.Completed == nil {
		t.Fatalf("checkpoints = %+v, %v", cp, err)
	}
	last := cp.Latest.Completed.ExternalPath
	if err := e.StopJobManager(key); err != nil {
		t.Fatal(err)
	}
	next := submit(t, e, flink.JarRunRequest{SavepointPath: last})
	clk.step(time.Second)
	if v := view(t, e, next); v.State != flink.JobFailed || !strings.Contains(v.FailureCause, "Cannot find checkpoint or savepoint file/directory '"+last+"'") {
		t.Errorf("restore from the deleted checkpoint: %+v", v)
	}
}

// onStorage reports whether every file of the snapshot at an object store
// path is still there.
func onStorage(t *testing.T, e *Engine, pointer string) bool {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	meta, err := locate(pointer+"/_metadata", "", key.Namespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := e.snapshots[meta]
	if s == nil {
		return false
	}
	ok, _ := s.readable(e.fs)
	return ok
}

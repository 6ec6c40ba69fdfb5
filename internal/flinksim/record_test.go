package flinksim

import (
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

func record(t *testing.T, e *Engine) Record {
	t.Helper()
	v, err := e.View(key)
	if err != nil {
		t.Fatal(err)
	}
	return v.Record
}

// TestRecord: the record says what Flink saw, whatever the caller
// believes: which jobs ran at once, what each start restored and whether
// Flink could read it then, what state each end left and whether it
// survived the end.
func TestRecord(t *testing.T) {
	ha := map[string]string{
		"high-availability.type": "kubernetes", "kubernetes.cluster-id": "demo",
		"high-availability.storageDir": "s3://bucket/ha",
	}
	for _, tc := range []struct {
		name     string
		settings map[string]string
		// run drives the engine and checks the record.
		run func(t *testing.T, e *Engine, clk *fakeClock)
	}{
		{"stop with savepoint, then restore it", nil, func(t *testing.T, e *Engine, clk *fakeClock) {
			old := running(t, e, clk, flink.JarRunRequest{})
			clk.step(15 * time.Second) // checkpoint 1
			tr, _ := e.StopWithSavepoint(key, old, flink.StopWithSavepointRequest{})
			clk.step(2 * time.Second)
			st, _ := e.SavepointStatus(key, old, tr.RequestID)
			sp := st.Operation.Location
			next := submit(t, e, flink.JarRunRequest{SavepointPath: sp})
			r := record(t, e)
			if len(r.Ends) != 1 || r.Ends[0].JobID != old || r.Ends[0].State != flink.JobFinished {
				t.Fatalf("ends = %+v", r.Ends)
			}
			if n := r.Ends[0].Newest; n == nil || n.Path != sp || !n.Savepoint || !n.Exists || !n.Complete || n.CheckpointID != 2 || n.CompletedAt.IsZero() {
				t.Errorf("newest at the stop = %+v, want savepoint 2 at %s, kept", n, sp)
			}
			if len(r.Starts) != 2 || r.Starts[0].JobID != old || r.Starts[0].Restore != nil || r.Starts[1].JobID != next {
				t.Fatalf("starts = %+v", r.Starts)
			}
			if s := r.Starts[1]; s.RestorePath != sp || s.Restore == nil || !s.Restore.Complete || s.Restore.CheckpointID != 2 || !s.Restore.Savepoint {
				t.Errorf("restore = %+v", s.Restore)
			}
			if r.MaxRunning != 1 {
				t.Errorf("max running = %d, want 1", r.MaxRunning)
			}
		}},
		{"a cancel deletes the checkpoint a restore then asks for", nil, func(t *testing.T, e *Engine, clk *fakeClock) {
			old := running(t, e, clk, flink.JarRunRequest{})
			clk.step(15 * time.Second)
			cp, _ := e.Checkpoints(key, old)
			chk := cp.Latest.Completed.ExternalPath
			_ = e.CancelJob(key, old, "")
			clk.step(2 * time.Second)
			next := submit(t, e, flink.JarRunRequest{SavepointPath: chk})
			clk.step(2 * time.Second)
			r := record(t, e)
			// NO_EXTERNALIZED_CHECKPOINTS: discarded on CANCELED.
			if n := r.Ends[0].Newest; r.Ends[0].State != flink.JobCanceled || n == nil || n.Path != chk || n.Exists || n.Complete {
				t.Errorf("end = %+v, newest %+v; want CANCELED with %s gone", r.Ends[0], n, chk)
			}
			if s := r.Starts[1].Restore; s == nil || s.Exists || s.Complete || s.CheckpointID != 0 {
				t.Errorf("restore = %+v, want a path that holds nothing", s)
			}
			if len(r.Ends) != 2 || r.Ends[1].JobID != next || r.Ends[1].State != flink.JobFailed || r.Ends[1].Newest != nil {
				t.Errorf("ends = %+v, want the restore to fail at initialization", r.Ends)
			}
		}},
		{"two jobs at once", nil, func(t *testing.T, e *Engine, clk *fakeClock) {
			a := running(t, e, clk, flink.JarRunRequest{Parallelism: 1})
			b := running(t, e, clk, flink.JarRunRequest{Parallelism: 1})
			r := record(t, e)
			if r.MaxRunning != 2 || strings.Join(r.MaxRunningJobs, ",") != a+","+b {
				t.Errorf("max running = %d %v, want 2: %s and %s", r.MaxRunning, r.MaxRunningJobs, a, b)
			}
		}},
		{"a JobManager lost suspends its job", nil, func(t *testing.T, e *Engine, clk *fakeClock) {
			id := running(t, e, clk, flink.JarRunRequest{})
			clk.step(15 * time.Second)
			if err := e.LoseJobManager(key); err != nil {
				t.Fatal(err)
			}
			r := record(t, e)
			if len(r.Ends) != 1 || r.Ends[0].JobID != id || r.Ends[0].State != flink.JobSuspended || r.Ends[0].Newest == nil || r.Ends[0].Newest.CheckpointID != 1 {
				t.Errorf("ends = %+v", r.Ends)
			}
		}},
		{"a new leader recovers from the HA store's latest checkpoint", ha, func(t *testing.T, e *Engine, clk *fakeClock) {
			id := running(t, e, clk, flink.JarRunRequest{})
			clk.step(25 * time.Second) // checkpoints 1 and 2
			if err := e.LoseJobManager(key); err != nil {
				t.Fatal(err)
			}
			clk.step(15 * time.Second) // the lease expires
			r := record(t, e)
			if len(r.Starts) != 2 {
				t.Fatalf("starts = %+v", r.Starts)
			}
			s := r.Starts[1]
			if s.JobID != id || !s.Recovered || !strings.HasSuffix(s.RestorePath, "/chk-2") || s.Restore == nil || !s.Restore.Complete || s.Restore.CheckpointID != 2 {
				t.Errorf("recovery = %+v, restore %+v", s, s.Restore)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), tc.settings).Observation())
			tc.run(t, e, clk)
		})
	}
}

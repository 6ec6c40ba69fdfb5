package flinksim

import (
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestClaimModes: who owns the snapshot a job restores from
// (SavepointRestoreSettings, CheckpointCoordinator#restoreSavepoint).
// CLAIM hands it to the job as one of its checkpoints, so Flink deletes it
// once newer ones subsume it; NO_CLAIM and LEGACY never delete it. The
// request's mode wins over the configured one (JarRunHandler reads the
// body first); from 1.20 the option is execution.state-recovery.claim-mode
// and still reads the old key.
func TestClaimModes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  string
		settings map[string]string
		mode     flink.RestoreMode
		wantKept bool
	}{
		{"request CLAIM", "1.19.1", nil, flink.RestoreClaim, false},
		{"request NO_CLAIM", "1.19.1", nil, flink.RestoreNoClaim, true},
		{"request LEGACY", "1.19.1", nil, flink.RestoreLegacy, true},
		{"default is NO_CLAIM", "1.19.1", nil, "", true},
		{"configured CLAIM", "1.19.1", map[string]string{"execution.savepoint-restore-mode": "CLAIM"}, "", false},
		{"configured CLAIM, request NO_CLAIM", "1.19.1", map[string]string{"execution.savepoint-restore-mode": "CLAIM"}, flink.RestoreNoClaim, true},
		{"2.x option CLAIM", "2.0.1", map[string]string{"execution.state-recovery.claim-mode": "CLAIM"}, "", false},
		{"2.x, the deprecated key CLAIM", "2.0.1", map[string]string{"execution.savepoint-restore-mode": "CLAIM"}, "", false},
		{"2.x option CLAIM, request NO_CLAIM", "2.0.1", map[string]string{"execution.state-recovery.claim-mode": "CLAIM"}, flink.RestoreNoClaim, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newTestEngine(t)
			c := simple(tms(1), tc.settings)
			c.Version, c.Env = tc.version, s3Plugin(tc.version)
			if tc.version >= "2" {
				// 2.x reads the 1.20 names only.
				c.Settings["execution.checkpointing.dir"] = c.Settings["state.checkpoints.dir"]
				c.Settings["execution.checkpointing.savepoint-dir"] = c.Settings["state.savepoints.dir"]
				delete(c.Settings, "state.checkpoints.dir")
				delete(c.Settings, "state.savepoints.dir")
			}
			e.Observe(key, c.Observation())
			old := running(t, e, clk, flink.JarRunRequest{})
			clk.step(5 * time.Second)
			tr, err := e.StopWithSavepoint(key, old, flink.StopWithSavepointRequest{})
			if err != nil {
				t.Fatal(err)
			}
			clk.step(3 * time.Second)
			st, _ := e.SavepointStatus(key, old, tr.RequestID)
			if st.Operation == nil || st.Operation.Location == "" {
				t.Fatalf("stop = %+v", st)
			}
			sp := st.Operation.Location
			id := running(t, e, clk, flink.JarRunRequest{SavepointPath: sp, RestoreMode: tc.mode})
			// Two checkpoints complete after the restore: with one retained
			// (the default), both subsume the restored snapshot.
			clk.step(21 * time.Second)
			if cp, _ := e.Checkpoints(key, id); cp.Counts.Completed < 2 || cp.Latest.Restored == nil || cp.Latest.Restored.ExternalPath != sp {
				t.Fatalf("checkpoints = %+v", cp)
			}
			_, err = e.resolveSnapshotAt(key, sp)
			if kept := err == nil; kept != tc.wantKept {
				t.Fatalf("restored savepoint %s kept: %v, want %v", sp, kept, tc.wantKept)
			}
		})
	}
}

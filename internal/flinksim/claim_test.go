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
			sp := stopped(t, e, clk, old)
			id := running(t, e, clk, flink.JarRunRequest{SavepointPath: sp, RestoreMode: tc.mode})
			// Two checkpoints complete after the restore: with one retained
			// (the default), both subsume the restored snapshot.
			clk.step(21 * time.Second)
			cp, _ := e.Checkpoints(key, id)
			if cp.Counts.Completed < 2 || cp.Latest.Restored == nil || cp.Latest.Restored.ExternalPath != sp {
				t.Fatalf("checkpoints = %+v", cp)
			}
			// is_savepoint is the type the claim mode gave the restored
			// snapshot (CheckpointProperties#isSavepoint): a savepoint
			// type unless CLAIM made it one of the job's checkpoints.
			if got := cp.Latest.Restored.IsSavepoint; got != tc.wantKept {
				t.Errorf("restored is_savepoint %t, want %t", got, tc.wantKept)
			}
			_, err := e.resolveSnapshotAt(key, sp)
			if kept := err == nil; kept != tc.wantKept {
				t.Fatalf("restored savepoint %s kept: %v, want %v", sp, kept, tc.wantKept)
			}
		})
	}
}

// TestRestoredCheckpointType: a retained checkpoint restored under
// NO_CLAIM is reported as a savepoint (CheckpointProperties#
// forUnclaimedSnapshot is a savepoint type), under CLAIM as a checkpoint
// (the job's own properties): latest.restored.is_savepoint says how the
// job holds the snapshot, not how it was taken.
func TestRestoredCheckpointType(t *testing.T) {
	for _, tc := range []struct {
		mode flink.RestoreMode
		want bool
	}{{flink.RestoreNoClaim, true}, {flink.RestoreLegacy, true}, {flink.RestoreClaim, false}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			e, clk := newTestEngine(t)
			e.Observe(key, simple(tms(1), map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}).Observation())
			old := running(t, e, clk, flink.JarRunRequest{})
			clk.step(11 * time.Second)
			cp, _ := e.Checkpoints(key, old)
			if cp.Latest.Completed == nil {
				t.Fatalf("no checkpoint: %+v", cp)
			}
			path := cp.Latest.Completed.ExternalPath
			if err := e.CancelJob(key, old, ""); err != nil {
				t.Fatal(err)
			}
			clk.step(time.Second)
			id := running(t, e, clk, flink.JarRunRequest{SavepointPath: path, RestoreMode: tc.mode})
			cp, _ = e.Checkpoints(key, id)
			if r := cp.Latest.Restored; r == nil || r.ExternalPath != path || r.IsSavepoint != tc.want {
				t.Fatalf("restored %+v; want %s with is_savepoint %t", r, path, tc.want)
			}
		})
	}
}

package policy

import (
	"testing"
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// An object stored before the API server defaulted it resolves to the
// API's defaults; what the spec sets wins, and a duration that does not
// parse falls back to its default.
func TestFor(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name string
		spec v1.FlinkClusterSpec
		want Policy
	}{
		{"nothing set", v1.FlinkClusterSpec{}, Policy{
			Upgrade:             Upgrade{StableCheckpoints: 2, StabilityTimeout: 5 * time.Minute, SavepointTimeout: 5 * time.Minute, AutoRollback: true, SavepointRetention: 5},
			Healing:             Healing{RestoreAttempts: 3, Backoff: 30 * time.Second, LoopRestarts: 5, LoopWindow: 10 * time.Minute, OnLoop: v1.HealReport, StalledIntervals: 3, OnStalled: v1.HealReport},
			CheckpointsRetained: 1,
		}},
		{"everything set", v1.FlinkClusterSpec{
			UpgradePolicy: &v1.UpgradePolicy{StableCheckpoints: 4, StabilityTimeout: "2m", SavepointTimeout: "10s", AutoRollback: &off},
			Job:           &v1.JobSpec{SavepointRetention: 2, SavepointInterval: "1h"},
			Healing: &v1.HealingSpec{RestoreAttempts: 0, Backoff: "5s", RestartLoopRestarts: 9, RestartLoopWindow: "1m", OnRestartLoop: v1.HealRestore,
				StalledCheckpointIntervals: 7, OnStalledCheckpoints: v1.HealRestore},
			Checkpointing: &v1.CheckpointingSpec{Interval: "30s", Retention: 3},
		}, Policy{
			Upgrade:            Upgrade{StableCheckpoints: 4, StabilityTimeout: 2 * time.Minute, SavepointTimeout: 10 * time.Second, AutoRollback: false, SavepointRetention: 2},
			Healing:            Healing{RestoreAttempts: 0, Backoff: 5 * time.Second, LoopRestarts: 9, LoopWindow: time.Minute, OnLoop: v1.HealRestore, StalledIntervals: 7, OnStalled: v1.HealRestore},
			CheckpointInterval: 30 * time.Second, SavepointInterval: time.Hour, CheckpointsRetained: 3,
		}},
		{"durations that do not parse", v1.FlinkClusterSpec{
			UpgradePolicy: &v1.UpgradePolicy{StableCheckpoints: 2, StabilityTimeout: "soon", SavepointTimeout: "-1s"},
			Job:           &v1.JobSpec{SavepointInterval: "0s"},
			Healing:       &v1.HealingSpec{RestoreAttempts: 3, Backoff: "x", RestartLoopWindow: ""},
		}, Policy{
			Upgrade:             Upgrade{StableCheckpoints: 2, StabilityTimeout: 5 * time.Minute, SavepointTimeout: 5 * time.Minute, AutoRollback: true, SavepointRetention: 5},
			Healing:             Healing{RestoreAttempts: 3, Backoff: 30 * time.Second, LoopRestarts: 5, LoopWindow: 10 * time.Minute, OnLoop: v1.HealReport, StalledIntervals: 3, OnStalled: v1.HealReport},
			CheckpointsRetained: 1,
		}},
	} {
		if got := For(&tc.spec); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

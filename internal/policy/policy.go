// Package policy resolves a cluster's upgrade and healing settings once
// per reconcile, with the API's defaults for objects stored before the API
// server defaulted them (api/v1's +kubebuilder:default markers). The
// lifecycle and the autopilot read the same resolved values, so each
// default is written once, here.
package policy

import (
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Policy is one cluster's resolved upgrade and healing policy.
type Policy struct {
	Upgrade Upgrade
	Healing Healing
	// CheckpointInterval is spec.checkpointing.interval; zero when unset.
	CheckpointInterval time.Duration
	// CheckpointsRetained is how many completed checkpoints Flink keeps
	// (spec.checkpointing.retention).
	CheckpointsRetained int32
	// SavepointInterval is spec.job.savepointInterval; zero for none.
	SavepointInterval time.Duration
}

// Upgrade is spec.upgradePolicy, with spec.job.savepointRetention.
type Upgrade struct {
	// StableCheckpoints completed within StabilityTimeout pass the gate.
	StableCheckpoints int32
	StabilityTimeout  time.Duration
	// SavepointTimeout bounds the wait for a savepoint or checkpoint.
	SavepointTimeout time.Duration
	AutoRollback     bool
	// SavepointRetention is how many savepoints status.job keeps.
	SavepointRetention int
}

// Healing is spec.healing: how often a job is restored, and what counts
// as a restart loop or stalled checkpoints.
type Healing struct {
	// RestoreAttempts bounds the restores of a failed or unhealthy job
	// (zero: none); Backoff is the wait before the first, doubling after.
	RestoreAttempts int32
	Backoff         time.Duration
	// LoopRestarts within LoopWindow are a restart loop; a restored job
	// that ran and checkpointed for LoopWindow has its restores forgotten.
	LoopRestarts int64
	LoopWindow   time.Duration
	OnLoop       v1.HealingAction
	// StalledIntervals checkpoint intervals without a completed
	// checkpoint are stalled checkpoints.
	StalledIntervals int64
	OnStalled        v1.HealingAction
}

// Defaults of spec.upgradePolicy, spec.job and spec.healing.
const (
	DefaultStableCheckpoints  = 2
	DefaultTimeout            = 5 * time.Minute
	DefaultSavepointRetention = 5
	DefaultRestoreAttempts    = 3
	DefaultBackoff            = 30 * time.Second
	DefaultLoopRestarts       = 5
	DefaultLoopWindow         = 10 * time.Minute
	DefaultStalledIntervals   = 3
)

// For resolves the policy of spec.
func For(spec *v1.FlinkClusterSpec) Policy {
	p := Policy{
		Upgrade: Upgrade{StableCheckpoints: DefaultStableCheckpoints, StabilityTimeout: DefaultTimeout, SavepointTimeout: DefaultTimeout,
			AutoRollback: true, SavepointRetention: DefaultSavepointRetention},
		Healing: Healing{RestoreAttempts: DefaultRestoreAttempts, Backoff: DefaultBackoff, LoopRestarts: DefaultLoopRestarts,
			LoopWindow: DefaultLoopWindow, OnLoop: v1.HealReport, StalledIntervals: DefaultStalledIntervals, OnStalled: v1.HealReport},
	}
	if u := spec.UpgradePolicy; u != nil {
		p.Upgrade.StableCheckpoints = u.StableCheckpoints
		p.Upgrade.StabilityTimeout = Duration(u.StabilityTimeout, DefaultTimeout)
		p.Upgrade.SavepointTimeout = Duration(u.SavepointTimeout, DefaultTimeout)
		p.Upgrade.AutoRollback = u.AutoRollback == nil || *u.AutoRollback
	}
	if j := spec.Job; j != nil {
		if j.SavepointRetention >= 1 {
			p.Upgrade.SavepointRetention = int(j.SavepointRetention)
		}
		p.SavepointInterval = Duration(j.SavepointInterval, 0)
	}
	if h := spec.Healing; h != nil {
		p.Healing.RestoreAttempts = h.RestoreAttempts
		p.Healing.Backoff = Duration(h.Backoff, DefaultBackoff)
		p.Healing.LoopWindow = Duration(h.RestartLoopWindow, DefaultLoopWindow)
		if h.RestartLoopRestarts > 0 {
			p.Healing.LoopRestarts = int64(h.RestartLoopRestarts)
		}
		if h.OnRestartLoop != "" {
			p.Healing.OnLoop = h.OnRestartLoop
		}
		if h.StalledCheckpointIntervals > 0 {
			p.Healing.StalledIntervals = int64(h.StalledCheckpointIntervals)
		}
		if h.OnStalledCheckpoints != "" {
			p.Healing.OnStalled = h.OnStalledCheckpoints
		}
	}
	p.CheckpointsRetained = 1
	if cp := spec.Checkpointing; cp != nil {
		p.CheckpointInterval = Duration(cp.Interval, 0)
		p.CheckpointsRetained = max(cp.Retention, 1)
	}
	return p
}

// Duration is a duration of the spec (Go's syntax, as the schema admits),
// or def when it is unset, invalid or not positive.
func Duration(v string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

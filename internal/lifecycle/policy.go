package lifecycle

import (
	"time"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Defaults of spec.upgradePolicy and spec.job, for objects stored before
// the API server defaulted them.
const (
	defaultStableCheckpoints = 2
	defaultTimeout           = 5 * time.Minute
	defaultRetention         = 5
)

func stableCheckpoints(s *v1.FlinkClusterSpec) int32 {
	if s.UpgradePolicy == nil {
		return defaultStableCheckpoints
	}
	return s.UpgradePolicy.StableCheckpoints
}

func stabilityTimeout(s *v1.FlinkClusterSpec) time.Duration {
	if s.UpgradePolicy == nil {
		return defaultTimeout
	}
	return parseOr(s.UpgradePolicy.StabilityTimeout, defaultTimeout)
}

func savepointTimeout(s *v1.FlinkClusterSpec) time.Duration {
	if s.UpgradePolicy == nil {
		return defaultTimeout
	}
	return parseOr(s.UpgradePolicy.SavepointTimeout, defaultTimeout)
}

func autoRollback(s *v1.FlinkClusterSpec) bool {
	return s.UpgradePolicy == nil || s.UpgradePolicy.AutoRollback == nil || *s.UpgradePolicy.AutoRollback
}

func retention(s *v1.FlinkClusterSpec) int {
	if s.Job == nil || s.Job.SavepointRetention < 1 {
		return defaultRetention
	}
	return int(s.Job.SavepointRetention)
}

func parseOr(v string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

package autopilot

import (
	"fmt"
	"time"

	clusterpolicy "github.com/datapilot/datapilot/internal/policy"
)

// Restarts is one reading of a job's numRestarts.
type Restarts struct {
	Time  time.Time
	JobID string
	Count int64
}

// AppendRestarts keeps the readings of the current job within window.
func AppendRestarts(h []Restarts, r Restarts, window time.Duration) []Restarts {
	out := make([]Restarts, 0, len(h)+1)
	for _, old := range h {
		if old.JobID == r.JobID && r.Time.Sub(old.Time) <= window {
			out = append(out, old)
		}
	}
	return append(out, r)
}

// RestartLoop reports whether the job restarted LoopRestarts times or
// more within the window: Flink's restart strategy keeps it alive, but
// it does no work.
func RestartLoop(h []Restarts, p clusterpolicy.Healing) (string, bool) {
	if len(h) < 2 {
		return "", false
	}
	first, last := h[0], h[len(h)-1]
	n := last.Count - first.Count
	if n < p.LoopRestarts {
		return "", false
	}
	return fmt.Sprintf("Job %s restarted %d times in %s (Flink's numRestarts went from %d to %d; the threshold is %d in %s)",
		last.JobID, n, last.Time.Sub(first.Time).Round(time.Second), first.Count, last.Count, p.LoopRestarts, p.LoopWindow), true
}

// CheckpointsStalled reports whether a running job completed no
// checkpoint for StalledIntervals checkpoint intervals: since its last
// completed one, or since it started running when it has none.
func CheckpointsStalled(now, lastCompleted, runningSince time.Time, interval time.Duration, p clusterpolicy.Healing) (string, bool) {
	if interval <= 0 || runningSince.IsZero() {
		return "", false
	}
	from, what := runningSince, "since the job started running"
	if lastCompleted.After(runningSince) {
		from, what = lastCompleted, "since the last completed checkpoint"
	}
	limit := time.Duration(p.StalledIntervals) * interval
	if now.Sub(from) < limit {
		return "", false
	}
	return fmt.Sprintf("No checkpoint completed for %s %s (%d intervals of %s)", now.Sub(from).Round(time.Second), what, p.StalledIntervals, interval), true
}

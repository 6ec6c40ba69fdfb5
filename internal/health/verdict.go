package health

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// Level is one of the three health levels.
type Level string

const (
	// LevelJobManager is the Kubernetes level: a JobManager pod is Ready.
	LevelJobManager Level = "JobManager"
	// LevelRest is the network level: the Flink REST API answers.
	LevelRest Level = "Rest"
	// LevelJobs is the business level: the jobs that should run are RUNNING.
	LevelJobs Level = "Jobs"
)

// Levels lists the levels bottom-up; a level is only probed when the ones
// before it pass.
var Levels = []Level{LevelJobManager, LevelRest, LevelJobs}

// DefaultFailureThreshold is spec.health.failureThreshold's default.
const DefaultFailureThreshold = 3

// Probe is the outcome of checking one level once.
type Probe struct {
	Level Level
	// OK is true when the level passed.
	OK bool
	// Unknown is true when the level could not be judged (a lower level
	// failed, the JobManager was never ready yet, an upgrade is in flight).
	// An unknown probe is neither a failure nor a success; OK is ignored.
	Unknown bool
	// Reason is CamelCase, such as RestUnavailable.
	Reason string
	// Message is a sentence starting with a capital letter.
	Message string
}

// Failed reports whether the probe is a failure that counts.
func (p Probe) Failed() bool { return !p.OK && !p.Unknown }

// LevelVerdict is the derived state of one level.
type LevelVerdict struct {
	// Status of the level's condition.
	Status metav1.ConditionStatus
	// Reason and Message of the level's condition.
	Reason, Message string
	// ConsecutiveFailures counts the level's failed probes since its last
	// pass (or unknown round).
	ConsecutiveFailures int
}

// JobSummary is one job as GET /jobs/overview reports it.
type JobSummary struct {
	ID    string
	Name  string
	State flink.JobStatus
}

// Verdict is the derived health of one cluster, ready to become conditions.
type Verdict struct {
	// Levels holds one entry per level once the cluster has been probed.
	Levels map[Level]LevelVerdict
	// Degraded is true when a level is False: it failed threshold times in
	// a row and has not passed since.
	Degraded bool
	// DegradedReason is the lowest False level's reason; DegradedMessage
	// says which check failed and why.
	DegradedReason, DegradedMessage string
	// Jobs are the jobs of the latest successful GET /jobs/overview, at
	// JobsObservedAt; empty when the level never needed to ask.
	Jobs           []JobSummary
	JobsObservedAt time.Time
	// RunsJobs: the latest GET /overview that answered counted a job on
	// the cluster (jobs-running, Flink's JobsOverview
	// numJobsRunningOrPending: every job in a state other than FINISHED,
	// FAILED and CANCELED, SUSPENDED and RECONCILING included): something
	// runs, or is about to, on the TaskManagers. Kept while the REST API
	// does not answer. A job that runs and ends between two probes is
	// never counted.
	RunsJobs bool
	// ObservedAt is when the probes that produced this verdict ran.
	ObservedAt time.Time
}

// Job returns the job with the given ID from Jobs.
func (v Verdict) Job(id string) (JobSummary, bool) {
	for _, j := range v.Jobs {
		if j.ID == id {
			return j, true
		}
	}
	return JobSummary{}, false
}

// Evaluate folds one round of probes into the previous verdict. It is pure.
// threshold is the number of consecutive failures that turn a level False
// and the cluster Degraded; below 1 it means DefaultFailureThreshold. A
// level without a probe counts as unknown. changed is true when one of the
// conditions the verdict becomes would change (status, reason or message).
// The package documentation states the rules.
func Evaluate(prev Verdict, probes []Probe, threshold int, now time.Time) (next Verdict, changed bool) {
	if threshold < 1 {
		threshold = DefaultFailureThreshold
	}
	byLevel := make(map[Level]Probe, len(Levels))
	for _, p := range probes {
		byLevel[p.Level] = p
	}
	next = Verdict{
		Levels:         make(map[Level]LevelVerdict, len(Levels)),
		Jobs:           prev.Jobs,
		JobsObservedAt: prev.JobsObservedAt,
		RunsJobs:       prev.RunsJobs,
		ObservedAt:     now,
	}
	// held is true once a lower level failed below the threshold and kept
	// its condition: the levels above it keep theirs too.
	held := false
	for _, l := range Levels {
		p, ok := byLevel[l]
		if !ok {
			p = Probe{Level: l, Unknown: true, Reason: "NotProbed", Message: "The level was not probed."}
		}
		before, had := prev.Levels[l]
		had = had && before.Status != ""
		var lv LevelVerdict
		switch {
		case p.Unknown:
			if held && had {
				lv = before
			} else {
				lv = LevelVerdict{Status: metav1.ConditionUnknown, Reason: p.Reason, Message: p.Message}
			}
			lv.ConsecutiveFailures = 0
		case p.OK:
			lv = LevelVerdict{Status: metav1.ConditionTrue, Reason: p.Reason, Message: p.Message}
		default:
			n := before.ConsecutiveFailures + 1
			switch {
			case n >= threshold:
				lv = LevelVerdict{Status: metav1.ConditionFalse, Reason: p.Reason, Message: p.Message}
			case had && before.Status != metav1.ConditionUnknown:
				// True stays True until the threshold; False (the
				// threshold was raised while failing) stays False until
				// the level passes.
				lv = before
				held = true
			default:
				lv = LevelVerdict{Status: metav1.ConditionUnknown, Reason: p.Reason, Message: p.Message}
				held = true
			}
			lv.ConsecutiveFailures = n
		}
		next.Levels[l] = lv
		if lv.Status == metav1.ConditionFalse && !next.Degraded {
			next.Degraded = true
			next.DegradedReason = lv.Reason
			next.DegradedMessage = fmt.Sprintf("The %s check failed %d times in a row. %s", levelNoun(l), threshold, lv.Message)
			if prev.Degraded && prev.DegradedReason == lv.Reason && prevLevelMessage(prev, l) == lv.Message {
				// Keep the message written when the cluster became
				// Degraded, even if the threshold changed since.
				next.DegradedMessage = prev.DegradedMessage
			}
		}
	}
	return next, !sameConditions(prev, next)
}

func prevLevelMessage(v Verdict, l Level) string { return v.Levels[l].Message }

func levelNoun(l Level) string {
	switch l {
	case LevelJobManager:
		return "JobManager readiness"
	case LevelRest:
		return "Flink REST"
	case LevelJobs:
		return "running jobs"
	}
	return string(l)
}

// sameConditions compares what the conditions of the verdict would say.
func sameConditions(a, b Verdict) bool {
	for _, l := range Levels {
		x, y := a.Levels[l], b.Levels[l]
		if x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message {
			return false
		}
	}
	return a.Degraded == b.Degraded && a.DegradedReason == b.DegradedReason && a.DegradedMessage == b.DegradedMessage
}

// ReasonNotProbed is the reason of a level that has not been probed yet.
const ReasonNotProbed = "NotProbed"

// LevelOf is the verdict on level l, Unknown while it has not been probed.
// The controller turns it into the level's condition; the Degraded fields
// are its input to the cluster's Degraded condition, which it decides.
func (v Verdict) LevelOf(l Level) LevelVerdict {
	lv, ok := v.Levels[l]
	if !ok || lv.Status == "" {
		return LevelVerdict{Status: metav1.ConditionUnknown, Reason: ReasonNotProbed, Message: "The level has not been probed yet."}
	}
	return lv
}

// Threshold is spec.health.failureThreshold, defaulted.
func Threshold(fc *v1.FlinkCluster) int {
	if fc.Spec.Health != nil && fc.Spec.Health.FailureThreshold > 0 {
		return int(fc.Spec.Health.FailureThreshold)
	}
	return DefaultFailureThreshold
}

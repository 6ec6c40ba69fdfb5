package controller

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/health"
	"github.com/datapilot/datapilot/internal/lifecycle"
)

// This file is the one place the operator writes status conditions. The
// lifecycle, the autopilot, the health checks, the deletion and the
// observation of the workloads return verdicts; each condition type has one
// setter here that turns its verdict into the condition, stamped with the
// generation it was decided for. meta.SetStatusCondition keeps a
// condition's transition time while its status stays.

// clusterVerdicts are the verdicts of what one reconcile observed.
type clusterVerdicts struct {
	health                    *health.Verdict
	storage, avail, prog, deg verdict
	// haPermissions is nil when the cluster carries no such condition.
	haPermissions *verdict
}

// setConditions sets the conditions of what one reconcile observed.
func setConditions(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v clusterVerdicts) {
	setHealthConditions(st, gen, now, v.health)
	setSharedStorageCondition(st, gen, now, v.storage)
	setAvailableCondition(st, gen, now, v.avail)
	setProgressingCondition(st, gen, now, v.prog)
	setDegradedCondition(st, gen, now, v.deg)
	setHighAvailabilityPermissionsCondition(st, gen, now, v.haPermissions)
	expireJobSubmittedCondition(st, gen)
}

// setStepConditions sets the conditions of a lifecycle step and of the
// autopilot that ran with it, into the status the step records.
func setStepConditions(st *v1.FlinkClusterStatus, gen int64, at time.Time, f lifecycle.Facts, auto autopilotVerdicts) {
	now := metav1.NewTime(at.Truncate(time.Second))
	setUpgradingCondition(st, gen, now, f.Upgrading)
	setRollingBackCondition(st, gen, now, f.RollingBack)
	setRolledBackCondition(st, gen, now, f.RolledBack)
	setStateHoldCondition(st, gen, now, f.StateHold)
	setAutoscalingCondition(st, gen, now, auto.autoscaling)
	setRestartLoopCondition(st, gen, now, auto.restartLoop)
	setCheckpointsStalledCondition(st, gen, now, auto.checkpointsStalled)
}

func set(st *v1.FlinkClusterStatus, t string, gen int64, now metav1.Time, v verdict) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: t, Status: v.status, Reason: v.reason, Message: v.message,
		ObservedGeneration: gen, LastTransitionTime: now,
	})
}

// setHealthConditions sets JobManagerReady, RestAvailable and JobsRunning
// from the health verdict's levels; without a verdict they stay as they are.
func setHealthConditions(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, h *health.Verdict) {
	if h == nil {
		return
	}
	for _, l := range health.Levels {
		lv := h.LevelOf(l)
		if l == health.LevelJobs {
			lv = jobsLevel(st.Job, lv)
		}
		set(st, healthConditionType[l], gen, now, verdict{lv.Status, lv.Reason, lv.Message})
	}
}

// jobsLevel is the Jobs level as JobsRunning shows it for the job the
// status records. The verdict reads GET /jobs/overview, which the
// Dispatcher answers afresh; the step reads the job from GET
// /jobs/{jobid}, answered from a graph Flink keeps for web.refresh-interval
// (ExecutionGraphCache). Moments after a start the verdict sees RUNNING
// while the step still sees INITIALIZING or CREATED: the condition says
// starting, as status.job.state does, until the step sees RUNNING too (it
// polls a starting job, lifecycle.recordJob). A status saying both would
// contradict itself, and be written twice within the cache's refresh (14
// of 200 job clusters in the bench at N = 1000).
func jobsLevel(job *v1.JobStatus, lv health.LevelVerdict) health.LevelVerdict {
	if job == nil || lv.Reason != health.ReasonJobRunning ||
		job.State != string(flink.JobInitializing) && job.State != string(flink.JobCreated) {
		return lv
	}
	return health.LevelVerdict{Status: metav1.ConditionUnknown, Reason: health.ReasonJobStarting, Message: health.JobStartingMessage(job.ID)}
}

// healthConditionType is the condition of each health level.
var healthConditionType = map[health.Level]string{
	health.LevelJobManager: v1.ConditionJobManagerReady,
	health.LevelRest:       v1.ConditionRestAvailable,
	health.LevelJobs:       v1.ConditionJobsRunning,
}

func setSharedStorageCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v verdict) {
	set(st, v1.ConditionSharedStorage, gen, now, v)
}

func setAvailableCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v verdict) {
	set(st, v1.ConditionAvailable, gen, now, v)
}

func setProgressingCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v verdict) {
	set(st, v1.ConditionProgressing, gen, now, v)
}

func setDegradedCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v verdict) {
	set(st, v1.ConditionDegraded, gen, now, v)
}

// setHighAvailabilityPermissionsCondition removes the condition when no
// review applies (no Kubernetes HA).
func setHighAvailabilityPermissionsCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v *verdict) {
	if v == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionHighAvailabilityPermissions)
		return
	}
	set(st, v1.ConditionHighAvailabilityPermissions, gen, now, *v)
}

// setFact sets a lifecycle verdict; nil leaves the condition as recorded.
// A condition the step flipped and flipped back transitioned now, as it
// did when the lifecycle set each of its verdicts in turn.
func setFact(st *v1.FlinkClusterStatus, t string, gen int64, now metav1.Time, f *lifecycle.Fact) {
	if f == nil {
		return
	}
	set(st, t, gen, now, verdict{f.Status, f.Reason, f.Message})
	if f.Flipped {
		meta.FindStatusCondition(st.Conditions, t).LastTransitionTime = now
	}
}

func setUpgradingCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, f *lifecycle.Fact) {
	setFact(st, v1.ConditionUpgrading, gen, now, f)
}

func setRollingBackCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, f *lifecycle.Fact) {
	setFact(st, v1.ConditionRollingBack, gen, now, f)
}

func setRolledBackCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, f *lifecycle.Fact) {
	setFact(st, v1.ConditionRolledBack, gen, now, f)
}

// setStateHoldCondition says why the state rule holds the step, and is
// removed when it holds nothing.
func setStateHoldCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, held *lifecycle.Verdict) {
	if held == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionStateHold)
		return
	}
	set(st, v1.ConditionStateHold, gen, now, verdict{metav1.ConditionTrue, held.Reason, held.Message})
}

// setAutoscalingCondition exists while the autoscaler's status does; a nil
// verdict leaves it as recorded.
func setAutoscalingCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v *verdict) {
	if st.Autoscaler == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionAutoscaling)
		return
	}
	if v != nil {
		set(st, v1.ConditionAutoscaling, gen, now, *v)
	}
}

func setRestartLoopCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v *verdict) {
	if v != nil {
		set(st, v1.ConditionRestartLoop, gen, now, *v)
	}
}

func setCheckpointsStalledCondition(st *v1.FlinkClusterStatus, gen int64, now metav1.Time, v *verdict) {
	if v != nil {
		set(st, v1.ConditionCheckpointsStalled, gen, now, *v)
	}
}

// setDeletionBlockedCondition is True while the deletion waits for the
// final savepoint, False once it may go on.
func setDeletionBlockedCondition(st *v1.FlinkClusterStatus, gen int64, at time.Time, d deletionVerdict) {
	v := verdict{metav1.ConditionTrue, d.reason, d.message}
	if d.proceed {
		v.status = metav1.ConditionFalse
	}
	set(st, v1.ConditionDeletionBlocked, gen, metav1.NewTime(at.Truncate(time.Second)), v)
}

// setJobSubmittedCondition records a submission that did not happen:
// JobSubmitted=False with the reason and the refusal (which names the URI
// or the job) as its message, for the generation that asked for it.
func setJobSubmittedCondition(st *v1.FlinkClusterStatus, gen int64, at time.Time, reason string, refused error) {
	set(st, v1.ConditionJobSubmitted, gen, metav1.NewTime(at.Truncate(time.Second)),
		verdict{metav1.ConditionFalse, reason, refused.Error()})
}

// expireJobSubmittedCondition removes a jar refusal recorded for an older
// generation: a changed spec is tried again. A job that ended unseen stays
// so whatever the spec: its refusal goes once another job is recorded, or
// once Flink shows the job after all (a resend refused while the first
// send was still being submitted: Dispatcher#submitJob refuses an ID it
// is persisting, which GET /jobs/{jobid} does not show yet).
func expireJobSubmittedCondition(st *v1.FlinkClusterStatus, gen int64) {
	c := meta.FindStatusCondition(st.Conditions, v1.ConditionJobSubmitted)
	if c == nil {
		return
	}
	expired := c.ObservedGeneration != gen
	if c.Reason == v1.ReasonJobEndedUnseen {
		expired = st.Job == nil || st.Job.State != "" || !jobEndedUnseen(st.Conditions, st.Job.ID)
	}
	if expired {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionJobSubmitted)
	}
}

// jarRefused says whether uri was refused for this generation already, so
// the operator does not fetch it again.
func jarRefused(conds []metav1.Condition, gen int64, uri string) bool {
	c := meta.FindStatusCondition(conds, v1.ConditionJobSubmitted)
	return c != nil && c.Reason == v1.ReasonJarRefused && c.ObservedGeneration == gen &&
		strings.HasPrefix(c.Message, (&JarRefusedError{URI: uri}).Error())
}

// jobEndedUnseen says whether Flink refused to run job id again because it
// already ended (JobEndedUnseenError).
func jobEndedUnseen(conds []metav1.Condition, id string) bool {
	c := meta.FindStatusCondition(conds, v1.ConditionJobSubmitted)
	return id != "" && c != nil && c.Reason == v1.ReasonJobEndedUnseen &&
		strings.HasPrefix(c.Message, (&JobEndedUnseenError{JobID: id}).Error())
}

// setSQLScriptCondition sets SQLScriptPlanned from the SQL gate's verdict
// (sqlGate); a cluster without a SQL job carries none.
func setSQLScriptCondition(st *v1.FlinkClusterStatus, gen int64, at time.Time, v *verdict) {
	if v == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionSQLScriptPlanned)
		return
	}
	set(st, v1.ConditionSQLScriptPlanned, gen, metav1.NewTime(at.Truncate(time.Second)), *v)
}

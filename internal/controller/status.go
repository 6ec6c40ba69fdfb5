package controller

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/health"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

// observed is what one reconcile observed of the cluster: its workloads
// in the cache, the specs recorded in status, Flink, the autopilot's
// metrics, and what the status write adds after the decision (the health
// verdict, the apply's error).
type observed struct {
	jobManager  workload.JobManager
	taskManager *appsv1.StatefulSet
	// jmErr: the JobManager could not be read; jmPodsLeft: there is no
	// JobManager workload, but JobManager pods (an earlier one's).
	jmErr      error
	jmPodsLeft bool
	// jmStuck says why the JobManager's rollout is stuck (empty when it is
	// not); jmStuckIn is how soon it would be (readiness.JobManagerStuck).
	jmStuck   string
	jmStuckIn time.Duration
	// jmPods and tmPods count their pods (readiness): the workloads'
	// status, or the pods where they already show more.
	jmPods, tmPods readiness.Counts
	// jmSince is when the youngest ready JobManager pod turned ready
	// (lifecycle.Input.JobManagerSince), read only for a job Flink never
	// showed and does not know.
	jmSince time.Time
	// deployed and stable are status.deployedSpec and lastStableSpec.
	deployed, stable *v1.FlinkClusterSpec
	// job: the lifecycle runs (spec.job, a deployed job or an upgrade).
	job bool
	// rolledOut and drift compare the children with the deployed spec
	// (lifecycle.Input); retention is the checkpoint retention it renders.
	rolledOut, drift bool
	retention        string
	flink            lifecycle.Flink
	autopilot        autopilotSeen
	// sqlSpec is the spec a SQL job may move to: the user's once the SQL
	// Gateway planned its script, else the deployed one; sqlPlanned is
	// the gate's verdict (sqlGate). Nil for a jar job.
	sqlSpec    *v1.FlinkClusterSpec
	sqlPlanned *verdict
	// applyErr is the error of the last apply, if any.
	applyErr error
	// configHash is the hash of the configuration the pods should run.
	configHash string
	// health is the three-level health verdict, when the poller has one.
	health *health.Verdict
	// storage is where the cluster's state lives.
	storage storageFacts
	// statusErr is a status field that does not decode.
	statusErr error
	// haPermissions is the review of the user's account for Kubernetes HA.
	haPermissions *haPermissions
}

// computeStatus derives the status from what was observed. It starts from
// base, the status read or the one the lifecycle step records, so condition
// transition times survive unchanged conditions; the caller writes only
// when the result differs.
func computeStatus(fc *v1.FlinkCluster, base *v1.FlinkClusterStatus, obs observed, now metav1.Time) v1.FlinkClusterStatus {
	st := *base.DeepCopy()
	st.ObservedGeneration = fc.Generation
	st.Selector = labels.SelectorFromSet(resources.SelectorLabels(fc.Name, resources.ComponentTaskManager)).String()
	st.ConfigHash = obs.configHash
	// Recorded with the first status write, after the first apply rendered
	// it; from then on rendering reads it back (resources.HAIdentity).
	id := resources.HAIdentity(fc)
	st.HighAvailability = &id

	jmDesired := max(fc.Spec.JobManager.Replicas, 1)
	tmDesired := desiredTaskManagers(&fc.Spec, base.Autoscaler)
	st.JobManager = v1.ComponentStatus{Ready: fmt.Sprintf("0/%d", jmDesired)}
	st.TaskManager = v1.ComponentStatus{Ready: fmt.Sprintf("0/%d", tmDesired)}
	if obs.jobManager.Exists() {
		st.JobManager.Replicas = obs.jmPods.Replicas
		st.JobManager.ReadyReplicas = obs.jmPods.Ready
		st.JobManager.Ready = fmt.Sprintf("%d/%d", obs.jmPods.Ready, jmDesired)
	}
	if s := obs.taskManager; s != nil {
		st.TaskManager.Replicas = obs.tmPods.Replicas
		st.TaskManager.ReadyReplicas = obs.tmPods.Ready
		st.TaskManager.Ready = fmt.Sprintf("%d/%d", obs.tmPods.Ready, tmDesired)
	}

	avail, prog, deg := availability(tmDesired, obs), progress(tmDesired, obs), degradation(obs)
	if h := base.Healing; h != nil && h.Exhausted != "" && obs.statusErr == nil && obs.applyErr == nil {
		// The reason the job is not running, before the health check's
		// "not RUNNING".
		deg = verdict{metav1.ConditionTrue, "HealingExhausted", h.Exhausted}
	}
	if obs.storage.blocked() {
		// Nothing was deployed; the cluster waits for the user or the
		// platform team, so it is not progressing but failed.
		avail, prog = obs.storage.blockedVerdict(), obs.storage.blockedVerdict()
		deg = verdict{metav1.ConditionTrue, prog.reason, prog.message}
	}
	v := clusterVerdicts{health: obs.health, storage: obs.storage.sharedStorage(), avail: avail, prog: prog, deg: deg}
	if ha, ok := haPermissionsVerdict(fc, obs.haPermissions); ok {
		v.haPermissions = &ha
	}
	setConditions(&st, fc.Generation, now, v)
	st.Phase = phaseOf(fc, base, avail, prog, deg)
	return st
}

type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func availability(tmDesired int32, obs observed) verdict {
	switch {
	case !obs.jobManagerReady():
		return verdict{metav1.ConditionFalse, "JobManagerNotReady", "No JobManager pod is ready"}
	case obs.tmPods.Ready < tmDesired:
		return verdict{metav1.ConditionFalse, "TaskManagersNotReady", fmt.Sprintf("%d of %d TaskManagers are ready", obs.tmPods.Ready, tmDesired)}
	}
	if h := obs.health; h != nil {
		// A health level that failed its threshold makes the cluster
		// unavailable; one that is merely unknown does not.
		for _, l := range health.Levels {
			if lv, ok := h.Levels[l]; ok && lv.Status == metav1.ConditionFalse {
				return verdict{metav1.ConditionFalse, lv.Reason, lv.Message}
			}
		}
	}
	return verdict{metav1.ConditionTrue, "AllReady", fmt.Sprintf("JobManager and %d TaskManagers are ready", tmDesired)}
}

// reasonCreating: the JobManager or TaskManagers are not in the cache yet.
const reasonCreating = "Creating"

// reasonApplying: their controllers have not observed their spec yet.
const reasonApplying = "Applying"

func progress(tmDesired int32, obs observed) verdict {
	s := obs.taskManager
	switch {
	case !obs.jobManager.Exists() || s == nil:
		return verdict{metav1.ConditionTrue, reasonCreating, "Creating the JobManager and TaskManagers"}
	case s.Status.UpdateRevision != "" && s.Status.CurrentRevision != s.Status.UpdateRevision:
		return verdict{metav1.ConditionTrue, "RollingUpdate", fmt.Sprintf("%d of %d TaskManagers run the new revision", s.Status.UpdatedReplicas, tmDesired)}
	case obs.jmPods.Updated < obs.jmPods.Replicas || obs.jobManager.Terminating():
		// Terminating: an older cluster's Deployment being replaced by a
		// StatefulSet (jobManagerChild).
		return verdict{metav1.ConditionTrue, "RollingUpdate", "Replacing the JobManager"}
	case obs.tmPods.Replicas != tmDesired:
		return verdict{metav1.ConditionTrue, "Scaling", fmt.Sprintf("Scaling TaskManagers from %d to %d", obs.tmPods.Replicas, tmDesired)}
	case !obs.jmPods.Observed || !obs.tmPods.Observed:
		return verdict{metav1.ConditionTrue, reasonApplying, "Waiting for the workload controllers to observe the change"}
	case !obs.jobManagerReady() || obs.tmPods.Ready < tmDesired:
		return verdict{metav1.ConditionTrue, "WaitingForPods", "Waiting for pods to become ready"}
	}
	return verdict{metav1.ConditionFalse, "AllTaskManagersRegistered", "The cluster matches its spec"}
}

func degradation(obs observed) verdict {
	if obs.statusErr != nil {
		return verdict{metav1.ConditionTrue, "StatusUnreadable", obs.statusErr.Error()}
	}
	if obs.applyErr != nil {
		return verdict{metav1.ConditionTrue, "ApplyFailed", obs.applyErr.Error()}
	}
	if h := obs.health; h != nil && h.Degraded {
		return verdict{metav1.ConditionTrue, h.DegradedReason, h.DegradedMessage}
	}
	if obs.jmStuck != "" {
		return verdict{metav1.ConditionTrue, "JobManagerStuck", obs.jmStuck}
	}
	return verdict{metav1.ConditionFalse, "AsExpected", "No failure observed"}
}

// phaseOf summarises the conditions in one word.
func phaseOf(fc *v1.FlinkCluster, st *v1.FlinkClusterStatus, avail, prog, deg verdict) v1.Phase {
	switch {
	case !fc.DeletionTimestamp.IsZero():
		return v1.PhaseTerminating
	case deg.status == metav1.ConditionTrue:
		return v1.PhaseDegraded
	case st.Upgrade != nil:
		return v1.PhaseUpdating
	case prog.reason == "Scaling":
		return v1.PhaseScaling
	case prog.reason == "RollingUpdate" || prog.reason == reasonApplying && avail.status == metav1.ConditionTrue:
		return v1.PhaseUpdating
	case avail.status == metav1.ConditionTrue:
		return v1.PhaseRunning
	}
	return v1.PhasePending
}

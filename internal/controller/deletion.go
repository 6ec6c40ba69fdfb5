package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/policy"
	"github.com/datapilot/datapilot/internal/resources"
)

// A deleted cluster's job is stopped with a savepoint before anything of
// the cluster goes, so its state outlives it: a cluster created again can
// restore from it (spec.job.initialSavepointPath). The savepoint's path is
// in the Normal event the deletion ends with. Then the finalizer deletes
// Flink's HA ConfigMaps, whose pointers would otherwise make a cluster of
// the same identity recover the deleted job.
//
// Each stop is bounded by spec.upgradePolicy.savepointTimeout; past it the
// operator keeps waiting on the same trigger (a second stop is never sent
// while the first may still complete) and says so. When Flink cannot be
// asked (REST unreachable, the job restarting) or refuses the savepoint,
// the deletion is held, with the DeletionBlocked condition and a Warning
// event saying why, until it can be done or the user sets
// v1.AnnotationDeleteWithoutSavepoint to "true": state is never dropped
// without someone saying so.

// deletionRetry is how often a held deletion asks Flink again.
const deletionRetry = 10 * time.Second

// savepointRetry is how long a failed final savepoint waits before the
// next attempt.
const savepointRetry = 30 * time.Second

// Reasons of ConditionDeletionBlocked, and of the event ending a deletion.
const (
	ReasonSavingState        = "SavingState"
	ReasonFlinkUnreachable   = "FlinkUnreachable"
	ReasonJobNotRunning      = "JobNotRunning"
	ReasonSavepointFailed    = "SavepointFailed"
	ReasonSavepointTimedOut  = "SavepointTimedOut"
	ReasonStoppedForDeletion = "StoppedWithSavepoint"
	ReasonNothingToSave      = "NothingToSave"
	ReasonDeletedWithout     = "DeletedWithoutSavepoint"
)

// deletionInput is what the final-savepoint decision reads.
type deletionInput struct {
	uid string
	// forced: the user set AnnotationDeleteWithoutSavepoint.
	forced    bool
	stateless bool
	job       *v1.JobStatus
	flink     lifecycle.Flink
	now       time.Time
	timeout   time.Duration
}

// deletionVerdict says whether the deletion may go on, and if not, why and
// what to do meanwhile.
type deletionVerdict struct {
	proceed bool
	// reason and message: the event when proceeding, else the condition.
	reason, message string
	// trigger is a stop-with-savepoint to record, then send.
	trigger *v1.SavepointInfo
	// resend sends the recorded trigger again (Flink deduplicates it).
	resend  bool
	requeue time.Duration
}

// decideDeletion is the final-savepoint decision, a pure function.
func decideDeletion(in deletionInput) deletionVerdict {
	proceed := func(reason, msg string) deletionVerdict {
		return deletionVerdict{proceed: true, reason: reason, message: msg}
	}
	hold := func(reason, msg string, after time.Duration) deletionVerdict {
		return deletionVerdict{reason: reason, message: msg + forceHint, requeue: after}
	}
	job := in.job
	switch {
	case in.forced:
		return proceed(ReasonDeletedWithout, fmt.Sprintf("Deleting without a final savepoint: %s is set", v1.AnnotationDeleteWithoutSavepoint))
	case job == nil || job.ID == "":
		return proceed(ReasonNothingToSave, "No job was submitted; nothing to save")
	case in.stateless:
		return proceed(ReasonNothingToSave, fmt.Sprintf("Job %s is stateless (spec.job.upgradeMode); deleting without a savepoint", job.ID))
	case !in.flink.Reachable:
		return hold(ReasonFlinkUnreachable, fmt.Sprintf("Flink REST is unreachable, so job %s cannot be stopped with a savepoint; the deletion waits for it", job.ID), deletionRetry)
	case !in.flink.JobFound:
		return proceed(ReasonNothingToSave, fmt.Sprintf("Flink does not know job %s; nothing runs to save", job.ID))
	}
	p := job.PendingSavepoint
	if p != nil && p.Stop && p.JobID == job.ID {
		if v, settled := settleStop(in, p); settled {
			return v
		}
	}
	switch st := in.flink.JobState; {
	case st == flink.JobRunning:
		return deletionVerdict{
			reason:  ReasonSavingState,
			message: fmt.Sprintf("Stopping job %s with a savepoint before deleting the cluster", job.ID) + forceHint,
			trigger: &v1.SavepointInfo{
				TriggerID: deletionTriggerID(in.uid, job.ID, in.now), JobID: job.ID, Reason: v1.SavepointForDelete,
				Stop: true, TriggeredAt: metav1.NewTime(in.now.Truncate(time.Second)),
			},
			requeue: lifecycle.Poll,
		}
	case st.Terminal():
		return proceed(ReasonNothingToSave, fmt.Sprintf("Job %s already ended %s; nothing runs to save", job.ID, st))
	default:
		return hold(ReasonJobNotRunning, fmt.Sprintf("Job %s is %s; Flink takes a savepoint of a RUNNING job only, so the deletion waits for it to run", job.ID, st), deletionRetry)
	}
}

// forceHint ends every message of a held deletion.
const forceHint = "; set the annotation " + v1.AnnotationDeleteWithoutSavepoint + "=true to delete without it, losing the state since the last retained checkpoint"

// settleStop decides from the recorded stop; settled is false when the
// job's own state decides (the stop failed and may be tried again).
func settleStop(in deletionInput, p *v1.SavepointInfo) (deletionVerdict, bool) {
	op, waited := in.flink.Pending, in.now.Sub(p.TriggeredAt.Time)
	switch {
	case op == nil:
		// The trigger's status did not answer; ask again.
		return deletionVerdict{reason: ReasonSavingState, message: fmt.Sprintf("Waiting for the stop-with-savepoint of job %s", p.JobID) + forceHint, requeue: lifecycle.Poll}, true
	case op.Done && op.Failure == "":
		return deletionVerdict{proceed: true, reason: ReasonStoppedForDeletion,
			message: fmt.Sprintf("Stopped job %s with savepoint %s before deleting the cluster; restore from it with spec.job.initialSavepointPath", p.JobID, op.Path)}, true
	case op.Unknown && in.flink.JobState == flink.JobFinished:
		// The stop completed and Flink forgot the trigger (its operation
		// cache expired): its checkpoint history still lists the savepoint.
		path := "(see the job's checkpoint history)"
		for _, sp := range in.flink.Savepoints {
			if !sp.TriggeredAt.Before(p.TriggeredAt.Time.Add(-time.Second)) {
				path = sp.Path
			}
		}
		return deletionVerdict{proceed: true, reason: ReasonStoppedForDeletion,
			message: fmt.Sprintf("Stopped job %s with savepoint %s before deleting the cluster; restore from it with spec.job.initialSavepointPath", p.JobID, path)}, true
	case op.Unknown && in.flink.JobState == flink.JobRunning:
		// Never sent, or forgotten with the job still running.
		return deletionVerdict{reason: ReasonSavingState, message: fmt.Sprintf("Stopping job %s with a savepoint before deleting the cluster", p.JobID) + forceHint,
			resend: true, requeue: lifecycle.Poll}, true
	case op.Done:
		if waited < savepointRetry {
			return deletionVerdict{reason: ReasonSavepointFailed,
				message: fmt.Sprintf("The savepoint of job %s failed (%s); trying again in %s", p.JobID, op.Failure, savepointRetry) + forceHint,
				requeue: savepointRetry - waited}, true
		}
		return deletionVerdict{}, false
	case !op.Done && waited > in.timeout:
		return deletionVerdict{reason: ReasonSavepointTimedOut,
			message: fmt.Sprintf("The stop-with-savepoint of job %s has not completed in %s (spec.upgradePolicy.savepointTimeout); still waiting for it, as a second stop could race the first", p.JobID, in.timeout) + forceHint,
			requeue: deletionRetry}, true
	case !op.Done:
		return deletionVerdict{reason: ReasonSavingState, message: fmt.Sprintf("Stopping job %s with a savepoint before deleting the cluster", p.JobID) + forceHint, requeue: lifecycle.Poll}, true
	}
	return deletionVerdict{}, false
}

// deletionTriggerID is a Flink trigger ID for the final savepoint, derived
// from the cluster, the job and the moment of the decision.
func deletionTriggerID(uid, job string, now time.Time) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "delete/%s/%s/%d", uid, job, now.UnixNano()))
	return hex.EncodeToString(sum[:16])
}

// finalSavepoint runs the decision for a deleted cluster and acts on it:
// done reports that the deletion may go on.
func (r *Reconciler) finalSavepoint(ctx context.Context, fc *v1.FlinkCluster) (done bool, requeue time.Duration, err error) {
	in := deletionInput{
		uid:       string(fc.UID),
		forced:    fc.Annotations[v1.AnnotationDeleteWithoutSavepoint] == "true",
		stateless: fc.Spec.Job == nil || fc.Spec.Job.UpgradeMode == v1.UpgradeStateless,
		job:       fc.Status.Job,
		now:       time.Now(),
		timeout:   policy.For(&fc.Spec).Upgrade.SavepointTimeout,
	}
	// Settled once: the steps after it delete the JobManagers, which
	// would make Flink unreachable to a second decision.
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDeletionBlocked); c != nil && c.Status == metav1.ConditionFalse {
		return true, 0, nil
	}
	if !in.forced && !in.stateless && in.job != nil && in.job.ID != "" {
		in.flink = r.observeFlink(ctx, fc, r.observeWorkloads(ctx, fc, time.Now()).jobManagerReady())
	}
	v := decideDeletion(in)
	logger := log.FromContext(ctx)
	if v.proceed && in.job == nil {
		return true, 0, nil
	}
	st := fc.Status.DeepCopy()
	if v.trigger != nil {
		st.Job.PendingSavepoint = v.trigger
	}
	setDeletionBlockedCondition(st, fc.Generation, in.now, v)
	if !equality.Semantic.DeepEqual(*st, fc.Status) {
		// The trigger is recorded before it is sent: a restart resends the
		// same one, which Flink deduplicates, instead of a second stop.
		if err := r.applyStatus(ctx, fc, *st); err != nil {
			return false, 0, fmt.Errorf("record the final savepoint of %s: %w", klog.KObj(fc), err)
		}
		r.Metrics.StatusWrites.Inc()
		typ := corev1.EventTypeWarning
		if v.proceed || v.reason == ReasonSavingState {
			typ = corev1.EventTypeNormal
		}
		r.Recorder.Eventf(fc, nil, typ, v.reason, "Delete", "%s", v.message)
	}
	if v.proceed {
		logger.Info("Final savepoint settled", "flinkcluster", klog.KObj(fc), "reason", v.reason, "message", v.message)
		return true, 0, nil
	}
	if v.trigger != nil || v.resend {
		if err := r.request(ctx, fc, fc.Status.Job, nil, lifecycle.Action{Kind: lifecycle.ActTrigger}, nil); err != nil {
			r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, "FlinkRequestFailed", "Delete", "%v", err)
			logger.Error(err, "Final savepoint request failed", "flinkcluster", klog.KObj(fc))
		}
	}
	logger.Info("Deletion held for the final savepoint", "flinkcluster", klog.KObj(fc), "reason", v.reason)
	return false, v.requeue, nil
}

// deleteHAConfigMaps deletes the ConfigMaps Flink's Kubernetes HA services
// keep for the cluster, selected by the labels Flink puts on them. They
// are Flink's, not the operator's: no owner reference covers them, and
// left behind they hold the pointers a JobManager of the same
// kubernetes.cluster-id would recover the deleted job from. The
// JobManagers go first and are waited for: a leader still running would
// write its leader ConfigMap again. Nothing to delete is success; done is
// false while JobManager pods remain. ZooKeeper's nodes and the files
// under high-availability.storageDir are out of the operator's reach
// (docs/operations/deletion.md).
func (r *Reconciler) deleteHAConfigMaps(ctx context.Context, fc *v1.FlinkCluster) (done bool, err error) {
	if !resources.KubernetesHA(fc) && !deployedKubernetesHA(fc) {
		return true, nil
	}
	// Either kind (internal/workload); the one that does not exist is
	// not found.
	for _, jm := range []client.Object{&appsv1.StatefulSet{}, &appsv1.Deployment{}} {
		jm.SetNamespace(fc.Namespace)
		jm.SetName(resources.JobManagerName(fc))
		if err := r.Client.Delete(ctx, jm, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete the JobManagers of %s: %w", klog.KObj(fc), err)
		}
	}
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, pods, client.InNamespace(fc.Namespace),
		client.MatchingLabels(resources.SelectorLabels(fc.Name, resources.ComponentJobManager))); err != nil {
		return false, fmt.Errorf("list JobManager pods of %s: %w", klog.KObj(fc), err)
	}
	if len(pods.Items) > 0 {
		return false, nil
	}
	// Listed and deleted one by one: the operator holds list and delete on
	// ConfigMaps, not deletecollection (Flink's HA ConfigMaps are not in
	// the label-filtered cache, so the list reads the API server).
	cms := &corev1.ConfigMapList{}
	sel := client.MatchingLabels(resources.HAConfigMapLabels(resources.HAIdentity(fc)))
	if err := r.APIReader.List(ctx, cms, client.InNamespace(fc.Namespace), sel); err != nil {
		return false, fmt.Errorf("list the HA ConfigMaps of %s: %w", klog.KObj(fc), err)
	}
	for i := range cms.Items {
		if err := r.Client.Delete(ctx, &cms.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete the HA ConfigMap %s of %s: %w", cms.Items[i].Name, klog.KObj(fc), err)
		}
	}
	return true, nil
}

// deployedKubernetesHA: the spec the children run had Kubernetes HA, even
// if the current spec no longer has.
func deployedKubernetesHA(fc *v1.FlinkCluster) bool {
	deployed, err := decodeSpec(fc.Status.DeployedSpec, "status.deployedSpec")
	return err == nil && deployed != nil && deployed.HighAvailability != nil && deployed.HighAvailability.Mode == v1.HighAvailabilityKubernetes
}

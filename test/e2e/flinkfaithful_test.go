package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
)

// Scenarios where Flink behaves as its sources say and the operator must
// cope: the simulator models these behaviours, it does not invent them.

// TestStopResultExpiredWhileOperatorDown: Flink keeps an operation's
// result for rest.async.store-duration after it completes
// (CompletedOperationCache), then answers 404 for its trigger ID. An
// operator that was down longer than that finds the job FINISHED by its
// own stop-with-savepoint and no result: the upgrade must still restore
// from that savepoint, and take no second one.
func TestStopResultExpiredWhileOperatorDown(t *testing.T) {
	alone(t)
	ns := newNamespace(t)
	fc := jobCluster(ns, "expired")
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"rest.async.store-duration": "2s"}
	if err := k8s.Create(context.Background(), fc); err != nil {
		t.Fatal(err)
	}
	key := simKey(ns, "expired")
	waitCondition(t, ns, "expired", v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	eventually(t, time.Minute, "job running and stable", func() error {
		fc := getFC(t, ns, "expired")
		if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		return nil
	})
	oldJob := getFC(t, ns, "expired").Status.Job.ID
	sim.Engine.SetSavepointFault(key, flinksim.FaultStall)
	patchSpec(t, ns, "expired", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	eventually(t, time.Minute, "the stop-with-savepoint in flight", func() error {
		fc := getFC(t, ns, "expired")
		if fc.Status.Upgrade == nil || fc.Status.Upgrade.Phase != v1.UpgradeSavingState || simJob(t, key, oldJob).StopsTriggered != 1 {
			return fmt.Errorf("upgrade %+v", fc.Status.Upgrade)
		}
		return nil
	})
	op.kill()
	trigger := getFC(t, ns, "expired").Status.Job.PendingSavepoint.TriggerID
	sim.Engine.ClearFaults(key)
	// The stop completes, and Flink forgets its result after the store
	// duration: its trigger then answers 404.
	eventually(t, time.Minute, "the stop's result expired", func() error {
		if j := simJob(t, key, oldJob); j.State != flink.JobFinished {
			return fmt.Errorf("old job %s", j.State)
		}
		if _, err := sim.Engine.SavepointStatus(key, oldJob, trigger); err == nil || !strings.Contains(err.Error(), "There is no savepoint operation") {
			return fmt.Errorf("trigger %s still answers: %v", trigger, err)
		}
		return nil
	})
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	fc = waitUpgradeResult(t, ns, "expired", "UpgradeSucceeded", 2*time.Minute)
	old := simJob(t, key, oldJob)
	if n := savepointsTaken(old); n != 1 {
		t.Errorf("%d savepoints taken of job %s, want 1", n, oldJob)
	}
	nw := simJob(t, key, fc.Status.Job.ID)
	if nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestSavepoint {
		t.Errorf("new job restored from %+v, want the stop's savepoint %s", nw.RestoredFrom, old.LatestSavepoint)
	}
}

// TestJobManagerPodDeletedWithoutHA: without high availability a JobManager
// process that dies takes its jobs with it (a new process starts empty),
// while their checkpoints stay on the shared storage. Which one is the newest
// only the storage knows: the operator holds with StateHold
// NewestStateUnknown instead of restoring one that may be gone, and restores
// from the checkpoint the user names.
func TestJobManagerPodDeletedWithoutHA(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "jmcrash")
	jobID := getFC(t, ns, "jmcrash").Status.Job.ID
	before := simJob(t, key, jobID)
	if before.LatestCheckpoint == "" {
		t.Fatalf("no checkpoint before the crash: %+v", before)
	}
	var recorded *v1.CheckpointInfo
	eventually(t, time.Minute, "a checkpoint recorded in the status", func() error {
		if recorded = getFC(t, ns, "jmcrash").Status.Job.LastCheckpoint; recorded == nil {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	// Delete the JobManager pod, as a node failure or an eviction would:
	// its StatefulSet starts a new pod, a new Flink process.
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(ns),
		client.MatchingLabels(resources.SelectorLabels("jmcrash", resources.ComponentJobManager))); err != nil || len(pods.Items) != 1 {
		t.Fatalf("JobManager pods: %d, %v", len(pods.Items), err)
	}
	if err := k8s.Delete(context.Background(), &pods.Items[0]); err != nil {
		t.Fatal(err)
	}
	// The graceful stop suspended the job and kept its checkpoints
	// (RETAIN_ON_CANCELLATION), but no Flink process remembers which is the
	// newest, and the one recorded may have been subsumed since: the
	// operator restores nothing and says why.
	v := wantHeldNewestUnknown(t, ns, "jmcrash", key)
	restoreNewestNamed(t, ns, "jmcrash", key, jobID, v)
}

// restoreNewestNamed: the user names the newest checkpoint of the lost job
// as Flink's record of its suspension has it (as they would find it in the
// checkpoint storage), and the job runs again from it.
func restoreNewestNamed(t *testing.T, ns, name string, key flinksim.ClusterKey, jobID string, v flinksim.ClusterView) {
	t.Helper()
	var newest string
	for _, e := range v.Record.Ends {
		if e.JobID == jobID && e.Newest != nil && e.Newest.Complete {
			newest = e.Newest.Path
		}
	}
	if newest == "" {
		t.Fatalf("no retained checkpoint at the suspension: %+v", v.Record.Ends)
	}
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Spec.Job.InitialSavepointPath = newest })
	eventually(t, time.Minute, "the job running again from the named checkpoint", func() error {
		v, err := sim.Engine.View(key)
		if err != nil {
			return err
		}
		for _, j := range v.Jobs {
			if j.Present && j.State == flink.JobRunning && j.RestoredFrom != nil && j.RestoredFrom.ExternalPath == newest {
				return nil
			}
		}
		return fmt.Errorf("no job running from %s in Flink: %+v", newest, v.Jobs)
	})
}

// jobReads are the operator's reads of its job, which createUnseen loses.
const jobReads = "GET /jobs/{jobid}"

// createUnseen creates fc while every answer to the operator's reads of
// its job is lost, and waits until the job runs and completed a
// checkpoint in Flink, recorded in the status and never seen. It returns
// the job's ID; LoseAnswers(key, jobReads, 0) lets the operator look.
func createUnseen(t *testing.T, fc *v1.FlinkCluster) string {
	t.Helper()
	key := simKey(fc.Namespace, fc.Name)
	sim.Engine.LoseAnswers(key, jobReads, 1_000_000)
	if err := k8s.Create(context.Background(), fc); err != nil {
		t.Fatal(err)
	}
	var jobID string
	eventually(t, 2*time.Minute, "a checkpoint of the job completed in Flink", func() error {
		v, err := sim.Engine.View(key)
		if err != nil {
			return err
		}
		for _, j := range v.Jobs {
			if j.Present && j.State == flink.JobRunning && j.CheckpointsCompleted > 0 {
				jobID = j.ID
				return nil
			}
		}
		return fmt.Errorf("jobs %+v", v.Jobs)
	})
	if job := getFC(t, fc.Namespace, fc.Name).Status.Job; job == nil || job.ID != jobID || job.State != "" {
		t.Fatalf("status.job %+v; want job %s recorded and never seen", job, jobID)
	}
	return jobID
}

// TestJobLostBeforeItWasSeen: the JobManager, without high availability,
// runs the submitted job and completes a checkpoint of it while none of
// the operator's reads of the job are answered, and is lost before the
// operator ever sees the job. The JobManager that then answers "not
// found" became ready after the submission, so the job may have run and
// checkpointed: the operator holds (NewestStateUnknown) instead of
// sending the job again from what it started from, without the
// checkpoint, and restores the checkpoint the user names.
func TestJobLostBeforeItWasSeen(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns, name := newNamespace(t), "unseen"
	key := simKey(ns, name)
	jobID := createUnseen(t, jobCluster(ns, name))
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(ns),
		client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))); err != nil || len(pods.Items) != 1 {
		t.Fatalf("JobManager pods: %d, %v", len(pods.Items), err)
	}
	old := pods.Items[0]
	if err := k8s.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a new JobManager pod ready", func() error {
		if err := k8s.List(ctx, pods, client.InNamespace(ns),
			client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))); err != nil {
			return err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.UID != old.UID && p.DeletionTimestamp == nil && readiness.PodReady(p) {
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	sim.Engine.LoseAnswers(key, jobReads, 0)
	v := wantHeldNewestUnknown(t, ns, name, key)
	if v.Totals.JobsSubmitted != 1 {
		t.Errorf("%d jobs submitted; want the one, never sent again", v.Totals.JobsSubmitted)
	}
	restoreNewestNamed(t, ns, name, key, jobID, v)
}

// TestJobEndedUnseenWithHA: with high availability, a job the operator
// submitted and never saw runs, checkpoints, fails for good, and the
// leading JobManager is then lost, all while none of the operator's reads
// of the job are answered. The new leader recovers nothing (a globally
// terminal job's graph is gone) and answers "not found"; with HA the
// operator takes that for a job Flink never got and sends it again under
// its ID. Flink keeps the ended job's result (the operator renders
// job-result-store.delete-on-commit: false) and refuses it: the operator
// holds (NewestStateUnknown, JobSubmitted=False JobEndedUnseen) instead of
// running it again from what it started from, and restores the
// checkpoint the user names.
func TestJobEndedUnseenWithHA(t *testing.T) {
	parallel(t)
	ns, name := newNamespace(t), "endedunseen"
	key := simKey(ns, name)
	fc := jobClusterAt(ns, name, "2.0.1")
	fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	jobID := createUnseen(t, fc)
	if err := sim.Engine.SetJobState(key, jobID, flink.JobFailed); err != nil {
		t.Fatal(err)
	}
	if err := sim.Engine.LoseJobManager(key); err != nil {
		t.Fatal(err)
	}
	if job := getFC(t, ns, name).Status.Job; job == nil || job.ID != jobID || job.State != "" {
		t.Fatalf("status.job %+v; want job %s recorded and never seen", job, jobID)
	}
	sim.Engine.LoseAnswers(key, jobReads, 0)
	v := wantHeldNewestUnknown(t, ns, name, key)
	if c := meta.FindStatusCondition(getFC(t, ns, name).Status.Conditions, v1.ConditionJobSubmitted); c == nil || c.Reason != v1.ReasonJobEndedUnseen {
		t.Errorf("JobSubmitted %+v; want False, %s", c, v1.ReasonJobEndedUnseen)
	}
	if v.Totals.JobsSubmitted != 1 {
		t.Errorf("%d jobs submitted; want the one, never run again", v.Totals.JobsSubmitted)
	}
	restoreNewestNamed(t, ns, name, key, jobID, v)
	if c := meta.FindStatusCondition(getFC(t, ns, name).Status.Conditions, v1.ConditionJobSubmitted); c != nil {
		t.Errorf("JobSubmitted %+v stayed after another job was submitted", c)
	}
}

// TestJobCleanedUpByANewLeader: with high availability, a running job that
// checkpointed fails past its restart strategy, and the leading JobManager
// is lost while the job is being cleaned up (slow HA storage), all unseen.
// The next leader does not recover the job but finishes its cleanup, and
// shows it only by its result: FAILED, without its checkpoint history.
// The operator must not read "no checkpoints" there and restore the job
// from what it started from: it holds (NewestStateUnknown), and restores
// the checkpoint the user names.
func TestJobCleanedUpByANewLeader(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	name := "cleanedup"
	fc := jobClusterAt(ns, name, "2.0.1")
	fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	key := startCluster(t, fc)
	eventually(t, time.Minute, "a checkpoint recorded in the status", func() error {
		if getFC(t, ns, name).Status.Job.LastCheckpoint == nil {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	jobID := getFC(t, ns, name).Status.Job.ID
	sim.Engine.LoseAnswers(key, jobReads, 1_000_000)
	sim.Engine.SetCleanupDelay(key, time.Hour)
	defer sim.Engine.ClearFaults(key)
	if err := sim.Engine.SetJobState(key, jobID, flink.JobFailed); err != nil {
		t.Fatal(err)
	}
	if err := sim.Engine.LoseJobManager(key); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a new leader showing the job by its result", func() error {
		v, err := sim.Engine.View(key)
		if err != nil {
			return err
		}
		for _, j := range v.Jobs {
			if j.ID == jobID && j.Present && j.State == flink.JobFailed {
				return nil
			}
		}
		return fmt.Errorf("jobs %+v", v.Jobs)
	})
	sim.Engine.LoseAnswers(key, jobReads, 0)
	v := wantHeldNewestUnknown(t, ns, name, key)
	if v.Totals.JobsSubmitted != 1 {
		t.Errorf("%d jobs submitted; want the one, not restored from less than its newest state", v.Totals.JobsSubmitted)
	}
	restoreNewestNamed(t, ns, name, key, jobID, v)
}

// TestJobManagerDeletedWithoutHA: a JobManager StatefulSet deleted under a
// running job (by hand, by a tool pruning what it does not know) takes its
// pods and, without high availability, the job with them. The operator
// creates the StatefulSet again (a create: the child does not exist), and the new JobManager process starts empty, as Flink's would: the
// operator must not submit the job again from a restore point it cannot
// confirm as the newest, but hold and say why.
func TestJobManagerDeletedWithoutHA(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "jmgone")
	eventually(t, time.Minute, "a checkpoint recorded in the status", func() error {
		if getFC(t, ns, "jmgone").Status.Job.LastCheckpoint == nil {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	ctx := context.Background()
	name := types.NamespacedName{Namespace: ns, Name: "jmgone-jobmanager"}
	var old appsv1.StatefulSet
	if err := k8s.Get(ctx, name, &old); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &old, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the JobManager StatefulSet created again", func() error {
		var d appsv1.StatefulSet
		if err := k8s.Get(ctx, name, &d); err != nil {
			return err
		}
		if d.UID == old.UID {
			return fmt.Errorf("still the deleted one")
		}
		return nil
	})
	wantHeldNewestUnknown(t, ns, "jmgone", key)
}

// wantHeldNewestUnknown: the operator holds the cluster with StateHold
// NewestStateUnknown, and Flink runs no job meanwhile. It returns Flink's
// view as the hold found it.
func wantHeldNewestUnknown(t *testing.T, ns, name string, key flinksim.ClusterKey) flinksim.ClusterView {
	t.Helper()
	fc := waitCondition(t, ns, name, v1.ConditionStateHold, metav1.ConditionTrue, time.Minute)
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionStateHold); c.Reason != "NewestStateUnknown" {
		t.Fatalf("StateHold %s: %s", c.Reason, c.Message)
	}
	v, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range v.Jobs {
		if j.Present && j.State == flink.JobRunning {
			t.Fatalf("a job runs while the operator holds: %+v", j)
		}
	}
	return v
}

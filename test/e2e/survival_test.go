package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// The operator against a Flink that is slow, forgetful and lossy, as the
// simulator models it from Flink's sources.

// startCluster creates fc and waits until its job runs and is stable.
func startCluster(t *testing.T, fc *v1.FlinkCluster) flinksim.ClusterKey {
	t.Helper()
	if err := k8s.Create(context.Background(), fc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fc.Namespace, fc.Name, v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	eventually(t, time.Minute, "job running and stable", func() error {
		got := getFC(t, fc.Namespace, fc.Name)
		if got.Status.Job == nil || got.Status.Job.State != string(flink.JobRunning) || got.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v", got.Status.Job)
		}
		return nil
	})
	return simKey(fc.Namespace, fc.Name)
}

// liveJobs are the jobs some JobManager still runs (not terminal).
func liveJobs(t *testing.T, key flinksim.ClusterKey) []flinksim.JobView {
	t.Helper()
	v, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	var out []flinksim.JobView
	for _, j := range v.Jobs {
		if j.Present && !j.State.Terminal() {
			out = append(out, j)
		}
	}
	return out
}

func hasWarning(t *testing.T, ns, reason string) error {
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Reason == reason && e.Type == "Warning" {
			return nil
		}
	}
	return fmt.Errorf("no %s Warning among %d events", reason, len(list.Items))
}

// TestSlowCancelDuringUpgradeWithHA: with Kubernetes HA, a last-state
// configuration roll cancels the job, which takes its time (CANCELLING).
// New JobManagers recover every job that is not globally terminal from
// the HA store, so rolling the pods before the cancel ends would run the
// old job beside the new. Afterwards exactly one job runs, the new one,
// restored from the checkpoint.
func TestSlowCancelDuringUpgradeWithHA(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "slowcancel", "2.0.1")
	fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	fc.Spec.Job.UpgradeMode = v1.UpgradeLastState
	key := startCluster(t, fc)
	oldJob := getFC(t, ns, "slowcancel").Status.Job.ID

	sim.Engine.SetCancelDelay(key, 6*time.Second)
	defer sim.Engine.ClearFaults(key)
	patchSpec(t, ns, "slowcancel", func(fc *v1.FlinkCluster) {
		fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": "slow-cancel"}
	})
	eventually(t, time.Minute, "the old job cancelling while the old spec stays deployed", func() error {
		if j := simJob(t, key, oldJob); j.State != flink.JobCancelling {
			return fmt.Errorf("old job %s", j.State)
		}
		return nil
	})
	if got := getFC(t, ns, "slowcancel"); got.Status.Upgrade == nil || got.Status.Upgrade.Phase != v1.UpgradeDeploying {
		t.Fatalf("upgrade %+v while the old job cancels", got.Status.Upgrade)
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "slowcancel-config"}, cm); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data["config.yaml"], "slow-cancel") {
		t.Fatal("the new configuration was applied while the old job was still cancelling")
	}
	got := waitUpgradeResult(t, ns, "slowcancel", "UpgradeSucceeded", 2*time.Minute)
	live := liveJobs(t, key)
	if len(live) != 1 || live[0].ID != got.Status.Job.ID {
		t.Fatalf("jobs running after the roll: %+v, want only %s", live, got.Status.Job.ID)
	}
	if j := simJob(t, key, oldJob); j.State != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", j.State)
	}
	if r := live[0].RestoredFrom; r == nil || r.ExternalPath != got.Status.Job.RestoredFrom {
		t.Errorf("new job restored from %+v", r)
	}
}

// TestRestoreFromLostSavepointIsReported: the savepoint an upgrade took is
// gone before the new job restores from it (a bucket lifecycle rule, a
// wiped volume). Flink fails the job's initialization; the rollback
// restores from the same path and fails too. Both are reported, and the
// operator stops in a condition instead of retrying.
func TestRestoreFromLostSavepointIsReported(t *testing.T) {
	alone(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "lostsp", "1.19.3")
	key := startCluster(t, fc)
	patchSpec(t, ns, "lostsp", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.20.1" })
	eventually(t, time.Minute, "the savepoint taken and the rollout begun", func() error {
		got := getFC(t, ns, "lostsp")
		if got.Status.Upgrade == nil || got.Status.Upgrade.Phase != v1.UpgradeDeploying || got.Status.Upgrade.RestorePath == "" {
			return fmt.Errorf("upgrade %+v", got.Status.Upgrade)
		}
		return nil
	})
	// Stop the operator; the recorded phase says whether it submitted.
	op.kill()
	got := getFC(t, ns, "lostsp")
	if got.Status.Upgrade == nil || got.Status.Upgrade.Phase != v1.UpgradeDeploying {
		if err := op.start(); err != nil {
			t.Fatal(err)
		}
		t.Skipf("the operator submitted before it stopped (phase %+v); the lost path cannot be staged", got.Status.Upgrade)
	}
	lost := got.Status.Upgrade.RestorePath
	if n, err := sim.Engine.LosePath(key, lost); err != nil || n == 0 {
		t.Fatalf("lose %s: %d files, %v", lost, n, err)
	}
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the rollback reported failed", func() error {
		got = getFC(t, ns, "lostsp")
		c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionRolledBack)
		if c == nil || c.Reason != "RollbackFailed" || got.Status.Upgrade != nil {
			return fmt.Errorf("RolledBack %+v, upgrade %+v", c, got.Status.Upgrade)
		}
		return nil
	})
	up := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionUpgrading)
	if up == nil || up.Reason != "UpgradeFailed" || !strings.Contains(up.Message, "the job failed") {
		t.Errorf("Upgrading = %+v, want the failed restore named", up)
	}
	if !strings.Contains(meta.FindStatusCondition(got.Status.Conditions, v1.ConditionRolledBack).Message, lost) {
		t.Errorf("RolledBack does not name the lost path %s", lost)
	}
	// Events are written asynchronously: wait for it.
	eventually(t, 30*time.Second, "a RollbackFailed Warning event", func() error { return hasWarning(t, ns, "RollbackFailed") })
	if got.Status.LastFailedGeneration != got.Generation {
		t.Errorf("lastFailedGeneration %d of %d: the generation would be retried", got.Status.LastFailedGeneration, got.Generation)
	}
	// Nothing else runs: no job from nothing took the lost state's place.
	for _, j := range liveJobs(t, key) {
		if j.RestoredFrom == nil {
			t.Errorf("job %s runs without state", j.ID)
		}
	}
}

// TestRollbackWhoseJobFails: the upgraded job's tasks fail as they open,
// and so do those of the job the rollback restores; with no restarts
// configured Flink marks each FAILED. Each job is RUNNING before its tasks
// fail: the rollback ends in RollbackFailed, never in a wait, and never in
// RollbackComplete on a RUNNING job whose tasks did not run.
func TestRollbackWhoseJobFails(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "rbfail", "1.17.2")
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"restart-strategy.type": "none"}
	key := startCluster(t, fc)
	first := getFC(t, ns, "rbfail").Status.Job.ID
	// From here on every job's tasks fail as they start; the first job's
	// already run.
	const cause = "java.lang.IllegalStateException: injected at open"
	sim.Engine.SetTaskStartFault(key, cause)
	patchSpec(t, ns, "rbfail", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	var got *v1.FlinkCluster
	eventually(t, 3*time.Minute, "RollbackFailed", func() error {
		got = getFC(t, ns, "rbfail")
		c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionRollingBack)
		if c == nil || c.Reason != "RollbackFailed" || got.Status.Upgrade != nil {
			return fmt.Errorf("RollingBack %+v, upgrade %+v", c, got.Status.Upgrade)
		}
		return nil
	})
	if got.Status.Job.ID == first || !strings.Contains(got.Status.Job.FailureCause, cause) {
		t.Errorf("job %+v, want the failed rollback job with its cause (the first was %s)", got.Status.Job, first)
	}
	// The rollback's job restored the state the upgrade saved, and its
	// tasks failed; so had the upgrade's, which is what began it.
	if j := simJob(t, key, got.Status.Job.ID); j.State != flink.JobFailed || j.RestoredFrom == nil || j.RestoredFrom.ExternalPath != got.Status.Job.RestoredFrom {
		t.Errorf("rollback job %s restored from %+v, status says %s", j.State, j.RestoredFrom, got.Status.Job.RestoredFrom)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionUpgrading); c == nil || c.Reason != "UpgradeFailed" || !strings.Contains(c.Message, cause) {
		t.Errorf("Upgrading %+v, want the upgrade's job failed with %q", c, cause)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionRolledBack); c == nil || c.Reason != "RollbackFailed" {
		t.Errorf("RolledBack %+v", c)
	}
	// Events are written asynchronously: wait for it.
	eventually(t, 30*time.Second, "a RollbackFailed Warning event", func() error { return hasWarning(t, ns, "RollbackFailed") })
	if img := jobManagerImage(t, ns, "rbfail"); img != "flink:1.17.2" {
		t.Errorf("image %s, want the last stable one", img)
	}
}

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// The state rule's paths (issue 19), end to end. Each restores from a
// snapshot the simulator still holds: a restore from a deleted one fails
// the job at initialization.

// waitStateHold waits until StateHold is True with reason.
func waitStateHold(t *testing.T, ns, name, reason string, timeout time.Duration) *v1.FlinkCluster {
	t.Helper()
	var fc *v1.FlinkCluster
	eventually(t, timeout, "StateHold "+reason, func() error {
		fc = getFC(t, ns, name)
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionStateHold)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
			return fmt.Errorf("StateHold = %+v, upgrade %+v", c, fc.Status.Upgrade)
		}
		return nil
	})
	return fc
}

// runningFrom waits until the cluster's recorded job runs in the simulator
// and returns it.
func runningFrom(t *testing.T, ns, name string, key flinksim.ClusterKey, not string) flinksim.JobView {
	t.Helper()
	var j flinksim.JobView
	eventually(t, 2*time.Minute, "a new job running", func() error {
		fc := getFC(t, ns, name)
		if fc.Status.Job == nil || fc.Status.Job.ID == "" || fc.Status.Job.ID == not {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		view, err := sim.Engine.View(key)
		if err != nil {
			return err
		}
		for _, v := range view.Jobs {
			if v.ID == fc.Status.Job.ID && v.State == flink.JobRunning {
				j = v
				return nil
			}
		}
		return fmt.Errorf("job %s not running in Flink", fc.Status.Job.ID)
	})
	return j
}

// TestUpgradeDuringRestOutage (path 1): an upgrade decided while Flink's
// REST API answers 503 starts nothing until it answers, then takes its
// savepoint; it never restores the last recorded checkpoint.
func TestUpgradeDuringRestOutage(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "outage")
	oldJob := getFC(t, ns, "outage").Status.Job.ID
	sim.Engine.InjectUnavailable(key, -1)
	patchSpec(t, ns, "outage", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	fc := waitStateHold(t, ns, "outage", "FlinkUnreachable", time.Minute)
	if fc.Status.Upgrade != nil || jobManagerImage(t, ns, "outage") != "flink:1.17.1" {
		t.Fatalf("during the outage: upgrade %+v, image %s", fc.Status.Upgrade, jobManagerImage(t, ns, "outage"))
	}
	sim.Engine.ClearFaults(key)
	fc = waitUpgradeResult(t, ns, "outage", "UpgradeSucceeded", 2*time.Minute)
	wantRestoredFromStop(t, key, oldJob, fc.Status.Job.ID)
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionStateHold); c != nil {
		t.Errorf("StateHold left: %+v", c)
	}
}

// TestLastStateUpgradeWithDefaultRetention (path 3): with Flink's default
// of one retained checkpoint, a last-state roll restores the checkpoint
// Flink retains after the cancel, the old job's latest, on every minor.
func TestLastStateUpgradeWithDefaultRetention(t *testing.T) {
	eachPath(t, func(t *testing.T, p upgradePath) {
		ns := newNamespace(t)
		fc := jobClusterAt(ns, "laststate", p.from)
		fc.Spec.Checkpointing.Retention = 0 // Flink's default, one
		fc.Spec.Job.UpgradeMode = v1.UpgradeLastState
		key := startCluster(t, fc)
		first := simJob(t, key, getFC(t, ns, "laststate").Status.Job.ID)
		patchSpec(t, ns, "laststate", func(fc *v1.FlinkCluster) {
			fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": "orders"}
		})
		got := waitUpgradeResult(t, ns, "laststate", "UpgradeSucceeded", 2*time.Minute)
		wantRestoredFromLatestCheckpoint(t, key, first.ID, got.Status.Job.ID)
	})
}

// TestSlowStopWithSavepointIsFollowed (path 4): a stop-with-savepoint
// slower than savepointTimeout is followed to its end, not abandoned with
// the job stopped; the new job restores from the savepoint it produced.
func TestSlowStopWithSavepointIsFollowed(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "slowstop")
	oldJob := getFC(t, ns, "slowstop").Status.Job.ID
	sim.Engine.SetSavepointFault(key, flinksim.FaultStall)
	patchSpec(t, ns, "slowstop", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	fc := waitStateHold(t, ns, "slowstop", "StopInProgress", time.Minute)
	if fc.Status.Upgrade == nil || fc.Status.Upgrade.Phase != v1.UpgradeSavingState || jobManagerImage(t, ns, "slowstop") != "flink:1.17.1" {
		t.Fatalf("past the deadline: upgrade %+v, image %s", fc.Status.Upgrade, jobManagerImage(t, ns, "slowstop"))
	}
	sim.Engine.ClearFaults(key)
	fc = waitUpgradeResult(t, ns, "slowstop", "UpgradeSucceeded", 2*time.Minute)
	old := simJob(t, key, oldJob)
	nw := simJob(t, key, fc.Status.Job.ID)
	if old.StopsTriggered != 1 || old.State != flink.JobFinished || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestSavepoint {
		t.Errorf("old job %s after %d stops; new job restored from %+v, want %s", old.State, old.StopsTriggered, nw.RestoredFrom, old.LatestSavepoint)
	}
}

// TestRemovingTheJobKeepsItsState (path 5): removing spec.job stops the
// job with a savepoint before the pods roll; adding it back restores it.
func TestRemovingTheJobKeepsItsState(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "removal")
	before := getFC(t, ns, "removal")
	oldJob := before.Status.Job.ID
	patchSpec(t, ns, "removal", func(fc *v1.FlinkCluster) { fc.Spec.Job = nil })
	fc := waitUpgradeResult(t, ns, "removal", "JobRemoved", 2*time.Minute)
	old := simJob(t, key, oldJob)
	sp := fc.Status.Job.LastSavepoint
	if old.StopsTriggered != 1 || sp == nil || sp.Reason != v1.SavepointForRemoval || sp.Path != old.LatestSavepoint {
		t.Fatalf("removed: %d stops, last savepoint %+v, simulator's %s", old.StopsTriggered, sp, old.LatestSavepoint)
	}
	patchSpec(t, ns, "removal", func(fc *v1.FlinkCluster) { fc.Spec.Job = before.Spec.Job.DeepCopy() })
	nw := runningFrom(t, ns, "removal", key, oldJob)
	if nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != sp.Path {
		t.Errorf("re-added job restored from %+v, want %s", nw.RestoredFrom, sp.Path)
	}
}

// verifyingWithCheckpoints waits until an upgrade's new job is being
// verified and has completed two checkpoints in Flink; it returns the
// job's ID and the upgrade's restore point.
func verifyingWithCheckpoints(t *testing.T, ns, name string, key flinksim.ClusterKey) (job, restorePath string) {
	t.Helper()
	eventually(t, 2*time.Minute, "the upgraded job verifying with checkpoints", func() error {
		fc := getFC(t, ns, name)
		if fc.Status.Upgrade == nil || fc.Status.Upgrade.Phase != v1.UpgradeVerifying {
			return fmt.Errorf("upgrade %+v", fc.Status.Upgrade)
		}
		job, restorePath = fc.Status.Job.ID, fc.Status.Upgrade.RestorePath
		// The job's ID is recorded before its submission reaches Flink.
		j, ok := findSimJob(key, job)
		if !ok {
			return fmt.Errorf("job %s not submitted yet", job)
		}
		if j.State != flink.JobRunning || j.CheckpointsCompleted < 2 {
			return fmt.Errorf("job %s %s with %d checkpoints", j.ID, j.State, j.CheckpointsCompleted)
		}
		return nil
	})
	return job, restorePath
}

// TestNewSpecDuringVerification (path 7): a new spec while the upgraded
// job is being verified starts from a savepoint of that job, not from the
// pre-upgrade savepoint, which a rollback still returns to.
func TestNewSpecDuringVerification(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "verifying")
	patchSpec(t, ns, "verifying", func(fc *v1.FlinkCluster) {
		fc.Spec.Version = "1.18.1"
		fc.Spec.UpgradePolicy.StableCheckpoints = 100
		fc.Spec.UpgradePolicy.StabilityTimeout = "5m"
	})
	verifying, pre := verifyingWithCheckpoints(t, ns, "verifying", key)
	patchSpec(t, ns, "verifying", func(fc *v1.FlinkCluster) {
		fc.Spec.Version = "1.18.2"
		fc.Spec.UpgradePolicy.StableCheckpoints = 2
	})
	fc := waitUpgradeResult(t, ns, "verifying", "UpgradeSucceeded", 2*time.Minute)
	v := simJob(t, key, verifying)
	nw := simJob(t, key, fc.Status.Job.ID)
	if v.StopsTriggered != 1 || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != v.LatestSavepoint || v.LatestSavepoint == pre {
		t.Errorf("verifying job %d stops, savepoint %s; new job restored from %+v; want the verifying job's savepoint, not %s", v.StopsTriggered, v.LatestSavepoint, nw.RestoredFrom, pre)
	}
}

// TestSpecBackWhileTheCancelSettles (fault schedule 278): during the
// verifying of a last-state upgrade a new spec cancels the verified job
// (restarting after a task failure),
// and the spec returns to the deployed one while the operator waits for
// Flink's cached history of the cancelled job to settle. The job is then
// restored from the checkpoint the cancel kept, never from the state the
// cancelled job had started from (the superseded upgrade's restore point,
// which the operator used before).
func TestSpecBackWhileTheCancelSettles(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobCluster(ns, "back")
	fc.Spec.Job.UpgradeMode = v1.UpgradeLastState
	// Flink caches the ended job's history this long: the operator waits
	// it out after the end (lifecycle settleLeft), the test's window
	// (milliseconds: a Long before 1.20).
	// A failed job restarts five minutes later: it is RESTARTING, not
	// RUNNING, when the new spec comes, so the rule cancels it.
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"web.refresh-interval": "10000",
		"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "5 min"}
	key := startCluster(t, fc)
	patchSpec(t, ns, "back", func(fc *v1.FlinkCluster) {
		fc.Spec.Version = "1.17.2"
		fc.Spec.UpgradePolicy.StableCheckpoints = 100
		fc.Spec.UpgradePolicy.StabilityTimeout = "5m"
	})
	deployed := getFC(t, ns, "back").Spec.DeepCopy()
	verifying, pre := verifyingWithCheckpoints(t, ns, "back", key)
	if err := sim.Engine.FailJob(key, verifying, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the verified job seen restarting", func() error {
		// As the operator reads it, through Flink's cache of the job.
		if j := getFC(t, ns, "back").Status.Job; j == nil || j.ID != verifying || j.State != string(flink.JobRestarting) {
			return fmt.Errorf("job %+v", j)
		}
		return nil
	})
	patchSpec(t, ns, "back", func(fc *v1.FlinkCluster) {
		fc.Spec.FlinkConfiguration["pipeline.name"] = "orders"
	})
	var recorded string
	eventually(t, time.Minute, "the verified job cancelled and its end recorded", func() error {
		got := getFC(t, ns, "back")
		if j := got.Status.Job; j == nil || j.ID != verifying || j.EndedAt == nil || got.Status.Upgrade == nil {
			return fmt.Errorf("job %+v, upgrade %+v", j, got.Status.Upgrade)
		}
		recorded = got.Status.Upgrade.RestorePath
		return nil
	})
	patchSpec(t, ns, "back", func(fc *v1.FlinkCluster) { fc.Spec = *deployed.DeepCopy() })
	if recorded != "" && recorded != pre {
		t.Fatalf("the operator had read the cancelled job's state (%s) before the spec came back: the test missed its window", recorded)
	}
	nw := runningFrom(t, ns, "back", key, verifying)
	old := simJob(t, key, verifying)
	if old.State != flink.JobCanceled || old.LatestCheckpoint == "" || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestCheckpoint {
		t.Errorf("cancelled job %s, latest checkpoint %q; new job restored from %+v; want that checkpoint, not %s", old.State, old.LatestCheckpoint, nw.RestoredFrom, pre)
	}
}

// TestHealRestoresTheCheckpointTheCancelKept (path 2): a running job whose
// checkpoints stall is healed by a cancel that keeps its checkpoints
// (RETAIN_ON_CANCELLATION) and restored from the newest one Flink retains,
// with Flink's default retention of one.
func TestHealRestoresTheCheckpointTheCancelKept(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "heal", "1.19.3")
	fc.Spec.Checkpointing.Retention = 0
	fc.Spec.Healing = &v1.HealingSpec{RestoreAttempts: 2, Backoff: "2s", StalledCheckpointIntervals: 3, OnStalledCheckpoints: v1.HealRestore}
	key := startCluster(t, fc)
	first := simJob(t, key, getFC(t, ns, "heal").Status.Job.ID)
	eventually(t, time.Minute, "checkpoints", func() error {
		if j := simJob(t, key, first.ID); j.CheckpointsCompleted < 2 {
			return fmt.Errorf("%d checkpoints", j.CheckpointsCompleted)
		}
		return nil
	})
	sim.Engine.SetCheckpointFault(key, flinksim.FaultStall)
	eventually(t, 2*time.Minute, "the stalled job cancelled", func() error {
		if j := simJob(t, key, first.ID); j.State != flink.JobCanceled {
			return fmt.Errorf("job %s", j.State)
		}
		return nil
	})
	sim.Engine.ClearFaults(key)
	nw := runningFrom(t, ns, "heal", key, first.ID)
	old := simJob(t, key, first.ID)
	if nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestCheckpoint || old.LatestCheckpoint == "" {
		t.Errorf("healed job restored from %+v, want the cancelled job's latest checkpoint %q", nw.RestoredFrom, old.LatestCheckpoint)
	}
}

// TestFirstDeployWaitsForFlink: a new job cluster whose pods turn ready
// (counted from the pods, before the workloads' status) while Flink's REST
// API does not answer submits nothing: the REST API is starting, then,
// past health.RestStartGrace, unavailable, and the first deploy waits for
// Flink's answer. Once it answers, exactly one job is submitted.
func TestFirstDeployWaitsForFlink(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	key := simKey(ns, "first")
	sim.Engine.InjectUnavailable(key, -1)
	if err := k8s.Create(context.Background(), jobCluster(ns, "first")); err != nil {
		t.Fatal(err)
	}
	// The fence: the REST API judged unavailable, past the start's grace,
	// so reconciles have decided the first deploy without Flink.
	waitCondition(t, ns, "first", v1.ConditionRestAvailable, metav1.ConditionFalse, time.Minute)
	fc := getFC(t, ns, "first")
	runs := func() int {
		v, err := sim.Engine.View(key)
		if err != nil {
			t.Fatal(err)
		}
		return v.Requests["POST /jars/{jarid}/run"]
	}
	if fc.Status.Job != nil && fc.Status.Job.ID != "" || runs() != 0 {
		t.Fatalf("Flink unreachable: job %+v recorded, %d runs sent", fc.Status.Job, runs())
	}
	if !condition(fc, v1.ConditionAvailable, metav1.ConditionFalse) {
		t.Errorf("Available while the REST API does not answer: %+v", fc.Status.Conditions)
	}
	sim.Engine.ClearFaults(key)
	eventually(t, 2*time.Minute, "job running and stable", func() error {
		got := getFC(t, ns, "first")
		if got.Status.Job == nil || got.Status.Job.State != string(flink.JobRunning) || got.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v", got.Status.Job)
		}
		return nil
	})
	if n := runs(); n != 1 {
		t.Errorf("%d jobs submitted, want 1", n)
	}
}

// TestRestartDuringRestOutage: the operator restarts while a running job
// cluster's REST API answers 503. The new process times the REST start
// from the JobManager pod's Ready transition, long past, so it judges the
// API unavailable instead of holding the cluster as starting; and with
// Flink unreachable it stops, cancels and submits nothing: the job it had
// stays recorded, and an upgrade asked for meanwhile is held with
// StateHold FlinkUnreachable, then takes its savepoint once Flink answers
// and restores from it.
func TestRestartDuringRestOutage(t *testing.T) {
	alone(t)
	ns, key := startJobCluster(t, "restarted")
	oldJob := getFC(t, ns, "restarted").Status.Job.ID
	sim.Engine.InjectUnavailable(key, -1)
	defer sim.Engine.ClearFaults(key)
	op.kill()
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, "restarted", v1.ConditionRestAvailable, metav1.ConditionFalse, time.Minute)
	patchSpec(t, ns, "restarted", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	fc := waitStateHold(t, ns, "restarted", "FlinkUnreachable", time.Minute)
	runs := func() int {
		v, err := sim.Engine.View(key)
		if err != nil {
			t.Fatal(err)
		}
		return v.Requests["POST /jars/{jarid}/run"]
	}
	submitted := runs()
	if fc.Status.Upgrade != nil || fc.Status.Job == nil || fc.Status.Job.ID != oldJob || jobManagerImage(t, ns, "restarted") != "flink:1.17.1" {
		t.Fatalf("Flink unreachable after a restart: upgrade %+v, job %+v (had %s), image %s", fc.Status.Upgrade, fc.Status.Job, oldJob, jobManagerImage(t, ns, "restarted"))
	}
	if old := simJob(t, key, oldJob); old.StopsTriggered != 0 || old.State != flink.JobRunning {
		t.Fatalf("Flink unreachable after a restart: the old job %s, %d stops", old.State, old.StopsTriggered)
	}
	sim.Engine.ClearFaults(key)
	fc = waitUpgradeResult(t, ns, "restarted", "UpgradeSucceeded", 2*time.Minute)
	wantRestoredFromStop(t, key, oldJob, fc.Status.Job.ID)
	if n := runs() - submitted; n != 1 {
		t.Errorf("%d jobs submitted once Flink answered, want 1", n)
	}
}

// TestUpgradeWaitsForTasksRestoringState: after a JobManager failover
// (Kubernetes HA) the recovered job is RUNNING while its tasks restore
// their state. A version change asked for then waits for them (StateHold
// WaitingForRunning) instead of sending a stop-with-savepoint Flink would
// fail, which would end the upgrade until the spec changed; once the tasks
// run it takes the savepoint and restores from it.
func TestUpgradeWaitsForTasksRestoringState(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "restoring", "1.17.1")
	fc.Spec.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	key := startCluster(t, fc)
	oldJob := getFC(t, ns, "restoring").Status.Job.ID
	// Restores that last until the test lifts them.
	sim.Engine.SetRestoreDelay(key, time.Hour)
	if err := sim.Engine.LoseJobManager(key); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the recovered job RUNNING, its tasks restoring", func() error {
		j, err := sim.Engine.Job(key, oldJob)
		if err != nil {
			return err
		}
		if j.State != flink.JobRunning || len(j.Vertices) == 0 || j.Vertices[0].Status != "INITIALIZING" {
			return fmt.Errorf("job %s, vertices %+v", j.State, j.Vertices)
		}
		return nil
	})
	patchSpec(t, ns, "restoring", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	waitStateHold(t, ns, "restoring", "WaitingForRunning", time.Minute)
	if j := simJob(t, key, oldJob); j.SavepointsTriggered != 0 {
		t.Fatalf("%d savepoints sent to a job whose tasks do not all run", j.SavepointsTriggered)
	}
	sim.Engine.SetRestoreDelay(key, 0)
	fc = waitUpgradeResult(t, ns, "restoring", "UpgradeSucceeded", 2*time.Minute)
	wantRestoredFromStop(t, key, oldJob, fc.Status.Job.ID)
}

// TestJobChangeWaitsWhileTheAdaptiveSchedulerWaits: after a restart the
// AdaptiveScheduler waits for resources (CREATED), and Flink shows none of
// the job's checkpoints meanwhile; a job cancelled then ends with that
// empty history, its checkpoints on storage and in no answer of Flink's.
// A job change asked for then waits for the job to run (StateHold
// WaitingForRunning), then stops it with a savepoint and restores that:
// nothing older than the newest checkpoint the job completed.
func TestJobChangeWaitsWhileTheAdaptiveSchedulerWaits(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "waits", "1.19.3")
	// Six subtasks wanted and four slots: the scheduler waits its
	// stabilization timeout at every start and restart, then runs four.
	fc.Spec.Job.Parallelism = 6
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"jobmanager.scheduler": "adaptive",
		"jobmanager.adaptive-scheduler.resource-stabilization-timeout": "30 s"}
	key := startCluster(t, fc)
	old := getFC(t, ns, "waits").Status.Job.ID
	eventually(t, time.Minute, "the job checkpointing", func() error {
		if j := simJob(t, key, old); j.CheckpointsCompleted < 2 {
			return fmt.Errorf("job %s with %d checkpoints", j.State, j.CheckpointsCompleted)
		}
		return nil
	})
	if err := sim.Engine.FailJob(key, old, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the restarted job waiting for resources, as Flink's cache shows it", func() error {
		// Through the REST cache the operator reads, so its next look
		// sees the job CREATED too.
		j, err := sim.Engine.Job(key, old)
		if err != nil {
			return err
		}
		if j.State != flink.JobCreated {
			return fmt.Errorf("job %s", j.State)
		}
		return nil
	})
	patchSpec(t, ns, "waits", func(fc *v1.FlinkCluster) { fc.Spec.Job.Args = []string{"--window", "20"} })
	held := false
	eventually(t, time.Minute, "the waiting job running or ended", func() error {
		c := meta.FindStatusCondition(getFC(t, ns, "waits").Status.Conditions, v1.ConditionStateHold)
		if j := simJob(t, key, old); j.State == flink.JobCreated {
			// The hold for this state, not a later one for tasks
			// deploying.
			held = held || c != nil && c.Status == metav1.ConditionTrue && c.Reason == "WaitingForRunning" && strings.Contains(c.Message, "it is CREATED")
			return fmt.Errorf("job %s", j.State)
		}
		return nil
	})
	nw := runningFrom(t, ns, "waits", key, old)
	ended := simJob(t, key, old)
	if nw.RestoredFrom == nil || ended.LatestCheckpoint == "" || nw.RestoredFrom.ID < checkpointID(t, ended.LatestCheckpoint) {
		t.Fatalf("old job %s, latest checkpoint %q; new job restored from %+v; want nothing older", ended.State, ended.LatestCheckpoint, nw.RestoredFrom)
	}
	if !held {
		t.Fatal("no WaitingForRunning hold seen while the job waited for resources: the test missed its window")
	}
}

// checkpointID is the N of a checkpoint's .../chk-N path.
func checkpointID(t *testing.T, path string) int64 {
	t.Helper()
	_, n, ok := strings.Cut(path[strings.LastIndex(path, "/")+1:], "chk-")
	id, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		t.Fatalf("checkpoint path %q has no chk-N", path)
	}
	return id
}

// TestStopWhoseAnswerIsLost (slower than our timeout): Flink takes an
// upgrade's stop-with-savepoint, and its answer never reaches the operator,
// as when it comes after the client's timeout. The operator recorded the
// stop's trigger ID before it sent it: it follows that savepoint, or sends
// the stop again under the same ID, which Flink answers without stopping
// twice. Either way the new job restores from the one savepoint taken.
func TestStopWhoseAnswerIsLost(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "loststop")
	oldJob := getFC(t, ns, "loststop").Status.Job.ID
	sim.Engine.LoseAnswers(key, "POST /jobs/{jobid}/stop", 1)
	patchSpec(t, ns, "loststop", func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	fc := waitUpgradeResult(t, ns, "loststop", "UpgradeSucceeded", 2*time.Minute)
	wantAnswersLost(t, key, "POST /jobs/{jobid}/stop")
	wantRestoredFromStop(t, key, oldJob, fc.Status.Job.ID)
}

// TestFinalStopWhoseAnswerIsLost: deleting a cluster stops its job with a
// savepoint, and the stop's answer never reaches the operator. The cluster
// goes only once that savepoint is complete, and the operator names it.
func TestFinalStopWhoseAnswerIsLost(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "lostfinal")
	oldJob := getFC(t, ns, "lostfinal").Status.Job.ID
	sim.Engine.LoseAnswers(key, "POST /jobs/{jobid}/stop", 1)
	deleteAndWait(t, ns, "lostfinal")
	wantAnswersLost(t, key, "POST /jobs/{jobid}/stop")
	j := simJob(t, key, oldJob)
	if j.State != flink.JobFinished || j.StopsTriggered != 1 {
		t.Fatalf("old job %s after %d stops, want FINISHED by one stop-with-savepoint", j.State, j.StopsTriggered)
	}
	if sp := stoppedSavepoint(t, ns, "lostfinal"); sp != j.LatestSavepoint {
		t.Errorf("the operator named %s, Flink took %s", sp, j.LatestSavepoint)
	}
}

// TestCancelWhoseAnswerIsLost: Flink cancels a last-state upgrade's job,
// and the answer never reaches the operator. It learns the cancel from the
// job's state, not from the answer, and restores the new job from the
// latest checkpoint Flink kept of the old one.
func TestCancelWhoseAnswerIsLost(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "lostcancel", "1.17.1")
	fc.Spec.Job.UpgradeMode = v1.UpgradeLastState
	key := startCluster(t, fc)
	first := getFC(t, ns, "lostcancel").Status.Job.ID
	sim.Engine.LoseAnswers(key, "PATCH /jobs/{jobid}", 1)
	patchSpec(t, ns, "lostcancel", func(fc *v1.FlinkCluster) {
		fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": "orders"}
	})
	got := waitUpgradeResult(t, ns, "lostcancel", "UpgradeSucceeded", 2*time.Minute)
	wantAnswersLost(t, key, "PATCH /jobs/{jobid}")
	wantRestoredFromLatestCheckpoint(t, key, first, got.Status.Job.ID)
}

// TestSubmissionWhoseAnswerIsLost: Flink runs a new cluster's job, and the
// answer to the submission never reaches the operator. The job ID is the
// operator's own, recorded before it sent the run: it finds the job Flink
// knows under it instead of submitting a second one.
func TestSubmissionWhoseAnswerIsLost(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	key := simKey(ns, "lostrun")
	sim.Engine.LoseAnswers(key, "POST /jars/{jarid}/run", 1)
	if err := k8s.Create(context.Background(), jobCluster(ns, "lostrun")); err != nil {
		t.Fatal(err)
	}
	var fc *v1.FlinkCluster
	eventually(t, 2*time.Minute, "job running and stable", func() error {
		fc = getFC(t, ns, "lostrun")
		if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		return nil
	})
	wantAnswersLost(t, key, "POST /jars/{jarid}/run")
	v, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	if v.Totals.JobsSubmitted != 1 || len(v.Jobs) != 1 || v.Jobs[0].ID != fc.Status.Job.ID {
		t.Errorf("%d jobs submitted, jobs %+v; want the one recorded, %s", v.Totals.JobsSubmitted, v.Jobs, fc.Status.Job.ID)
	}
	if n := v.Requests["POST /jars/{jarid}/run"]; n != 1 {
		t.Errorf("%d runs sent, want 1: the job Flink knows needs no second", n)
	}
}

// wantAnswersLost: the injected lost answers of endpoint were all used, so
// the test saw the operator go on without them.
func wantAnswersLost(t *testing.T, key flinksim.ClusterKey, endpoint string) {
	t.Helper()
	v, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.LostAnswers[endpoint]; n != 0 || v.Requests[endpoint] == 0 {
		t.Errorf("%s: %d requests, %d answers still to lose; the fault did not fire", endpoint, v.Requests[endpoint], n)
	}
}

// wantRestoredFromLatestCheckpoint: the old job was cancelled, and the new
// one runs restored from the old one's latest checkpoint, as Flink
// recorded both.
func wantRestoredFromLatestCheckpoint(t *testing.T, key flinksim.ClusterKey, oldJob, newJob string) {
	t.Helper()
	old, nw := simJob(t, key, oldJob), simJob(t, key, newJob)
	if old.State != flink.JobCanceled || nw.State != flink.JobRunning || nw.RestoredFrom == nil || nw.RestoredFromSavepoint ||
		nw.RestoredFrom.ExternalPath != old.LatestCheckpoint {
		t.Errorf("old job %s, latest checkpoint %s; new job %s restored from %+v; want the old job's latest checkpoint",
			old.State, old.LatestCheckpoint, nw.State, nw.RestoredFrom)
	}
}

// wantRestoredFromStop: the old job was stopped exactly once, and the new
// job restored from the savepoint that stop took, as Flink recorded both.
func wantRestoredFromStop(t *testing.T, key flinksim.ClusterKey, oldJob, newJob string) {
	t.Helper()
	old, nw := simJob(t, key, oldJob), simJob(t, key, newJob)
	if old.StopsTriggered != 1 || nw.RestoredFrom == nil || !nw.RestoredFromSavepoint || nw.RestoredFrom.ExternalPath != old.LatestSavepoint {
		t.Errorf("old job %d stops; new job restored from %+v, want the stop's savepoint %s", old.StopsTriggered, nw.RestoredFrom, old.LatestSavepoint)
	}
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// upgradePath is a minor line the lifecycle scenarios run on, from one
// release to the next.
type upgradePath struct{ name, from, to string }

// upgradePaths cover the three shapes of Flink configuration: a 1.x
// before 1.19 (flink-conf.yaml), 1.19 to 1.20 (config.yaml, and the
// checkpoint keys renamed on the way), and 2.x.
var upgradePaths = []upgradePath{
	{"v1-17", "1.17.2", "1.18.1"},
	{"v1-19", "1.19.3", "1.20.1"},
	{"v2-0", "2.0.1", "2.1.1"},
}

// eachPath runs a scenario on every upgrade path, in parallel.
func eachPath(t *testing.T, scenario func(t *testing.T, p upgradePath)) {
	parallel(t)
	for _, p := range upgradePaths {
		t.Run(p.name, func(t *testing.T) {
			parallel(t)
			scenario(t, p)
		})
	}
}

// jobCluster is a small cluster with one declared job, on Flink 1.17.1.
func jobCluster(ns, name string) *v1.FlinkCluster { return jobClusterAt(ns, name, "1.17.1") }

// jobClusterAt is jobCluster on another version.
func jobClusterAt(ns, name, version string) *v1.FlinkCluster {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{
		Version:     version,
		JobManager:  v1.JobManagerSpec{Replicas: 1},
		TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		// The simulator checkpoints on its own clock; Flink would on this one.
		Checkpointing: &v1.CheckpointingSpec{Interval: "1s", Retention: 3},
		Job: &v1.JobSpec{JarURI: jarServer.URL + "/wordcount.jar", EntryClass: "org.example.WordCount",
			Parallelism: 2, State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint, SavepointRetention: 5},
		UpgradePolicy: &v1.UpgradePolicy{StableCheckpoints: 2, StabilityTimeout: "30s", SavepointTimeout: "20s", AutoRollback: ptr.To(true)},
	}
	return fc
}

// startJobCluster creates the cluster and waits until its job runs and its
// spec is recorded as stable.
func startJobCluster(t *testing.T, name string) (string, flinksim.ClusterKey) {
	return startJobClusterAt(t, name, "1.17.1")
}

func startJobClusterAt(t *testing.T, name, version string) (string, flinksim.ClusterKey) {
	t.Helper()
	ns := newNamespace(t)
	if err := k8s.Create(context.Background(), jobClusterAt(ns, name, version)); err != nil {
		t.Fatal(err)
	}
	waitJobStable(t, ns, name)
	return ns, simKey(ns, name)
}

// waitJobStable waits until the cluster is Available, its job runs and its
// spec is recorded as stable.
func waitJobStable(t *testing.T, ns, name string) {
	t.Helper()
	waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	eventually(t, time.Minute, "job running and stable", func() error {
		fc := getFC(t, ns, name)
		if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v, stable spec recorded %v", fc.Status.Job, fc.Status.LastStableSpec != nil)
		}
		return nil
	})
}

// checkRestoredFromUpgrade: wantRestoredFromStop, and more: the stop was
// the old job's one savepoint and finished it, the status records that
// savepoint as the upgrade's, and the new job runs.
func checkRestoredFromUpgrade(t *testing.T, key flinksim.ClusterKey, oldJob string, fc *v1.FlinkCluster) {
	t.Helper()
	wantRestoredFromStop(t, key, oldJob, fc.Status.Job.ID)
	old, nw := simJob(t, key, oldJob), simJob(t, key, fc.Status.Job.ID)
	if savepointsTaken(old) != 1 || old.State != flink.JobFinished || nw.State != flink.JobRunning {
		t.Errorf("old job: %d savepoints in all, state %s; new job %s; want 1, FINISHED, RUNNING", savepointsTaken(old), old.State, nw.State)
	}
	if sp := fc.Status.Job.LastSavepoint; sp == nil || sp.Path != old.LatestSavepoint || sp.Reason != v1.SavepointForUpgrade {
		t.Errorf("last savepoint %+v, the simulator's %q", sp, old.LatestSavepoint)
	}
}

func simJob(t *testing.T, key flinksim.ClusterKey, id string) flinksim.JobView {
	t.Helper()
	if _, err := sim.Engine.View(key); err != nil {
		t.Fatal(err)
	}
	j, ok := findSimJob(key, id)
	if !ok {
		t.Fatalf("the simulator has no job %s in %s", id, key)
	}
	return j
}

// findSimJob is the simulator's job id, if it has one.
func findSimJob(key flinksim.ClusterKey, id string) (flinksim.JobView, bool) {
	view, err := sim.Engine.View(key)
	if err != nil {
		return flinksim.JobView{}, false
	}
	for _, j := range view.Jobs {
		if j.ID == id {
			return j, true
		}
	}
	return flinksim.JobView{}, false
}

func jobManagerImage(t *testing.T, ns, name string) string {
	t.Helper()
	d := &appsv1.StatefulSet{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func waitUpgradeResult(t *testing.T, ns, name, reason string, timeout time.Duration) *v1.FlinkCluster {
	t.Helper()
	var fc *v1.FlinkCluster
	eventually(t, timeout, "Upgrading reason "+reason, func() error {
		fc = getFC(t, ns, name)
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionUpgrading)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.ObservedGeneration != fc.Generation {
			return fmt.Errorf("Upgrading = %+v, upgrade %+v", c, fc.Status.Upgrade)
		}
		return nil
	})
	return fc
}

// savepointsTaken counts the savepoints Flink actually started for a job,
// stop-with-savepoint included; a repeated trigger ID is one savepoint.
func savepointsTaken(j flinksim.JobView) int { return j.SavepointsTriggered }

func TestUpgradeTakesSavepointAndRestores(t *testing.T) {
	eachPath(t, upgradeTakesSavepointAndRestores)
}

func upgradeTakesSavepointAndRestores(t *testing.T, path upgradePath) {
	ns, key := startJobClusterAt(t, "upgrade", path.from)
	oldJob := getFC(t, ns, "upgrade").Status.Job.ID

	patchSpec(t, ns, "upgrade", func(fc *v1.FlinkCluster) { fc.Spec.Version = path.to })
	fc := waitUpgradeResult(t, ns, "upgrade", "UpgradeSucceeded", 2*time.Minute)
	checkRestoredFromUpgrade(t, key, oldJob, fc)
	if img := jobManagerImage(t, ns, "upgrade"); img != "flink:"+path.to {
		t.Errorf("JobManager image %s", img)
	}
	if view, _ := sim.Engine.View(key); view.Version != path.to {
		t.Errorf("Flink reports version %s", view.Version)
	}
	if decoded := fc.Status.LastStableSpec; decoded == nil {
		t.Error("no last stable spec after a successful upgrade")
	}
}

func TestFailedSavepointLeavesClusterUntouched(t *testing.T) {
	eachPath(t, failedSavepointLeavesClusterUntouched)
}

func failedSavepointLeavesClusterUntouched(t *testing.T, path upgradePath) {
	ns, key := startJobClusterAt(t, "spfail", path.from)
	before := getFC(t, ns, "spfail")
	uids := map[string]bool{}
	for _, p := range tmPods(t, ns, "spfail") {
		uids[string(p.UID)] = true
	}
	sim.Engine.SetSavepointFault(key, flinksim.FaultFail)
	defer sim.Engine.ClearFaults(key)

	patchSpec(t, ns, "spfail", func(fc *v1.FlinkCluster) { fc.Spec.Version = path.to })
	fc := waitUpgradeResult(t, ns, "spfail", "SavepointFailed", time.Minute)

	if img := jobManagerImage(t, ns, "spfail"); img != "flink:"+path.from {
		t.Errorf("JobManager image changed to %s after a failed savepoint", img)
	}
	for _, p := range tmPods(t, ns, "spfail") {
		if !uids[string(p.UID)] {
			t.Errorf("TaskManager pod %s was replaced", p.Name)
		}
	}
	if fc.Status.Job.ID != before.Status.Job.ID || simJob(t, key, before.Status.Job.ID).State != flink.JobRunning {
		t.Errorf("the job did not keep running: %+v", fc.Status.Job)
	}
	if fc.Status.Upgrade != nil || fc.Status.LastFailedGeneration != fc.Generation {
		t.Errorf("upgrade %+v, lastFailedGeneration %d of %d", fc.Status.Upgrade, fc.Status.LastFailedGeneration, fc.Generation)
	}
	if !meta.IsStatusConditionTrue(fc.Status.Conditions, v1.ConditionAvailable) {
		t.Error("the running cluster is no longer Available")
	}
}

func TestJobFailingAfterUpgradeIsRolledBack(t *testing.T) {
	eachPath(t, jobFailingAfterUpgradeIsRolledBack)
}

func jobFailingAfterUpgradeIsRolledBack(t *testing.T, path upgradePath) {
	ns, key := startJobClusterAt(t, "rollback", path.from)
	patchSpec(t, ns, "rollback", func(fc *v1.FlinkCluster) { fc.Spec.Version = path.to })

	var newJob string
	eventually(t, time.Minute, "upgrade verifying", func() error {
		fc := getFC(t, ns, "rollback")
		if fc.Status.Upgrade == nil || fc.Status.Upgrade.Phase != v1.UpgradeVerifying {
			return fmt.Errorf("upgrade %+v", fc.Status.Upgrade)
		}
		newJob = fc.Status.Job.ID
		return nil
	})
	preUpgrade := getFC(t, ns, "rollback").Status.Upgrade.RestorePath
	eventually(t, 20*time.Second, "fail the new job", func() error {
		return sim.Engine.SetJobState(key, newJob, flink.JobFailed)
	})

	fc := waitCondition(t, ns, "rollback", v1.ConditionRolledBack, metav1.ConditionTrue, 2*time.Minute)
	if img := jobManagerImage(t, ns, "rollback"); img != "flink:"+path.from {
		t.Errorf("JobManager image after rollback: %s", img)
	}
	if fc.Status.Upgrade != nil || fc.Status.Job.ID == newJob {
		t.Fatalf("after rollback: upgrade %+v, job %s", fc.Status.Upgrade, fc.Status.Job.ID)
	}
	restored := simJob(t, key, fc.Status.Job.ID)
	if restored.RestoredFrom == nil || restored.RestoredFrom.ExternalPath != preUpgrade || preUpgrade == "" {
		t.Errorf("rolled-back job restored from %+v, want the pre-upgrade savepoint %q", restored.RestoredFrom, preUpgrade)
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionRollingBack); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("RollingBack = %+v after the rollback", c)
	}
	// The failed generation is not retried by itself: wake the operator
	// (a label) and wait until its lifecycle has asked Flink for the job.
	// The count is read before the label: the one reconcile it wakes may
	// ask before the test could read it after.
	seen := requests(t, key, "GET /jobs/{jobid}")
	patchSpec(t, ns, "rollback", func(fc *v1.FlinkCluster) { fc.Labels = map[string]string{"woken": "yes"} })
	waitRequestsSince(t, key, "GET /jobs/{jobid}", seen, 1)
	if fc := getFC(t, ns, "rollback"); fc.Status.Upgrade != nil {
		t.Errorf("the failed generation was retried: %+v", fc.Status.Upgrade)
	}
}

// TestOperatorKilledDuringUpgrade kills the operator with SIGKILL at each
// phase of an upgrade and restarts it; each upgrade must end with exactly one
// savepoint taken and the job restored from it.
func TestOperatorKilledDuringUpgrade(t *testing.T) {
	alone(t)
	ns, key := startJobCluster(t, "killed")
	for i, step := range []struct {
		version string
		phase   v1.UpgradePhase
	}{
		{"1.18.1", v1.UpgradeSavingState},
		{"1.18.2", v1.UpgradeDeploying},
		{"1.19.1", v1.UpgradeVerifying},
	} {
		t.Run(string(step.phase), func(t *testing.T) {
			oldJob := getFC(t, ns, "killed").Status.Job.ID
			switch step.phase {
			case v1.UpgradeSavingState:
				// Hold the savepoint in flight so the kill lands while
				// it is pending.
				sim.Engine.SetSavepointFault(key, flinksim.FaultStall)
			case v1.UpgradeVerifying:
				// Hold the new job's checkpoints so Verifying lasts
				// until the kill: in a loaded run the operator could
				// reach Verifying with the stable checkpoints already
				// complete and end it at its next reconcile, before the
				// test saw the phase (it then waited a minute for a
				// phase that had come and gone).
				sim.Engine.SetCheckpointFault(key, flinksim.FaultStall)
			}
			patchSpec(t, ns, "killed", func(fc *v1.FlinkCluster) { fc.Spec.Version = step.version })
			eventually(t, time.Minute, "phase "+string(step.phase), func() error {
				fc := getFC(t, ns, "killed")
				if fc.Status.Upgrade == nil || fc.Status.Upgrade.Phase != step.phase {
					return fmt.Errorf("upgrade %+v", fc.Status.Upgrade)
				}
				return nil
			})
			op.kill()
			sim.Engine.ClearFaults(key)
			if err := op.start(); err != nil {
				t.Fatal(err)
			}
			fc := waitUpgradeResult(t, ns, "killed", "UpgradeSucceeded", 2*time.Minute)
			old := simJob(t, key, oldJob)
			if n := savepointsTaken(old); n != 1 {
				t.Errorf("upgrade %d: %d savepoints taken of job %s, want exactly 1", i+1, n, oldJob)
			}
			nw := simJob(t, key, fc.Status.Job.ID)
			if nw.State != flink.JobRunning || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestSavepoint {
				t.Errorf("upgrade %d: job %s %s restored from %+v, want %s", i+1, nw.ID, nw.State, nw.RestoredFrom, old.LatestSavepoint)
			}
			if img := jobManagerImage(t, ns, "killed"); img != "flink:"+step.version {
				t.Errorf("image %s", img)
			}
		})
	}
}

func TestSuspendAndResume(t *testing.T) { eachPath(t, suspendAndResume) }

func suspendAndResume(t *testing.T, path upgradePath) {
	ns, key := startJobClusterAt(t, "suspend", path.from)
	running := getFC(t, ns, "suspend").Status.Job.ID
	patchSpec(t, ns, "suspend", func(fc *v1.FlinkCluster) { fc.Spec.Job.State = v1.JobStateSuspended })
	var sp *v1.SavepointInfo
	eventually(t, time.Minute, "suspended", func() error {
		fc := getFC(t, ns, "suspend")
		if fc.Status.Job.State != "SUSPENDED" || fc.Status.Job.LastSavepoint == nil {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		sp = fc.Status.Job.LastSavepoint
		return nil
	})
	if sp.Reason != v1.SavepointForSuspend || !sp.Stop {
		t.Errorf("suspend savepoint %+v", sp)
	}
	if j := simJob(t, key, running); j.State != flink.JobFinished || j.StopsTriggered != 1 {
		t.Errorf("suspended job: state %s, %d stops", j.State, j.StopsTriggered)
	}

	patchSpec(t, ns, "suspend", func(fc *v1.FlinkCluster) { fc.Spec.Job.State = v1.JobStateRunning })
	eventually(t, time.Minute, "resumed", func() error {
		fc := getFC(t, ns, "suspend")
		if fc.Status.Job.ID == running || fc.Status.Job.State != string(flink.JobRunning) {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		j := simJob(t, key, fc.Status.Job.ID)
		if j.RestoredFrom == nil || j.RestoredFrom.ExternalPath != sp.Path {
			return fmt.Errorf("resumed job restored from %+v, want %s", j.RestoredFrom, sp.Path)
		}
		return nil
	})
}

// TestUnreachableJarIsReportedWithoutWriteLoop declares a job whose jar
// cannot be fetched: the operator says so in a Warning event and retries
// with backoff, without rewriting the FlinkCluster on every attempt.
func TestUnreachableJarIsReportedWithoutWriteLoop(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobCluster(ns, "badjar")
	fc.Spec.Job.JarURI = jarServer.URL + "/artifacts/missing.jar" // answered 404
	if err := k8s.Create(context.Background(), fc); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a Warning event naming the jar", func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == "FlinkRequestFailed" && strings.Contains(e.Note, "/artifacts/missing.jar") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none about the jar", len(list.Items))
	})
	before := getFC(t, ns, "badjar")
	if before.Status.Job == nil || before.Status.Job.ID == "" {
		t.Fatalf("no job recorded: %+v", before.Status.Job)
	}
	// Wait for three more attempts, as the jar server counts them.
	seen := jarRequests.get("/artifacts/missing.jar")
	eventually(t, time.Minute, "three more attempts to fetch the jar", func() error {
		if n := jarRequests.get("/artifacts/missing.jar"); n < seen+3 {
			return fmt.Errorf("%d attempts since the first check", n-seen)
		}
		return nil
	})
	after := getFC(t, ns, "badjar")
	if after.Status.Job.ID != before.Status.Job.ID || !after.Status.Job.SubmittedAt.Equal(before.Status.Job.SubmittedAt) {
		t.Errorf("a retry recorded a new submission: %s at %v, then %s at %v", before.Status.Job.ID, before.Status.Job.SubmittedAt,
			after.Status.Job.ID, after.Status.Job.SubmittedAt)
	}
	if after.Status.Job.State == string(flink.JobRunning) {
		t.Error("a job without a jar runs")
	}
}

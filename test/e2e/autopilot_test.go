package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The autopilot scenarios run on the simulator's workload model: a chain
// of three vertices whose middle one, "Enrich", handles 100 records per
// second per subtask. Timers are scaled (a 2 s interval, a 20 s window,
// 30 s of stabilization, which covers the climb of Flink's 60 s rate
// windows after a start only in part); Flink's own metric windows are not.

const subtasksMetrics = "GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics"

func chain(rate flinksim.RateShape) flinksim.Workload {
	return flinksim.Workload{
		Vertices: []flinksim.VertexModel{
			{Name: "Source: orders", CapacityPerSubtask: 5000},
			{Name: "Enrich", CapacityPerSubtask: 100},
			{Name: "Sink: warehouse"},
		},
		Rate: rate,
	}
}

func fastAutoscaler(mode v1.AutoscalerMode) *v1.AutoscalerSpec {
	return &v1.AutoscalerSpec{Mode: mode, TargetUtilizationPercent: 70, UtilizationBoundaryPercent: 20,
		MinParallelism: 1, MaxParallelism: 16, MaxTaskManagers: 8,
		Interval: "2s", MetricWindow: "20s", Stabilization: "30s", ScaleDownDelay: "30s", CatchUpDuration: "1m", MaxRescalesPerHour: 10}
}

// startAutopilot sets the workload, then creates a cluster whose job runs
// at parallelism p on TaskManagers of two slots.
func startAutopilot(t *testing.T, name string, p int32, w flinksim.Workload, auto *v1.AutoscalerSpec) (string, flinksim.ClusterKey) {
	t.Helper()
	ns := newNamespace(t)
	key := simKey(ns, name)
	if err := sim.Engine.SetWorkload(key, w); err != nil {
		t.Fatal(err)
	}
	fc := jobClusterAt(ns, name, "1.19.3")
	fc.Spec.Job.Parallelism = p
	fc.Spec.TaskManager.Replicas = (p + 1) / 2
	// The JobManager's MetricFetcher refreshes every second instead of 10.
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"metrics.fetcher.update-interval": "1000"}
	fc.Spec.Autoscaler = auto
	startCluster(t, fc)
	return ns, key
}

// adaptiveCluster is an unstarted job cluster whose autopilot rescales in
// place (the adaptive scheduler) under a steady load that calls for it.
func adaptiveCluster(t *testing.T, name string) (*v1.FlinkCluster, flinksim.ClusterKey) {
	t.Helper()
	ns := newNamespace(t)
	key := simKey(ns, name)
	if err := sim.Engine.SetWorkload(key, chain(flinksim.RateShape{Kind: "constant", Base: 400})); err != nil {
		t.Fatal(err)
	}
	fc := jobClusterAt(ns, name, "1.19.3")
	fc.Spec.TaskManager.Replicas = 1
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"metrics.fetcher.update-interval": "1000", "jobmanager.scheduler": "adaptive"}
	fc.Spec.Autoscaler = fastAutoscaler(v1.AutoscalerApply)
	return fc, key
}

func autoscalerStatus(t *testing.T, ns, name string) (*v1.FlinkCluster, *v1.AutoscalerStatus) {
	t.Helper()
	fc := getFC(t, ns, name)
	if fc.Status.Autoscaler == nil {
		return fc, &v1.AutoscalerStatus{}
	}
	return fc, fc.Status.Autoscaler
}

func runningJob(t *testing.T, key flinksim.ClusterKey, fc *v1.FlinkCluster) flinksim.JobView {
	t.Helper()
	if fc.Status.Job == nil {
		t.Fatal("no job in status")
	}
	return simJob(t, key, fc.Status.Job.ID)
}

func backlog(t *testing.T, key flinksim.ClusterKey) float64 {
	t.Helper()
	view, err := sim.Engine.View(key)
	if err != nil || view.Workload == nil {
		t.Fatalf("workload view: %v", err)
	}
	return view.Workload.Backlog
}

// TestAutopilotRampScalesUpAndDrainsTheLag: the rate climbs from 120 to
// 500 records/s on 2 subtasks of Enrich (200 records/s). The autopilot
// scales up through savepoints and resubmissions, and the backlog drains
// within three applied decisions.
func TestAutopilotRampScalesUpAndDrainsTheLag(t *testing.T) {
	parallel(t)
	w := chain(flinksim.RateShape{Kind: "ramp", Base: 120, Peak: 500, After: flinksim.Duration{Duration: 20 * time.Second}, Ramp: flinksim.Duration{Duration: 20 * time.Second}})
	ns, key := startAutopilot(t, "ramp", 2, w, fastAutoscaler(v1.AutoscalerApply))

	var st *v1.AutoscalerStatus
	var fc *v1.FlinkCluster
	eventually(t, 5*time.Minute, "a scale-up that brings the backlog down", func() error {
		fc, st = autoscalerStatus(t, ns, "ramp")
		if st.Pending != nil || fc.Status.Upgrade != nil {
			return fmt.Errorf("rescale in flight: %+v", st.Pending)
		}
		if st.Parallelism <= 2 {
			return fmt.Errorf("parallelism %d, decisions %+v, Autoscaling %+v", st.Parallelism, st.Decisions, meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAutoscaling))
		}
		job := runningJob(t, key, fc)
		if job.State != flink.JobRunning || job.Parallelism != int(st.Parallelism) {
			return fmt.Errorf("job %s at %d, want RUNNING at %d", job.State, job.Parallelism, st.Parallelism)
		}
		if b := backlog(t, key); b > 100 {
			return fmt.Errorf("backlog %.0f records at parallelism %d", b, st.Parallelism)
		}
		return nil
	})
	applied := 0
	for _, d := range st.Decisions {
		t.Logf("decision %s %s %d→%d: %s", d.Reason, d.Result, d.From, d.To, d.Message)
		if d.Reason == "ScaleUp" && (d.Result == "Succeeded" || d.Result == "Applied") {
			applied++
			if d.Inputs.Bottleneck != "Enrich" || d.Inputs.Samples < 3 || d.Message == "" {
				t.Errorf("decision without its inputs: %+v", d)
			}
		}
	}
	if applied == 0 || applied > 3 {
		t.Errorf("%d applied scale-ups, want 1 to 3: %+v", applied, st.Decisions)
	}
	// 500 records/s on subtasks of 100 at 70%: at least 8 (TaskManagers
	// of two slots: at least 4).
	if st.Parallelism < 8 || fc.Spec.TaskManager.Replicas != 1 {
		t.Errorf("parallelism %d (spec TaskManagers %d, the floor, untouched by the autopilot)", st.Parallelism, fc.Spec.TaskManager.Replicas)
	}
	if got := fc.Status.TaskManager.Replicas; got < (st.Parallelism+1)/2 {
		t.Errorf("%d TaskManagers for parallelism %d", got, st.Parallelism)
	}
	// Every rescale went through a savepoint the job was restored from.
	job := runningJob(t, key, fc)
	if job.RestoredFrom == nil || !job.RestoredFromSavepoint {
		t.Errorf("the rescaled job restored from %+v, want a savepoint", job.RestoredFrom)
	}
	eventually(t, 30*time.Second, "a ScaleUp event", func() error { return hasEvent(t, ns, "ScaleUp") })
}

// TestAutopilotScalesDownOnlyAfterTheDelay: 500 records/s on 8 subtasks of
// each vertex (62%), then 80: the scale-down waits out its 30 s delay.
func TestAutopilotScalesDownOnlyAfterTheDelay(t *testing.T) {
	parallel(t)
	w := chain(flinksim.RateShape{Kind: "drop", Base: 500, Peak: 80, After: flinksim.Duration{Duration: 50 * time.Second}, Ramp: flinksim.Duration{Duration: time.Second}})
	// Every vertex at 62% before the drop: none is sized down on its own
	// before it.
	w.Vertices[0].CapacityPerSubtask, w.Vertices[2].CapacityPerSubtask = 100, 100
	ns, key := startAutopilot(t, "drop", 8, w, fastAutoscaler(v1.AutoscalerApply))
	first := getFC(t, ns, "drop").Status.Job.ID

	var since metav1.Time
	eventually(t, 4*time.Minute, "a pending scale-down", func() error {
		_, st := autoscalerStatus(t, ns, "drop")
		if st.PendingScaleDown == nil {
			return fmt.Errorf("none; decisions %+v", st.Decisions)
		}
		since = st.PendingScaleDown.Since
		return nil
	})
	var d v1.AutoscalerDecision
	eventually(t, 3*time.Minute, "the scale-down applied", func() error {
		_, st := autoscalerStatus(t, ns, "drop")
		for _, x := range st.Decisions {
			if x.Reason == "ScaleDown" && x.Result != "Recommended" {
				d = x
				return nil
			}
		}
		return fmt.Errorf("decisions %+v", st.Decisions)
	})
	if wait := d.Time.Sub(since.Time); wait < 30*time.Second-time.Second {
		t.Errorf("scale-down applied %s after it was first recommended, before its 30s delay", wait)
	}
	if d.From != 8 || d.To >= 8 || d.To < 2 {
		t.Errorf("decision %+v", d)
	}
	// Until then the first job ran on: its savepoint came only with the rescale.
	fc, _ := autoscalerStatus(t, ns, "drop")
	if fc.Status.Job.ID == first && d.Result == "Succeeded" {
		t.Errorf("job %s still runs after the rescale succeeded", first)
	}
	eventually(t, 30*time.Second, "a ScaleDownPending event", func() error { return hasEvent(t, ns, "ScaleDownPending") })
	_ = key
}

// TestAutopilotOscillationInsideTheBandChangesNothing: 480 to 640 records/s
// on 8 subtasks of every vertex (60–80%, the band is 50–90%): each vertex
// handles 100 records/s per subtask, so none is outside the band (an idle
// source or sink would be sized down on its own).
func TestAutopilotOscillationInsideTheBandChangesNothing(t *testing.T) {
	parallel(t)
	w := chain(flinksim.RateShape{Kind: "oscillate", Base: 480, Peak: 640, Period: flinksim.Duration{Duration: 20 * time.Second}})
	w.Vertices[0].CapacityPerSubtask, w.Vertices[2].CapacityPerSubtask = 100, 100
	ns, key := startAutopilot(t, "oscillate", 8, w, fastAutoscaler(v1.AutoscalerApply))
	first := getFC(t, ns, "oscillate").Status.Job.ID
	// The window fills, then the autopilot samples and decides on: 30
	// more samples (a minute) of the source and Enrich.
	eventually(t, 3*time.Minute, "a full window", func() error {
		fc := getFC(t, ns, "oscillate")
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAutoscaling)
		if c == nil || c.Reason != "Stable" {
			return fmt.Errorf("Autoscaling %+v", c)
		}
		return nil
	})
	waitRequests(t, key, subtasksMetrics, 60)
	fc, st := autoscalerStatus(t, ns, "oscillate")
	if len(st.Decisions) != 0 || st.PendingScaleDown != nil || st.Pending != nil {
		t.Errorf("decisions %+v, pending down %+v", st.Decisions, st.PendingScaleDown)
	}
	if fc.Status.Job.ID != first || runningJob(t, key, fc).SavepointsTriggered != 0 {
		t.Errorf("the job was restarted or savepointed: %s (first %s)", fc.Status.Job.ID, first)
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAutoscaling); c == nil || c.Reason != "Stable" {
		t.Errorf("Autoscaling %+v", c)
	}
}

// TestAutopilotRecommendModeChangesOnlyStatus: the same ramp in recommend
// mode: a decision in status and an event, and nothing else.
func TestAutopilotRecommendModeChangesOnlyStatus(t *testing.T) {
	parallel(t)
	w := chain(flinksim.RateShape{Kind: "constant", Base: 400})
	ns, key := startAutopilot(t, "recommend", 2, w, fastAutoscaler(v1.AutoscalerRecommend))
	first := getFC(t, ns, "recommend")
	var d v1.AutoscalerDecision
	eventually(t, 3*time.Minute, "a recommendation", func() error {
		_, st := autoscalerStatus(t, ns, "recommend")
		if len(st.Decisions) == 0 {
			return fmt.Errorf("no decision")
		}
		d = st.Decisions[0]
		return nil
	})
	if d.Result != "Recommended" || d.Reason != "ScaleUp" || d.To <= 2 {
		t.Fatalf("decision %+v", d)
	}
	// Observe a few more evaluations, then check nothing moved.
	waitRequests(t, key, subtasksMetrics, 10)
	fc, st := autoscalerStatus(t, ns, "recommend")
	job := runningJob(t, key, fc)
	if fc.Status.Job.ID != first.Status.Job.ID || job.Parallelism != 2 || job.SavepointsTriggered != 0 || st.Parallelism != 0 || fc.Status.Upgrade != nil {
		t.Errorf("recommend mode changed the job: %s at %d, %d savepoints, autoscaler parallelism %d", fc.Status.Job.ID, job.Parallelism, job.SavepointsTriggered, st.Parallelism)
	}
	if fc.Status.TaskManager.Replicas != 1 {
		t.Errorf("TaskManagers %d", fc.Status.TaskManager.Replicas)
	}
	eventually(t, 30*time.Second, "a Recommended event", func() error { return hasEvent(t, ns, "Recommended") })
}

// TestAutopilotRescaleWhoseJobFailsIsRolledBack: the rescaled job fails
// during the gate; the rollback restores the pre-rescale savepoint at the
// old parallelism, and the autopilot reverts, blocks and says so.
func TestAutopilotRescaleWhoseJobFailsIsRolledBack(t *testing.T) {
	parallel(t)
	w := chain(flinksim.RateShape{Kind: "constant", Base: 400})
	ns, key := startAutopilot(t, "rescalefail", 2, w, fastAutoscaler(v1.AutoscalerApply))
	var newJob string
	eventually(t, 3*time.Minute, "the rescale verifying", func() error {
		fc := getFC(t, ns, "rescalefail")
		if fc.Status.Upgrade == nil || fc.Status.Upgrade.Kind != "Rescale" || fc.Status.Upgrade.Phase != v1.UpgradeVerifying || fc.Status.Job.SubmittedAt == nil {
			return fmt.Errorf("upgrade %+v", fc.Status.Upgrade)
		}
		newJob = fc.Status.Job.ID
		return nil
	})
	preRescale := getFC(t, ns, "rescalefail").Status.Upgrade.RestorePath
	eventually(t, 20*time.Second, "fail the rescaled job", func() error {
		return sim.Engine.SetJobState(key, newJob, flink.JobFailed)
	})
	fc := waitCondition(t, ns, "rescalefail", v1.ConditionRolledBack, metav1.ConditionTrue, 2*time.Minute)
	var st *v1.AutoscalerStatus
	eventually(t, time.Minute, "the autopilot reverted", func() error {
		fc, st = autoscalerStatus(t, ns, "rescalefail")
		if st.Blocked == nil || st.Pending != nil || len(st.Decisions) == 0 || st.Decisions[0].Result != "Failed" {
			return fmt.Errorf("autoscaler %+v", st)
		}
		return nil
	})
	if st.Parallelism != 2 {
		t.Errorf("autoscaler parallelism %d after the failed rescale, want 2", st.Parallelism)
	}
	job := runningJob(t, key, fc)
	if job.Parallelism != 2 || job.RestoredFrom == nil || job.RestoredFrom.ExternalPath != preRescale || preRescale == "" {
		t.Errorf("rolled-back job at %d restored from %+v, want 2 from %q", job.Parallelism, job.RestoredFrom, preRescale)
	}
	// The generation is not marked failed: it was the autopilot's change.
	if fc.Status.LastFailedGeneration == fc.Generation {
		t.Errorf("generation %d marked failed by the autopilot's rescale", fc.Generation)
	}
	eventually(t, 30*time.Second, "a RescaleFailed Warning", func() error { return hasWarning(t, ns, "RescaleFailed") })
	// Not repeated: more evaluations, the same job.
	waitRequests(t, key, subtasksMetrics, 10)
	if got := getFC(t, ns, "rescalefail"); got.Status.Job.ID != fc.Status.Job.ID || got.Status.Upgrade != nil {
		t.Errorf("the failed rescale was repeated: job %s, upgrade %+v", got.Status.Job.ID, got.Status.Upgrade)
	}
}

// TestJobPastItsRestartStrategyIsRestoredFromItsLatestCheckpoint: with no
// restarts, Flink marks a failed job FAILED; the operator restores it from
// its latest completed checkpoint after the backoff, twice, then leaves
// it failed and the cluster Degraded.
func TestJobPastItsRestartStrategyIsRestoredFromItsLatestCheckpoint(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	fc := jobClusterAt(ns, "heal", "1.20.1")
	fc.Spec.FlinkConfiguration = v1.FlinkConfiguration{"restart-strategy.type": "none"}
	fc.Spec.Healing = &v1.HealingSpec{RestoreAttempts: 2, Backoff: "2s"}
	key := startCluster(t, fc)
	failed := func() (string, int64) {
		var id string
		var checkpoint int64
		eventually(t, time.Minute, "a running job with a checkpoint", func() error {
			got := getFC(t, ns, "heal")
			j := got.Status.Job
			if j.State != string(flink.JobRunning) || j.LastCheckpoint == nil || j.LastCheckpoint.JobID != j.ID {
				return fmt.Errorf("job %+v", j)
			}
			id, checkpoint = j.ID, j.LastCheckpoint.ID
			return sim.Engine.FailJob(key, id, "java.lang.IllegalStateException: poison record")
		})
		return id, checkpoint
	}
	for attempt := 1; attempt <= 2; attempt++ {
		id, checkpoint := failed()
		var restored flinksim.JobView
		eventually(t, time.Minute, fmt.Sprintf("restore %d", attempt), func() error {
			got := getFC(t, ns, "heal")
			if got.Status.Job.ID == id || got.Status.Healing == nil || got.Status.Healing.Restores != int32(attempt) {
				return fmt.Errorf("job %s, healing %+v", got.Status.Job.ID, got.Status.Healing)
			}
			view, err := sim.Engine.View(key)
			if err != nil {
				return err
			}
			for _, j := range view.Jobs {
				if j.ID == got.Status.Job.ID && j.State == flink.JobRunning {
					restored = j
					return nil
				}
			}
			return fmt.Errorf("the restored job %s does not run in Flink yet", got.Status.Job.ID)
		})
		// Flink's latest checkpoint when it failed, or a later one of
		// the same job (it checkpoints until it is FAILED).
		if restored.RestoredFrom == nil || restored.RestoredFromSavepoint || restored.RestoredFrom.ID < checkpoint {
			t.Errorf("restore %d from %+v, want the failed job's latest checkpoint (%d or later)", attempt, restored.RestoredFrom, checkpoint)
		}
	}
	failed()
	eventually(t, time.Minute, "Degraded: HealingExhausted", func() error {
		got := getFC(t, ns, "heal")
		c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "HealingExhausted" || got.Status.Healing.Restores != 2 {
			return fmt.Errorf("Degraded %+v, healing %+v", c, got.Status.Healing)
		}
		return nil
	})
	eventually(t, 30*time.Second, "a JobRestored Warning", func() error { return hasWarning(t, ns, "JobRestored") })
	eventually(t, 30*time.Second, "a HealingExhausted Warning", func() error { return hasWarning(t, ns, "HealingExhausted") })
}

func hasEvent(t *testing.T, ns, reason string) error {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("no %s event among %d", reason, len(list.Items))
}

// TestAutopilotRescalesInPlaceWithTheAdaptiveScheduler: on 1.19 with
// jobmanager.scheduler adaptive, the scale-up sets the job's resource
// requirements: the same job restarts from its checkpoint at the new
// parallelism, without a savepoint or a resubmission.
func TestAutopilotRescalesInPlaceWithTheAdaptiveScheduler(t *testing.T) {
	parallel(t)
	fc, key := adaptiveCluster(t, "inplace")
	ns := fc.Namespace
	startCluster(t, fc)
	first := getFC(t, ns, "inplace").Status.Job.ID
	var st *v1.AutoscalerStatus
	eventually(t, 4*time.Minute, "an in-place rescale that succeeded", func() error {
		var got *v1.FlinkCluster
		got, st = autoscalerStatus(t, ns, "inplace")
		if len(st.Decisions) == 0 || st.Decisions[len(st.Decisions)-1].Result != "Succeeded" {
			return fmt.Errorf("decisions %+v, upgrade %+v, Autoscaling %+v", st.Decisions, got.Status.Upgrade, meta.FindStatusCondition(got.Status.Conditions, v1.ConditionAutoscaling))
		}
		return nil
	})
	fc = getFC(t, ns, "inplace")
	job := runningJob(t, key, fc)
	if fc.Status.Job.ID != first || job.Rescales == 0 || job.SavepointsTriggered != 0 || job.Parallelism != int(st.Decisions[len(st.Decisions)-1].To) {
		t.Errorf("job %s (first %s): %d rescales, %d savepoints, parallelism %d, decisions %+v", fc.Status.Job.ID, first, job.Rescales, job.SavepointsTriggered, job.Parallelism, st.Decisions)
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionUpgrading); c == nil || c.Reason != "UpgradeSucceeded" {
		t.Errorf("Upgrading %+v: the in-place rescale passes the same gate", c)
	}
}

// TestInPlaceRescaleWhoseJobFailsRollsBackToItsNewestCheckpoint: an
// in-place rescale keeps its job, which checkpoints on through the gate
// while Flink retains only its newest checkpoint. The job fails; the
// rollback restores the newest checkpoint it left at the old parallelism,
// not the one recorded at the rescale's start, which Flink deleted.
func TestInPlaceRescaleWhoseJobFailsRollsBackToItsNewestCheckpoint(t *testing.T) {
	parallel(t)
	fc, key := adaptiveCluster(t, "inplacefail")
	ns := fc.Namespace
	fc.Spec.Checkpointing.Retention = 1
	startCluster(t, fc)
	patchSpec(t, ns, "inplacefail", func(fc *v1.FlinkCluster) {
		// The gate never passes by itself: the job fails first.
		fc.Spec.UpgradePolicy.StableCheckpoints = 100
		fc.Spec.UpgradePolicy.StabilityTimeout = "5m"
	})
	var job, atStart string
	eventually(t, 4*time.Minute, "the in-place rescale verifying", func() error {
		got := getFC(t, ns, "inplacefail")
		if up := got.Status.Upgrade; up == nil || up.Kind != "RescaleInPlace" || up.Phase != v1.UpgradeVerifying {
			return fmt.Errorf("upgrade %+v", up)
		}
		job, atStart = got.Status.Job.ID, got.Status.Upgrade.RestorePath
		return nil
	})
	eventually(t, time.Minute, "checkpoints past the one recorded at the start", func() error {
		j := simJob(t, key, job)
		if j.State != flink.JobRunning || j.LatestCheckpoint == "" || j.LatestCheckpoint == atStart {
			return fmt.Errorf("job %s, latest checkpoint %q (recorded at the start %q)", j.State, j.LatestCheckpoint, atStart)
		}
		return nil
	})
	eventually(t, 20*time.Second, "fail the rescaled job", func() error {
		return sim.Engine.SetJobState(key, job, flink.JobFailed)
	})
	got := waitCondition(t, ns, "inplacefail", v1.ConditionRolledBack, metav1.ConditionTrue, 2*time.Minute)
	nw := runningJob(t, key, got)
	old := simJob(t, key, job)
	if nw.ID == job || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestCheckpoint || old.LatestCheckpoint == atStart {
		t.Errorf("rolled-back job %s restored from %+v; want the failed job's newest checkpoint %q, not %q from the rescale's start", nw.ID, nw.RestoredFrom, old.LatestCheckpoint, atStart)
	}
}

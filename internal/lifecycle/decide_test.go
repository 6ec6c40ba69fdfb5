package lifecycle

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/policy"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func baseSpec() *v1.FlinkClusterSpec {
	return &v1.FlinkClusterSpec{
		Version:     "1.17.1",
		JobManager:  v1.JobManagerSpec{Replicas: 1},
		TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		Job: &v1.JobSpec{JarURI: "http://artifacts/job.jar", Parallelism: 2, State: v1.JobStateRunning,
			UpgradeMode: v1.UpgradeSavepoint, SavepointRetention: 2},
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		change                Change
		mode                  v1.UpgradeMode
		version               string
		savepoint, checkpoint bool
	}{
		{ChangeUpgrade, v1.UpgradeLastState, "1.19.1", true, false},
		{ChangeUpgrade, v1.UpgradeSavepoint, "1.19.1", true, false},
		{ChangeUpgrade, v1.UpgradeStateless, "1.19.1", false, false},
		{ChangeConfigRoll, v1.UpgradeLastState, "1.19.1", false, true},
		{ChangeConfigRoll, v1.UpgradeLastState, "1.17.1", false, true}, // the REST checkpoint trigger came in 1.17
		{ChangeConfigRoll, v1.UpgradeLastState, "not-a-version", true, false},
		{ChangeConfigRoll, v1.UpgradeSavepoint, "1.19.1", true, false},
		{ChangeScale, v1.UpgradeSavepoint, "1.19.1", false, false},
	} {
		sp, cp := needsState(tc.change, tc.mode, tc.version)
		if sp != tc.savepoint || cp != tc.checkpoint {
			t.Errorf("needsState(%s, %s) = %v, %v; want %v, %v", tc.change, tc.mode, sp, cp, tc.savepoint, tc.checkpoint)
		}
	}
}

// world is a cluster at one moment: the inputs of the next decision.
type world struct {
	gen      int64
	spec     *v1.FlinkClusterSpec
	status   v1.FlinkClusterStatus
	deployed *v1.FlinkClusterSpec
	stable   *v1.FlinkClusterSpec
	flink    Flink
	rolled   bool
	drift    bool
	now      time.Time
	rescale  *Rescale
	heal     string
	// retention is Input.Retention; empty stands for RETAIN_ON_CANCELLATION,
	// which the operator renders for every job, and "-" for unset.
	retention string
	// jmSince is Input.JobManagerSince; zero stands for an hour before t0.
	jmSince time.Time
	// jmUnread: no ready JobManager pod was read (JobManagerSince zero).
	jmUnread bool
	// ended is Input.EndedUnseen.
	ended bool
	// inPlace is Input.InPlace: the job's scheduler rescales in place.
	inPlace bool
}

func (w *world) decide() Step {
	retention := w.retention
	switch retention {
	case "":
		retention = "RETAIN_ON_CANCELLATION"
	case "-":
		retention = ""
	}
	before := w.status.DeepCopy().Conditions
	jmSince := cmp.Or(w.jmSince, t0.Add(-time.Hour))
	if w.jmUnread {
		jmSince = time.Time{}
	}
	p := Decide(Input{Generation: w.gen, UID: "uid", Spec: w.spec, Status: &w.status, Deployed: w.deployed,
		LastStable: w.stable, RolledOut: w.rolled, Drift: w.drift, Flink: w.flink, Now: w.now, Autopilot: w.rescale, Heal: w.heal, Policy: policy.For(w.spec),
		Retention: retention, JobManagerSince: jmSince, EndedUnseen: w.ended, InPlace: w.inPlace})
	if !equality.Semantic.DeepEqual(p.Status.Conditions, before) {
		// The controller's conditions.go alone writes conditions; a step
		// says what it concluded in its Facts.
		panic("a lifecycle step wrote status conditions")
	}
	return p
}

// A verdict concluded more than once in a step remembers that its status
// changed on the way, which is a transition even where it ends where it
// began.
func TestConclude(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		seq     []metav1.ConditionStatus
		flipped bool
	}{
		{[]metav1.ConditionStatus{T}, false},
		{[]metav1.ConditionStatus{T, T}, false},
		{[]metav1.ConditionStatus{T, F}, true},
		{[]metav1.ConditionStatus{F, T, F}, true},
		{[]metav1.ConditionStatus{T, F, F}, true},
	} {
		var f *Fact
		for i, st := range tc.seq {
			conclude(&f, st, "R", fmt.Sprint(i))
		}
		if f.Status != tc.seq[len(tc.seq)-1] || f.Message != fmt.Sprint(len(tc.seq)-1) || f.Flipped != tc.flipped {
			t.Errorf("%v: %+v, want the last verdict, flipped %v", tc.seq, f, tc.flipped)
		}
	}
}

// commit stores a plan as the controller does: status with the step's
// conditions, deployed spec and, when marked, the stable spec.
func (w *world) commit(p Step) {
	w.status = *p.Status.DeepCopy()
	for _, t := range []string{v1.ConditionUpgrading, v1.ConditionRollingBack, v1.ConditionRolledBack, v1.ConditionStateHold} {
		if c := cond(p, t); c != nil {
			meta.SetStatusCondition(&w.status.Conditions, *c)
		} else {
			meta.RemoveStatusCondition(&w.status.Conditions, t)
		}
	}
	w.deployed = p.Deploy
	if p.MarkStable {
		w.stable = p.Deploy
	}
}

// submission decides and commits, every apart, until a step submits the
// job, and returns that step; the test fails if none does within n steps.
func (w *world) submission(t *testing.T, n int, every time.Duration) Step {
	t.Helper()
	var p Step
	for range n {
		w.now = w.now.Add(every)
		if p = w.decide(); p.Action.Kind == ActSubmit {
			return p
		}
		w.commit(p)
	}
	t.Fatalf("no submission: upgrade %+v, hold %+v", p.Status.Upgrade, p.Facts.StateHold)
	return p
}

func running(id string, checkpoints int64) Flink {
	return Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, CheckpointsCompleted: checkpoints,
		Vertices: []flink.JobDetailsVertex{{ID: "v", Parallelism: 2, Status: "RUNNING", Tasks: map[string]int32{"RUNNING": 2}}}}
}

// stableWorld is a converged cluster whose job ran long enough to be stable.
func stableWorld() *world {
	spec := baseSpec()
	return &world{
		gen: 1, spec: spec, deployed: spec.DeepCopy(), stable: spec.DeepCopy(), rolled: true, now: t0,
		status: v1.FlinkClusterStatus{Job: &v1.JobStatus{ID: "job-1", State: "RUNNING", CheckpointsCompleted: 10}},
		flink:  running("job-1", 10),
	}
}

// cond is condition t as the step leaves it: its verdict, else what the
// status recorded (StateHold is this step's alone).
func cond(p Step, t string) *metav1.Condition {
	fact := map[string]*Fact{v1.ConditionUpgrading: p.Facts.Upgrading, v1.ConditionRollingBack: p.Facts.RollingBack, v1.ConditionRolledBack: p.Facts.RolledBack}[t]
	if h := p.Facts.StateHold; t == v1.ConditionStateHold && h != nil {
		fact = &Fact{Status: metav1.ConditionTrue, Reason: h.Reason, Message: h.Message}
	}
	if fact != nil {
		return &metav1.Condition{Type: t, Status: fact.Status, Reason: fact.Reason, Message: fact.Message}
	}
	if t == v1.ConditionStateHold {
		return nil
	}
	return meta.FindStatusCondition(p.Status.Conditions, t)
}

func TestFirstRunSubmitsWithRecordedID(t *testing.T) {
	spec := baseSpec()
	spec.Job.InitialSavepointPath = "s3://sp/initial"
	w := &world{gen: 1, spec: spec, now: t0, status: v1.FlinkClusterStatus{}}
	p := w.decide()
	if p.Deploy != spec || p.Action.Kind != ActNone {
		t.Fatalf("first reconcile: deploy %v, action %s; want the spec and no action", p.Deploy, p.Action.Kind)
	}
	w.commit(p)
	w.rolled, w.flink = true, Flink{Reachable: true}
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Status.Job.ID == "" || p.Action.RestorePath != "s3://sp/initial" {
		t.Fatalf("rolled out: action %s, job id %q, restore %q", p.Action.Kind, p.Status.Job.ID, p.Action.RestorePath)
	}
	w.commit(p)
	w.flink = running(p.Status.Job.ID, 1)
	if p = w.decide(); p.MarkStable {
		t.Error("stable after 1 checkpoint, want 2")
	}
	w.flink = running(p.Status.Job.ID, 2)
	if p = w.decide(); !p.MarkStable || p.Action.Kind != ActNone {
		t.Errorf("after 2 checkpoints: stable %v action %s", p.MarkStable, p.Action.Kind)
	}
}

// TestFirstDeployOnReadyPods: pods ready before any status was written
// (the controller does not write a status that would only say Creating)
// run the first deploy's job in the same step: the step records the spec
// and the job's ID, then submits, as steady would one step later. Pods
// not ready, Flink not answering or a suspended job submit nothing.
func TestFirstDeployOnReadyPods(t *testing.T) {
	suspended := baseSpec()
	suspended.Job.State = v1.JobStateSuspended
	withInitial := baseSpec()
	withInitial.Job.InitialSavepointPath = "s3://sp/initial"
	for _, tc := range []struct {
		name    string
		spec    *v1.FlinkClusterSpec
		rolled  bool
		flink   Flink
		submit  bool
		restore string
		state   string
	}{
		{"ready, Flink answers", baseSpec(), true, Flink{Reachable: true}, true, "", ""},
		{"ready, from the initial savepoint", withInitial, true, Flink{Reachable: true}, true, "s3://sp/initial", ""},
		{"pods not ready", baseSpec(), false, Flink{}, false, "", ""},
		{"ready, Flink does not answer", baseSpec(), true, Flink{}, false, "", ""},
		{"ready, job suspended", suspended, true, Flink{Reachable: true}, false, "", "SUSPENDED"},
	} {
		w := &world{gen: 1, spec: tc.spec, rolled: tc.rolled, flink: tc.flink, now: t0}
		p := w.decide()
		if p.Deploy != tc.spec {
			t.Errorf("%s: deploy %v, want the spec", tc.name, p.Deploy)
		}
		if got := p.Action.Kind == ActSubmit; got != tc.submit {
			t.Errorf("%s: action %s, want a submission %v", tc.name, p.Action.Kind, tc.submit)
			continue
		}
		switch job := p.Status.Job; {
		case tc.submit && (job.ID == "" || job.SubmittedAt == nil || p.Action.RestorePath != tc.restore || job.RestoredFrom != tc.restore):
			t.Errorf("%s: job %+v, restore %q; want an ID and submission time recorded, restoring %q", tc.name, job, p.Action.RestorePath, tc.restore)
		case !tc.submit && (job.ID != "" || job.State != tc.state):
			t.Errorf("%s: job %+v, want no ID and state %q", tc.name, job, tc.state)
		}
	}
	// A status that records a job without a deployed spec is deployed
	// first; steady decides about its job a step later.
	w := &world{gen: 1, spec: baseSpec(), rolled: true, flink: Flink{Reachable: true}, now: t0,
		status: v1.FlinkClusterStatus{Job: &v1.JobStatus{ID: "job-1", State: "RUNNING"}}}
	if p := w.decide(); p.Action.Kind != ActNone || p.Status.Job.ID != "job-1" {
		t.Errorf("a recorded job without a deployed spec: action %s, job %+v", p.Action.Kind, p.Status.Job)
	}
	// A session cluster's first deploy has no job to run.
	session := baseSpec()
	session.Job = nil
	w = &world{gen: 1, spec: session, rolled: true, flink: Flink{Reachable: true}, now: t0}
	if p := w.decide(); p.Deploy != session || p.Action.Kind != ActNone {
		t.Errorf("session cluster: deploy %v, action %s", p.Deploy, p.Action.Kind)
	}
}

// TestUpgradeWithSavepointAndRestore walks a version upgrade through every
// phase and checks that exactly one trigger ID is used, even when the
// operator restarts and Flink has not seen the trigger.
func TestUpgradeWithSavepointAndRestore(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"

	p := w.decide()
	up := p.Status.Upgrade
	if up == nil || up.Phase != v1.UpgradeSavingState || p.Action.Kind != ActTrigger {
		t.Fatalf("upgrade start: %+v action %s", up, p.Action.Kind)
	}
	sp := p.Status.Job.PendingSavepoint
	if sp == nil || !sp.Stop || sp.Reason != v1.SavepointForUpgrade || sp.TriggerID == "" {
		t.Fatalf("pending savepoint = %+v, want a stop-with-savepoint for the upgrade", sp)
	}
	if p.Deploy.Version != "1.17.1" {
		t.Fatalf("deployed %s before the savepoint completed", p.Deploy.Version)
	}
	w.commit(p)

	// A restart: Flink never saw the trigger. The same ID is sent again.
	w.now = w.now.Add(time.Second)
	w.flink.Pending = &Operation{Unknown: true}
	p = w.decide()
	if p.Action.Kind != ActNone || p.Status.Job.PendingSavepoint.ForgottenAt == nil {
		t.Fatalf("first 404: action %s, want a wait for Flink's REST caches", p.Action.Kind)
	}
	w.commit(p)
	w.now = w.now.Add(5 * time.Second)
	p = w.decide()
	if p.Action.Kind != ActTrigger || p.Status.Job.PendingSavepoint.TriggerID != sp.TriggerID {
		t.Fatalf("resume: action %s trigger %s, want the recorded %s", p.Action.Kind, p.Status.Job.PendingSavepoint.TriggerID, sp.TriggerID)
	}
	w.commit(p)

	w.flink.Pending = &Operation{}
	if p = w.decide(); p.Action.Kind != ActNone || p.Deploy.Version != "1.17.1" {
		t.Fatalf("in flight: action %s deploy %s", p.Action.Kind, p.Deploy.Version)
	}
	w.commit(p)

	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "file:///sp/savepoint-1"}}
	p = w.decide()
	if p.Status.Upgrade.Phase != v1.UpgradeDeploying || p.Deploy.Version != "1.18.1" || p.Status.Upgrade.RestorePath != "file:///sp/savepoint-1" {
		t.Fatalf("after savepoint: %+v deploy %s", p.Status.Upgrade, p.Deploy.Version)
	}
	if p.Status.Job.LastSavepoint == nil || p.Status.Job.LastSavepoint.Path != "file:///sp/savepoint-1" || len(p.Status.Job.SavepointHistory) != 1 {
		t.Fatalf("savepoint not recorded: %+v", p.Status.Job)
	}
	w.commit(p)

	// Pods rolling: wait.
	w.rolled = false
	w.flink = Flink{Reachable: false}
	if p = w.decide(); p.Action.Kind != ActNone || p.Status.Upgrade.Phase != v1.UpgradeDeploying {
		t.Fatalf("rolling: action %s phase %s", p.Action.Kind, p.Status.Upgrade.Phase)
	}
	w.commit(p)

	w.rolled, w.flink = true, Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished}
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "file:///sp/savepoint-1" || p.Status.Upgrade.Phase != v1.UpgradeVerifying {
		t.Fatalf("restore: action %s from %q phase %s", p.Action.Kind, p.Action.RestorePath, p.Status.Upgrade.Phase)
	}
	newJob := p.Status.Job.ID
	if newJob == "job-1" {
		t.Fatal("restore reused the old job ID")
	}
	w.commit(p)

	w.flink = running(newJob, 1)
	if p = w.decide(); p.Status.Upgrade == nil || p.MarkStable {
		t.Fatal("stable after one checkpoint")
	}
	w.commit(p)
	w.flink = running(newJob, 2)
	p = w.decide()
	if p.Status.Upgrade != nil || !p.MarkStable {
		t.Fatalf("gate: upgrade %+v stable %v", p.Status.Upgrade, p.MarkStable)
	}
	if c := cond(p, v1.ConditionUpgrading); c == nil || c.Reason != "UpgradeSucceeded" {
		t.Errorf("Upgrading = %+v", c)
	}
}

// The upgrade that could not save the job's state ends with the job as
// Flink reports it: no phase polls the job after it, so a state recorded
// while the job recovered (INITIALIZING) would otherwise stay. A job still
// starting is looked at again.
func TestFailedSavepointRecordsTheJobAsFlinkHasIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flink   flink.JobStatus
		requeue bool
		// A starting job shows no checkpoints of its own (rule.go
		// beforeStop): the recorded count stays.
		count int64
	}{
		{"running", flink.JobRunning, false, 12},
		{"still starting", flink.JobInitializing, true, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := stableWorld()
			w.status.Job.State = string(flink.JobInitializing)
			w.gen, w.spec = 2, baseSpec()
			w.spec.Version = "1.18.1"
			w.commit(w.decide())

			w.now = w.now.Add(2 * time.Second)
			w.flink = running("job-1", 12)
			w.flink.JobState = tc.flink
			w.flink.Pending = &Operation{Done: true, Failure: "Injected failure"}
			p := w.decide()
			if p.Status.Upgrade != nil || p.Status.Job.State != string(tc.flink) || p.Status.Job.CheckpointsCompleted != tc.count {
				t.Errorf("after the failed savepoint: upgrade %+v, job %s with %d checkpoints; want none, %s with %d",
					p.Status.Upgrade, p.Status.Job.State, p.Status.Job.CheckpointsCompleted, tc.flink, tc.count)
			}
			if got := p.RequeueAfter > 0; got != tc.requeue {
				t.Errorf("looks again in %v, want a look again: %v", p.RequeueAfter, tc.requeue)
			}
		})
	}
}

// A checkpoint history that did not answer leaves the recorded count and
// checkpoint as they were: a count of none would later read as a job that
// never checkpointed, and a job Flink then lost would restart from its
// initial savepoint instead of being held (NewestStateUnknown).
func TestUnreadHistoryKeepsTheRecordedCheckpoints(t *testing.T) {
	w := stableWorld()
	w.status.Job.LastCheckpoint = &v1.CheckpointInfo{ID: 9, Path: "s3://cp/chk-9", JobID: "job-1"}
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, HistoryUnread: true}
	p := w.decide()
	if j := p.Status.Job; j.CheckpointsCompleted != 10 || j.LastCheckpoint == nil || j.LastCheckpoint.ID != 9 || j.State != "RUNNING" {
		t.Errorf("job recorded as %+v; want 10 checkpoints, the last 9, RUNNING", j)
	}
}

// Fault schedule 30: spec.job removed while the job restarts (the rule
// cancels it, its checkpoint surviving), then declared again as it was
// before the cancel's answer came. The superseding spec equals the
// deployed one: the job is submitted from the checkpoint the cancel kept,
// never without state.
func TestSupersedingSpecEqualToTheDeployedRestoresTheStoppedJob(t *testing.T) {
	w := stableWorld()
	cp := &Checkpoint{ID: 12, Path: "s3://cp/chk-12"}
	w.gen, w.spec = 2, baseSpec()
	w.spec.Job = nil
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, CheckpointsCompleted: 12, LatestCheckpoint: cp}
	p := w.decide()
	if p.Action.Kind != ActCancel {
		t.Fatalf("removal of a restarting job: action %s, upgrade %+v; want a cancel", p.Action.Kind, p.Status.Upgrade)
	}
	w.commit(p)

	w.gen, w.spec = 3, baseSpec()
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, CheckpointsCompleted: 12, LatestCheckpoint: cp, EndedAt: w.now}
	if p = w.submission(t, 10, time.Second); p.Action.RestorePath != cp.Path {
		t.Fatalf("submitted from %q, want the checkpoint the cancel kept, %s", p.Action.RestorePath, cp.Path)
	}
}

func TestFailedSavepointLeavesClusterUntouched(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"
	w.commit(w.decide())

	w.now = w.now.Add(2 * time.Second)
	w.flink.Pending = &Operation{Done: true, Failure: "Injected failure"}
	p := w.decide()
	if p.Status.Upgrade != nil || p.Deploy.Version != "1.17.1" || p.Action.Kind != ActNone {
		t.Fatalf("after failure: upgrade %+v deploy %s action %s", p.Status.Upgrade, p.Deploy.Version, p.Action.Kind)
	}
	if c := cond(p, v1.ConditionUpgrading); c == nil || c.Reason != "SavepointFailed" || c.Status != metav1.ConditionFalse {
		t.Errorf("Upgrading = %+v", c)
	}
	if p.Status.LastFailedGeneration != 2 {
		t.Errorf("lastFailedGeneration = %d", p.Status.LastFailedGeneration)
	}
	w.commit(p)
	// The same generation is not retried in a loop.
	w.flink = running("job-1", 11)
	if p = w.decide(); p.Status.Upgrade != nil || p.Action.Kind != ActNone {
		t.Fatalf("retried the failed generation: %+v %s", p.Status.Upgrade, p.Action.Kind)
	}
	// A new spec tries again.
	w.gen = 3
	if p = w.decide(); p.Status.Upgrade == nil || p.Action.Kind != ActTrigger {
		t.Fatalf("new generation did not start an upgrade")
	}
}

// TestSlowStopIsFollowedToFlinksAnswer (issue 19, path 4): a
// stop-with-savepoint slower than savepointTimeout is not abandoned while
// Flink may still complete it (the old job would be left stopped, its
// savepoint ignored): the upgrade holds, says so, and restores from the
// savepoint the stop produced. A stop Flink answers failed, with the job
// running on, ends the upgrade untouched. End to end:
// TestSlowStopWithSavepointIsFollowed (simulator: a stop slower than the
// operator's deadline completes later, its savepoint in the history).
func TestSlowStopIsFollowedToFlinksAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		later Flink // Flink's answer after the deadline
		phase v1.UpgradePhase
		from  string
	}{
		{"the stop completes late", Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "s3://sp/late"}},
			v1.UpgradeDeploying, "s3://sp/late"},
		{"Flink forgot the stop; its savepoint is in the history", Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Unknown: true},
			Savepoints: []Checkpoint{{ID: 12, Path: "s3://sp/history", TriggeredAt: t0.Add(time.Second)}}},
			v1.UpgradeDeploying, "s3://sp/history"},
		{"the stop failed, the job runs on", Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning, Pending: &Operation{Done: true, Failure: "Checkpoint expired"}},
			"", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := stableWorld()
			w.gen, w.spec = 2, baseSpec()
			w.spec.Version = "1.18.1"
			w.spec.UpgradePolicy = &v1.UpgradePolicy{SavepointTimeout: "30s", StableCheckpoints: 2}
			w.commit(w.decide())
			for _, f := range []Flink{{Reachable: true, JobFound: true, JobState: flink.JobRunning, Pending: &Operation{}}, {}} {
				w.flink = f // in flight, then Flink unreachable
				w.now = w.now.Add(31 * time.Second)
				p := w.decide()
				if p.Status.Upgrade == nil || p.Status.Upgrade.Phase != v1.UpgradeSavingState || p.Deploy.Version != "1.17.1" || p.Action.Kind != ActNone || !p.Hold {
					t.Fatalf("past the deadline: upgrade %+v deploy %s action %s hold %v", p.Status.Upgrade, p.Deploy.Version, p.Action.Kind, p.Hold)
				}
				if c := cond(p, v1.ConditionStateHold); c == nil || c.Reason != "StopInProgress" {
					t.Fatalf("StateHold = %+v", c)
				}
				w.commit(p)
			}
			w.flink = tc.later
			w.now = w.now.Add(5 * time.Minute)
			p := w.decide()
			switch {
			case tc.phase == "" && (p.Status.Upgrade != nil || p.Status.LastFailedGeneration != 2):
				t.Fatalf("failed stop: upgrade %+v", p.Status.Upgrade)
			case tc.phase != "" && (p.Status.Upgrade == nil || p.Status.Upgrade.Phase != tc.phase || p.Status.Upgrade.RestorePath != tc.from || p.Deploy.Version != "1.18.1"):
				t.Fatalf("late answer: upgrade %+v deploy %s, want %s from %s", p.Status.Upgrade, p.Deploy.Version, tc.phase, tc.from)
			}
			if c := cond(p, v1.ConditionStateHold); c != nil {
				t.Errorf("StateHold left after Flink answered: %+v", c)
			}
		})
	}
}

// TestRollbackAfterFailedGate upgrades, lets the new job fail, and expects
// a rollback to the stable spec restored from the pre-upgrade savepoint.
func TestRollbackAfterFailedGate(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"
	w.commit(w.decide())
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "file:///sp/pre-upgrade"}}
	w.commit(w.decide())
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished}
	w.commit(w.decide()) // submit
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed}
	p := w.decide()
	if p.Status.Upgrade == nil || p.Status.Upgrade.Phase != v1.UpgradeRollingBack || p.Deploy.Version != "1.17.1" {
		t.Fatalf("failed job: upgrade %+v deploy %s", p.Status.Upgrade, p.Deploy.Version)
	}
	if c := cond(p, v1.ConditionRollingBack); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("RollingBack = %+v", c)
	}
	w.commit(p)
	w.rolled = false
	w.commit(w.decide())
	w.rolled = true
	w.flink = Flink{Reachable: true}
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "file:///sp/pre-upgrade" {
		t.Fatalf("rollback restore: action %s from %q", p.Action.Kind, p.Action.RestorePath)
	}
	w.commit(p)
	w.flink = running(p.Status.Job.ID, 0)
	p = w.decide()
	if p.Status.Upgrade != nil || p.Status.LastFailedGeneration != 2 {
		t.Fatalf("after rollback: upgrade %+v failed gen %d", p.Status.Upgrade, p.Status.LastFailedGeneration)
	}
	if c := cond(p, v1.ConditionRolledBack); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("RolledBack = %+v", c)
	}
	w.commit(p)
	// Steady on the stable spec; the failed generation is not retried.
	if p = w.decide(); p.Status.Upgrade != nil || p.Deploy.Version != "1.17.1" {
		t.Fatalf("retried: %+v %s", p.Status.Upgrade, p.Deploy.Version)
	}
}

func TestGateTimeoutRollsBack(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"
	w.spec.UpgradePolicy = &v1.UpgradePolicy{StableCheckpoints: 3, StabilityTimeout: "1m"}
	w.commit(w.decide())
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "p"}}
	w.commit(w.decide())
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished}
	w.commit(w.decide())
	// Running but never checkpointing.
	w.flink = running("new", 0)
	w.now = w.now.Add(30 * time.Second)
	if p := w.decide(); p.Status.Upgrade.Phase != v1.UpgradeVerifying {
		t.Fatalf("rolled back before the deadline")
	}
	w.now = w.now.Add(31 * time.Second)
	if p := w.decide(); p.Status.Upgrade.Phase != v1.UpgradeRollingBack || p.Action.Kind != ActCancel {
		t.Fatalf("after the deadline: phase %s action %s", p.Status.Upgrade.Phase, p.Action.Kind)
	}
}

// TestNewSpecDuringAnUpgradeStartsFromTheRunningJobsState (issue 19,
// path 7): a new spec while a job of the upgrade runs (the one being
// verified, the rollback's) starts from a savepoint of that job, not from
// the state saved before the upgrade, which would throw away what it
// processed since; a rollback of the new spec still returns to the state
// recorded before the first upgrade. A job that does not run leaves its
// newest retained checkpoint. End to end: TestNewSpecDuringVerification.
func TestNewSpecDuringAnUpgradeStartsFromTheRunningJobsState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		phase v1.UpgradePhase
		flink Flink
		// want: a stop-with-savepoint of the running job, else the
		// restore point after its cancel
		savepoint bool
		from      string
	}{
		{"verifying, the job runs", v1.UpgradeVerifying, running("job-2", 4), true, ""},
		{"rolling back, the rollback's job runs", v1.UpgradeRollingBack, running("job-2", 4), true, ""},
		{"verifying, the job restarts", v1.UpgradeVerifying, Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, CheckpointsCompleted: 4,
			LatestCheckpoint: &Checkpoint{ID: 14, Path: "s3://cp/job-2/chk-14"}}, false, "s3://cp/job-2/chk-14"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := stableWorld()
			w.gen, w.spec = 3, baseSpec()
			w.spec.Version = "1.18.2"
			w.deployed = baseSpec()
			w.deployed.Version = "1.18.1"
			w.status.Job = &v1.JobStatus{ID: "job-2", State: "RUNNING", RestoredFrom: "s3://sp/pre", SubmittedAt: &metav1.Time{Time: t0}}
			if tc.phase == v1.UpgradeRollingBack {
				w.deployed = baseSpec()
			}
			w.status.Upgrade = &v1.UpgradeStatus{Phase: tc.phase, Kind: "Upgrade", TargetGeneration: 2, RestorePath: "s3://sp/pre", StartedAt: metav1.NewTime(t0), PhaseStartedAt: metav1.NewTime(t0)}
			w.flink = tc.flink
			w.spec.Job.UpgradeMode = v1.UpgradeLastState
			if !tc.savepoint {
				// Same version: a checkpoint may carry the job across.
				w.spec.Version = w.deployed.Version
				w.spec.FlinkConfiguration = v1.FlinkConfiguration{"pipeline.name": "orders"}
			}
			p := w.decide()
			up := p.Status.Upgrade
			if up == nil || up.TargetGeneration != 3 || up.RollbackPath != "s3://sp/pre" {
				t.Fatalf("superseded: %+v", up)
			}
			if tc.savepoint {
				sp := p.Status.Job.PendingSavepoint
				if up.Phase != v1.UpgradeSavingState || p.Action.Kind != ActTrigger || sp == nil || !sp.Stop || sp.JobID != "job-2" {
					t.Fatalf("want a stop-with-savepoint of job-2: %+v action %s pending %+v", up, p.Action.Kind, sp)
				}
				w.commit(p)
				w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "s3://sp/job-2-stop"}}
				p = w.decide()
				if p.Status.Upgrade.RestorePath != "s3://sp/job-2-stop" || p.Deploy.Version != "1.18.2" || p.Status.Upgrade.RollbackPath != "s3://sp/pre" {
					t.Fatalf("after the stop: %+v deploy %s", p.Status.Upgrade, p.Deploy.Version)
				}
				return
			}
			if p.Action.Kind != ActCancel || p.Deploy.FlinkConfiguration != nil {
				t.Fatalf("want a cancel before anything rolls: action %s deploy %v", p.Action.Kind, p.Deploy.FlinkConfiguration)
			}
			w.commit(p)
			w.flink.JobState = flink.JobCanceled
			w.commit(w.decide())
			w.now = w.now.Add(10 * time.Second)
			p = w.decide()
			if p.Status.Upgrade.RestorePath != tc.from || p.Deploy.FlinkConfiguration == nil {
				t.Fatalf("after the cancel: %+v deploy %v, want %s", p.Status.Upgrade, p.Deploy.FlinkConfiguration, tc.from)
			}
		})
	}
}

func TestSuspendAndResume(t *testing.T) {
	w := stableWorld()
	w.spec.Job.State = v1.JobStateSuspended
	p := w.decide()
	sp := p.Status.Job.PendingSavepoint
	if p.Action.Kind != ActTrigger || sp == nil || !sp.Stop || sp.Reason != v1.SavepointForSuspend {
		t.Fatalf("suspend: action %s savepoint %+v", p.Action.Kind, sp)
	}
	if p.Status.Upgrade != nil {
		t.Error("suspending started an upgrade")
	}
	w.commit(p)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "sp-suspend"}}
	w.commit(w.decide())
	w.flink.Pending = nil
	p = w.decide()
	if p.Action.Kind != ActNone || p.Status.Job.State != "SUSPENDED" {
		t.Fatalf("suspended: action %s state %s", p.Action.Kind, p.Status.Job.State)
	}
	w.commit(p)
	w.spec.Job.State = v1.JobStateRunning
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Action.RestorePath != "sp-suspend" {
		t.Fatalf("resume: action %s from %q", p.Action.Kind, p.Action.RestorePath)
	}
}

func TestManualAndPeriodicSavepoints(t *testing.T) {
	w := stableWorld()
	w.spec.Job.SavepointTriggerNonce = 1
	p := w.decide()
	if p.Action.Kind != ActTrigger || p.Status.Job.PendingSavepoint.Reason != v1.SavepointManual || p.Status.Job.PendingSavepoint.Stop {
		t.Fatalf("manual: %s %+v", p.Action.Kind, p.Status.Job.PendingSavepoint)
	}
	w.commit(p)
	w.flink.Pending = &Operation{Done: true, Path: "m1"}
	p = w.decide()
	if p.Status.Job.LastSavepointNonce != 1 || p.Status.Job.LastSavepoint.Path != "m1" {
		t.Fatalf("manual done: %+v", p.Status.Job)
	}
	w.commit(p)
	w.flink.Pending = nil
	if p = w.decide(); p.Action.Kind != ActNone {
		t.Fatalf("nonce served twice")
	}

	w.spec.Job.SavepointInterval = "1h"
	p = w.decide()
	if p.Action.Kind != ActNone || p.RequeueAfter <= 0 || p.RequeueAfter > time.Hour {
		t.Fatalf("periodic not due: action %s requeue %s", p.Action.Kind, p.RequeueAfter)
	}
	w.now = w.now.Add(time.Hour + time.Second)
	if p = w.decide(); p.Action.Kind != ActTrigger || p.Status.Job.PendingSavepoint.Reason != v1.SavepointPeriodic {
		t.Fatalf("periodic due: %s", p.Action.Kind)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	w := stableWorld()
	for i := int64(1); i <= 4; i++ {
		w.spec.Job.SavepointTriggerNonce = i
		w.flink.Pending = nil
		w.commit(w.decide())
		w.flink.Pending = &Operation{Done: true, Path: "sp"}
		w.commit(w.decide())
	}
	if n := len(w.status.Job.SavepointHistory); n != 2 {
		t.Errorf("history has %d entries, retention is 2", n)
	}
}

// TestRollbackWhenTheJobFailsAtOnce fails the upgraded job in the same
// second it was submitted: the rollback must still submit its own job.
func TestRollbackWhenTheJobFailsAtOnce(t *testing.T) {
	w := stableWorld()
	w.gen, w.spec = 2, baseSpec()
	w.spec.Version = "1.18.1"
	w.commit(w.decide())
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "pre"}}
	w.commit(w.decide())
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished}
	p := w.decide() // submit, same clock second as everything below
	w.commit(p)
	failed := p.Status.Job.ID
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed}
	w.commit(w.decide()) // to RollingBack
	w.rolled = true
	p = w.decide()
	if p.Action.Kind != ActSubmit || p.Status.Job.ID == failed || p.Action.RestorePath != "pre" {
		t.Fatalf("rollback: action %s, job %s (failed one %s), restore %q", p.Action.Kind, p.Status.Job.ID, failed, p.Action.RestorePath)
	}
}

// TestFailingSubmissionRetriesWithoutWrites keeps the recorded job ID when a
// submission does not reach Flink, so a broken jarURI costs no status write
// per retry, and backs off as the failure lasts.
func TestFailingSubmissionRetriesWithoutWrites(t *testing.T) {
	spec := baseSpec()
	w := &world{gen: 1, spec: spec, deployed: spec.DeepCopy(), rolled: true, now: t0, flink: Flink{Reachable: true},
		status: v1.FlinkClusterStatus{Job: &v1.JobStatus{}}}
	p := w.decide()
	if p.Action.Kind != ActSubmit {
		t.Fatalf("first decision: %s", p.Action.Kind)
	}
	w.commit(p)
	first := w.status.DeepCopy()
	for _, after := range []time.Duration{time.Second, time.Minute, time.Hour} {
		w.now = t0.Add(after)
		p = w.decide()
		if p.Action.Kind != ActSubmit || p.Status.Job.ID != first.Job.ID {
			t.Fatalf("after %s: action %s, job %s, want a resubmission of %s", after, p.Action.Kind, p.Status.Job.ID, first.Job.ID)
		}
		if !equality.Semantic.DeepEqual(p.Status, *first) {
			t.Errorf("after %s: the retry changed the status", after)
		}
		want := min(max(after, Poll), maxResubmitBackoff)
		if p.RequeueAfter != want {
			t.Errorf("after %s: requeue %s, want %s", after, p.RequeueAfter, want)
		}
	}
}

// TestRenderingDriftTakesTheStateSafePath: the same spec rendered
// differently (an operator upgrade) rolls the pods, so it is an upgrade:
// state first, then the new rendering, then the gate. Without drift a
// steady cluster does nothing; a generation that failed is not retried.
func TestRenderingDriftTakesTheStateSafePath(t *testing.T) {
	w := stableWorld()
	if p := w.decide(); p.Status.Upgrade != nil || p.Action.Kind == ActTrigger {
		t.Fatalf("steady without drift: upgrade %+v action %s", p.Status.Upgrade, p.Action.Kind)
	}
	w.drift, w.rolled = true, false
	p := w.decide()
	up := p.Status.Upgrade
	if up == nil || up.Kind != string(ChangeConfigRoll) || up.Phase != v1.UpgradeSavingState || p.Action.Kind != ActTrigger {
		t.Fatalf("drift: upgrade %+v action %s", up, p.Action.Kind)
	}
	if sp := p.Status.Job.PendingSavepoint; sp == nil || sp.Reason != v1.SavepointForUpgrade {
		t.Fatalf("pending = %+v, want the upgrade's savepoint (mode savepoint)", sp)
	}
	if !equality.Semantic.DeepEqual(p.Deploy, w.deployed) {
		t.Fatalf("the deployed spec changed: %+v", p.Deploy)
	}
	found := false
	for _, e := range p.Events {
		found = found || e.Reason == "RenderingChanged"
	}
	if !found {
		t.Errorf("no RenderingChanged event in %+v", p.Events)
	}

	w = stableWorld()
	w.drift, w.status.LastFailedGeneration = true, w.gen
	if p := w.decide(); p.Status.Upgrade != nil {
		t.Fatalf("a failed generation retried on drift: %+v", p.Status.Upgrade)
	}
}

// TestFirstJobEvents: a new cluster's first job is told by its status; a
// job submitted from state gets an event. (A job Flink lost after it showed
// it is held, NewestStateUnknown: TestJobLostWithItsJobManager.)
// A starting job is looked at again without waiting for the health poller.
func TestFirstJobEvents(t *testing.T) {
	withInitial := baseSpec()
	withInitial.Job.InitialSavepointPath = "s3://sp/initial"
	for _, tc := range []struct {
		name   string
		spec   *v1.FlinkClusterSpec
		job    *v1.JobStatus
		flink  Flink
		reason string // "" means no event
	}{
		{"first job without state", baseSpec(), nil, Flink{Reachable: true}, ""},
		{"first job from the initial savepoint", withInitial, nil, Flink{Reachable: true}, "Submitted"},
	} {
		w := &world{gen: 1, spec: tc.spec, deployed: tc.spec.DeepCopy(), rolled: true, now: t0, flink: tc.flink}
		if tc.job != nil {
			w.status.Job = tc.job
		}
		p := w.decide()
		if p.Action.Kind != ActSubmit {
			t.Fatalf("%s: action %s, want a submission", tc.name, p.Action.Kind)
		}
		var reasons []string
		for _, e := range p.Events {
			if !e.Warning {
				reasons = append(reasons, e.Reason)
			}
		}
		switch {
		case tc.reason == "" && len(reasons) != 0:
			t.Errorf("%s: events %v, want none", tc.name, reasons)
		case tc.reason != "" && (len(reasons) != 1 || reasons[0] != tc.reason):
			t.Errorf("%s: events %v, want one %s", tc.name, reasons, tc.reason)
		}
		w.commit(p)
		w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobInitializing}
		if p = w.decide(); p.RequeueAfter == 0 || p.Action.Kind != ActNone {
			t.Errorf("%s: starting job: requeue %v, action %s", tc.name, p.RequeueAfter, p.Action.Kind)
		}
	}
}

// Fault schedule 278: a new spec during the verifying of an upgrade (its
// job restored from s3://sp/pre and checkpointed since) cancels that job
// (spec.job removed while it restarts), and spec.job returns as it was deployed
// before the cancel's end has settled. The upgrade's restore point was the
// superseded upgrade's, the state the job started from: the job must be
// submitted from the checkpoint the cancel kept, never from its start.
func TestSupersedingAVerifiedJobRestoresItsOwnState(t *testing.T) {
	w := stableWorld()
	w.deployed.Job.UpgradeMode = v1.UpgradeLastState
	deployed := w.deployed.DeepCopy()
	cp := &Checkpoint{ID: 14, Path: "s3://cp/job-2/chk-14"}
	w.gen, w.spec = 3, deployed.DeepCopy()
	w.spec.Job = nil
	w.status.Job = &v1.JobStatus{ID: "job-2", State: "RUNNING", RestoredFrom: "s3://sp/pre", SubmittedAt: &metav1.Time{Time: t0}}
	w.status.Upgrade = &v1.UpgradeStatus{Phase: v1.UpgradeVerifying, Kind: "Upgrade", TargetGeneration: 2, RestorePath: "s3://sp/pre",
		StartedAt: metav1.NewTime(t0), PhaseStartedAt: metav1.NewTime(t0)}
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobRestarting, CheckpointsCompleted: 1, LatestCheckpoint: cp}
	p := w.decide()
	if p.Action.Kind != ActCancel {
		t.Fatalf("removal of a restarting job during verifying: action %s, upgrade %+v; want a cancel", p.Action.Kind, p.Status.Upgrade)
	}
	w.commit(p)
	w.now = w.now.Add(time.Second)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobCanceled, CheckpointsCompleted: 1, LatestCheckpoint: cp, EndedAt: w.now}
	w.commit(w.decide())

	w.gen, w.spec = 4, deployed.DeepCopy()
	if p = w.submission(t, 10, time.Second); p.Action.RestorePath != cp.Path {
		t.Fatalf("submitted from %q, want the checkpoint the cancel kept, %s", p.Action.RestorePath, cp.Path)
	}
}

// A version upgrade fails its gate, and the rollback has deployed the
// stable spec when the user applies that spec again. The rollback's job is
// not submitted yet: it restores the rollback point, never the failed
// job's checkpoint, which the newer Flink wrote.
func TestSupersedingARollbackKeepsItsRestorePoint(t *testing.T) {
	w := savingWorld(t)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFinished, Pending: &Operation{Done: true, Path: "s3://sp/pre"}}
	w.commit(w.decide())
	w.commit(w.decide())
	w.now = w.now.Add(30 * time.Second)
	w.flink = Flink{Reachable: true, JobFound: true, JobState: flink.JobFailed, FailureCause: "bad", CheckpointsCompleted: 3,
		LatestCheckpoint: &Checkpoint{ID: 3, Path: "s3://cp/job-2/chk-3"}, EndedAt: w.now}
	w.commit(w.decide())
	if up := w.status.Upgrade; up == nil || up.Phase != v1.UpgradeRollingBack {
		t.Fatalf("setup: upgrade %+v, want rolling back", up)
	}
	w.rolled = true // the pods run the stable spec again
	w.gen, w.spec = 3, baseSpec()
	w.spec.UpgradePolicy = &v1.UpgradePolicy{SavepointTimeout: "1m", StabilityTimeout: "1m", StableCheckpoints: 2}
	if p := w.submission(t, 10, 2*time.Second); p.Action.RestorePath != "s3://sp/pre" {
		t.Fatalf("%s job submitted from %q; want the rollback point s3://sp/pre", w.deployed.Version, p.Action.RestorePath)
	}
}

// Before the first submission, a spec that changes only
// spec.job.initialSavepointPath supersedes the upgrade: the job starts from
// the newest spec's savepoint.
func TestSupersedingBeforeTheFirstSubmissionTakesTheNewInitialSavepoint(t *testing.T) {
	w := &world{gen: 2, deployed: baseSpec(), now: t0, flink: Flink{Reachable: true}}
	w.spec = baseSpec()
	w.spec.Version = "1.18.1"
	w.spec.Job.InitialSavepointPath = "s3://sp/a"
	w.commit(w.decide())
	if up := w.status.Upgrade; up == nil || up.RestorePath != "s3://sp/a" {
		t.Fatalf("setup: upgrade %+v", up)
	}
	w.gen, w.spec = 3, w.spec.DeepCopy()
	w.spec.Job.InitialSavepointPath = "s3://sp/b"
	w.rolled = true
	if p := w.submission(t, 5, time.Second); p.Action.RestorePath != "s3://sp/b" {
		t.Fatalf("submitted from %q, want the newest spec's s3://sp/b", p.Action.RestorePath)
	}
}

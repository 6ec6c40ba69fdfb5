package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/health"
	"github.com/datapilot/datapilot/internal/lifecycle"
)

// A step's verdicts become its conditions as if the lifecycle had set each
// in turn: a condition it leaves alone keeps its time, one it flipped and
// flipped back transitioned now, and StateHold and Autoscaling exist only
// while there is something to say.
func TestSetStepConditions(t *testing.T) {
	old := metav1.NewTime(time.Unix(1000, 0))
	at := time.Unix(2000, 700_000_000)
	now := metav1.NewTime(time.Unix(2000, 0))
	recorded := func() *v1.FlinkClusterStatus {
		return &v1.FlinkClusterStatus{Conditions: []metav1.Condition{
			{Type: v1.ConditionUpgrading, Status: metav1.ConditionFalse, Reason: "NoUpgrade", Message: "No upgrade in flight", ObservedGeneration: 1, LastTransitionTime: old},
			{Type: v1.ConditionStateHold, Status: metav1.ConditionTrue, Reason: "FlinkUnreachable", Message: "Held", ObservedGeneration: 1, LastTransitionTime: old},
			{Type: v1.ConditionAutoscaling, Status: metav1.ConditionFalse, Reason: "Keep", Message: "Kept", ObservedGeneration: 1, LastTransitionTime: old},
		}}
	}
	for _, tc := range []struct {
		name      string
		facts     lifecycle.Facts
		auto      autopilotVerdicts
		scaler    *v1.AutoscalerStatus
		upgrading *metav1.Condition
		held      bool
		autoscale bool
	}{
		{name: "nothing said: Upgrading kept, StateHold and Autoscaling removed",
			upgrading: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "NoUpgrade", ObservedGeneration: 1, LastTransitionTime: old}},
		{name: "same status: time kept, generation and reason new",
			facts:     lifecycle.Facts{Upgrading: &lifecycle.Fact{Status: metav1.ConditionFalse, Reason: "UpgradeSucceeded"}},
			upgrading: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "UpgradeSucceeded", ObservedGeneration: 3, LastTransitionTime: old}},
		{name: "flipped and back within the step: transitioned now",
			facts:     lifecycle.Facts{Upgrading: &lifecycle.Fact{Status: metav1.ConditionFalse, Reason: "UpgradeSucceeded", Flipped: true}},
			upgrading: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "UpgradeSucceeded", ObservedGeneration: 3, LastTransitionTime: now}},
		{name: "new status: transitioned now; held; autoscaler kept",
			facts: lifecycle.Facts{Upgrading: &lifecycle.Fact{Status: metav1.ConditionTrue, Reason: "SavingState"},
				StateHold: &lifecycle.Verdict{Do: lifecycle.Hold, Reason: "StopInProgress", Message: "Stopping"}},
			scaler:    &v1.AutoscalerStatus{},
			upgrading: &metav1.Condition{Status: metav1.ConditionTrue, Reason: "SavingState", ObservedGeneration: 3, LastTransitionTime: now},
			held:      true, autoscale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := recorded()
			st.Autoscaler = tc.scaler
			setStepConditions(st, 3, at, tc.facts, tc.auto)
			c := meta.FindStatusCondition(st.Conditions, v1.ConditionUpgrading)
			w := tc.upgrading
			if c == nil || c.Status != w.Status || c.Reason != w.Reason || c.ObservedGeneration != w.ObservedGeneration || !c.LastTransitionTime.Equal(&w.LastTransitionTime) {
				t.Errorf("Upgrading = %+v, want %+v", c, w)
			}
			if h := meta.FindStatusCondition(st.Conditions, v1.ConditionStateHold); (h != nil) != tc.held || h != nil && (h.Reason != "StopInProgress" || h.Status != metav1.ConditionTrue) {
				t.Errorf("StateHold = %+v, want present %v", h, tc.held)
			}
			if a := meta.FindStatusCondition(st.Conditions, v1.ConditionAutoscaling); (a != nil) != tc.autoscale {
				t.Errorf("Autoscaling = %+v, want present %v", a, tc.autoscale)
			}
		})
	}
}

// A refused jar is remembered for its URI and generation only: the same
// URI at the same generation is not fetched again, another URI or a new
// generation is, and a new generation's status write removes the refusal.
func TestJobSubmittedRemembersARefusal(t *testing.T) {
	const uri = "http://169.254.169.254/job.jar"
	st := &v1.FlinkClusterStatus{}
	setJobSubmittedCondition(st, 3, time.Unix(2000, 0), v1.ReasonJarRefused, &JarRefusedError{URI: uri, Reason: "169.254.169.254 is a link-local address"})
	for _, tc := range []struct {
		name string
		gen  int64
		uri  string
		want bool
	}{
		{"same URI, same generation", 3, uri, true},
		{"a URI the refused one starts with", 3, "http://169.254.169.254/job", false},
		{"a longer URI", 3, uri + ":x", false},
		{"another URI", 3, "https://repo.example.com/job.jar", false},
		{"a new generation", 4, uri, false},
	} {
		if got := jarRefused(st.Conditions, tc.gen, tc.uri); got != tc.want {
			t.Errorf("%s: refused before = %v, want %v", tc.name, got, tc.want)
		}
	}
	c := meta.FindStatusCondition(st.Conditions, v1.ConditionJobSubmitted)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonJarRefused || c.ObservedGeneration != 3 {
		t.Fatalf("JobSubmitted = %+v", c)
	}
	expireJobSubmittedCondition(st, 3)
	if meta.FindStatusCondition(st.Conditions, v1.ConditionJobSubmitted) == nil {
		t.Error("The refusal went while the generation stayed")
	}
	expireJobSubmittedCondition(st, 4)
	if c := meta.FindStatusCondition(st.Conditions, v1.ConditionJobSubmitted); c != nil {
		t.Errorf("The refusal stayed into generation 4: %+v", c)
	}
}

// A job Flink refused as already ended is remembered for that job, through
// spec changes, until another job is recorded or Flink shows it: a changed
// spec must not send it again from what it started from.
func TestJobSubmittedRemembersAnEndedJob(t *testing.T) {
	const id, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	st := &v1.FlinkClusterStatus{Job: &v1.JobStatus{ID: id}}
	setJobSubmittedCondition(st, 3, time.Unix(2000, 0), v1.ReasonJobEndedUnseen, &JobEndedUnseenError{JobID: id})
	if !jobEndedUnseen(st.Conditions, id) || jobEndedUnseen(st.Conditions, other) || jobEndedUnseen(st.Conditions, "") {
		t.Fatalf("ended unseen: %v for the job, %v for another, %v for none; want only the job",
			jobEndedUnseen(st.Conditions, id), jobEndedUnseen(st.Conditions, other), jobEndedUnseen(st.Conditions, ""))
	}
	if jarRefused(st.Conditions, 3, "") {
		t.Error("an ended job reads as a refused jar")
	}
	expireJobSubmittedCondition(st, 4)
	if !jobEndedUnseen(st.Conditions, id) {
		t.Error("the ended job was forgotten at a new generation")
	}
	seen := st.DeepCopy()
	seen.Job.State = "RUNNING"
	expireJobSubmittedCondition(seen, 4)
	if c := meta.FindStatusCondition(seen.Conditions, v1.ConditionJobSubmitted); c != nil {
		t.Errorf("the refusal stayed once Flink showed the job: %+v", c)
	}
	st.Job.ID = other
	expireJobSubmittedCondition(st, 4)
	if c := meta.FindStatusCondition(st.Conditions, v1.ConditionJobSubmitted); c != nil {
		t.Errorf("the refusal stayed once another job was recorded: %+v", c)
	}
}

// JobsRunning says of the recorded job what status.job.state says while
// the step sees it starting and the verdict (GET /jobs/overview, never
// cached) already sees it RUNNING: Flink answers GET /jobs/{jobid} from a
// cached graph. Any other verdict is shown as it is.
func TestJobsConditionFollowsTheRecordedJob(t *testing.T) {
	const id = "ca7e986df1994b5d520949ae2aab6ccc"
	running := health.LevelVerdict{Status: metav1.ConditionTrue, Reason: health.ReasonJobRunning, Message: "Job Bench (" + id + ") is RUNNING."}
	starting := health.LevelVerdict{Status: metav1.ConditionUnknown, Reason: health.ReasonJobStarting, Message: health.JobStartingMessage(id)}
	notRunning := health.LevelVerdict{Status: metav1.ConditionFalse, Reason: health.ReasonJobNotRunning, Message: "Job Bench (" + id + ") is FAILING, not RUNNING."}
	now := metav1.NewTime(time.Unix(2000, 0))
	for _, tc := range []struct {
		name    string
		job     *v1.JobStatus
		verdict health.LevelVerdict
		want    health.LevelVerdict
	}{
		{"the step sees it INITIALIZING", &v1.JobStatus{ID: id, State: "INITIALIZING"}, running, starting},
		{"the step sees it CREATED", &v1.JobStatus{ID: id, State: "CREATED"}, running, starting},
		{"the step sees it RUNNING too", &v1.JobStatus{ID: id, State: "RUNNING"}, running, running},
		{"the step has not seen it: the verdict is all there is", &v1.JobStatus{ID: id}, running, running},
		{"a failure is shown as it is", &v1.JobStatus{ID: id, State: "INITIALIZING"}, notRunning, notRunning},
		{"a session cluster records no job", nil, running, running},
	} {
		st := &v1.FlinkClusterStatus{Job: tc.job}
		setHealthConditions(st, 1, now, &health.Verdict{Levels: map[health.Level]health.LevelVerdict{health.LevelJobs: tc.verdict}})
		c := meta.FindStatusCondition(st.Conditions, v1.ConditionJobsRunning)
		if c == nil || c.Status != tc.want.Status || c.Reason != tc.want.Reason || c.Message != tc.want.Message {
			t.Errorf("%s: %+v, want %+v", tc.name, c, tc.want)
		}
	}

	// The reconcile woken by the verdict's RUNNING, its step reading the
	// cached INITIALIZING, has nothing to write after the submission's
	// write: the job's state alone rides on the next write.
	recorded := &v1.FlinkClusterStatus{Job: &v1.JobStatus{ID: id}}
	setHealthConditions(recorded, 1, now, &health.Verdict{Levels: map[health.Level]health.LevelVerdict{health.LevelJobs: starting}})
	next := recorded.DeepCopy()
	next.Job.State = "INITIALIZING"
	setHealthConditions(next, 1, metav1.NewTime(now.Add(2*time.Second)), &health.Verdict{Levels: map[health.Level]health.LevelVerdict{health.LevelJobs: running}})
	if !lifecycle.FlinkProgressOnly(recorded, next, 1) {
		t.Errorf("a status write for a job the step sees INITIALIZING and the verdict RUNNING:\nrecorded %+v\nnext %+v", recorded, next)
	}
}

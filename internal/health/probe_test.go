package health

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

type outcome int

const (
	passes outcome = iota
	fails
	unknowable
)

func outcomeOf(p Probe) outcome {
	switch {
	case p.Unknown:
		return unknowable
	case p.OK:
		return passes
	}
	return fails
}

func checkProbe(t *testing.T, name string, p Probe, level Level, o outcome, reason string) {
	t.Helper()
	if p.Level != level || outcomeOf(p) != o || p.Reason != reason {
		t.Errorf("%s: got %+v, want level %s outcome %d reason %s", name, p, level, o, reason)
	}
	if p.Message == "" || p.Message[0] < 'A' || p.Message[0] > 'Z' || !strings.HasSuffix(p.Message, ".") {
		t.Errorf("%s: message %q is not a sentence", name, p.Message)
	}
}

func TestJobManagerProbe(t *testing.T) {
	sts := func(ready int32, deleting bool) workload.JobManager {
		s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.StatefulSetStatus{ReadyReplicas: ready, UpdateRevision: "r1", CurrentRevision: "r1"}}
		s.Generation = 1
		if deleting {
			s.DeletionTimestamp = &metav1.Time{}
		}
		return workload.JobManager{StatefulSet: s}
	}
	// An older cluster's JobManager is a Deployment.
	legacy := workload.JobManager{Deployment: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}}
	readyPod := []readiness.Pod{{Component: resources.ComponentJobManager, Revision: "r1", Ready: true}}
	for _, tc := range []struct {
		name      string
		dep       workload.JobManager
		pods      []readiness.Pod
		seenReady bool
		want      outcome
		reason    string
	}{
		{"ready", sts(1, false), nil, false, passes, ReasonJobManagerReady},
		{"ready, seen before", sts(2, false), nil, true, passes, ReasonJobManagerReady},
		{"its pod ready before its status says so", sts(0, false), readyPod, false, passes, ReasonJobManagerReady},
		{"an older cluster's Deployment, ready", legacy, nil, true, passes, ReasonJobManagerReady},
		{"no StatefulSet yet: starting", workload.JobManager{}, readyPod, false, unknowable, ReasonJobManagerStarting},
		{"never ready: starting", sts(0, false), nil, false, unknowable, ReasonJobManagerStarting},
		{"was ready, now not", sts(0, false), nil, true, fails, ReasonJobManagerNotReady},
		{"was ready, StatefulSet gone", workload.JobManager{}, nil, true, fails, ReasonJobManagerMissing},
		{"was ready, StatefulSet being deleted", sts(1, true), readyPod, true, fails, ReasonJobManagerNotReady},
	} {
		ready := readiness.JobManagers(tc.dep, tc.pods).Ready
		checkProbe(t, tc.name, jobManagerProbe(tc.dep, ready, tc.seenReady), LevelJobManager, tc.want, tc.reason)
	}
}

func TestEverReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status v1.FlinkClusterStatus
		want   bool
	}{
		{"new", v1.FlinkClusterStatus{}, false},
		{"ready replicas recorded", v1.FlinkClusterStatus{JobManager: v1.ComponentStatus{ReadyReplicas: 1}}, true},
		{"JobManagerReady True", v1.FlinkClusterStatus{Conditions: []metav1.Condition{{Type: v1.ConditionJobManagerReady, Status: metav1.ConditionTrue}}}, true},
		{"JobManagerReady False", v1.FlinkClusterStatus{Conditions: []metav1.Condition{{Type: v1.ConditionJobManagerReady, Status: metav1.ConditionFalse}}}, true},
		{"JobManagerReady Unknown", v1.FlinkClusterStatus{Conditions: []metav1.Condition{{Type: v1.ConditionJobManagerReady, Status: metav1.ConditionUnknown}}}, false},
	} {
		if got := everReady(&v1.FlinkCluster{Status: tc.status}); got != tc.want {
			t.Errorf("%s: everReady = %v", tc.name, got)
		}
	}
}

func TestStartedAt(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		readySince time.Time
		want       time.Time
	}{
		{"the pods do not tell", time.Time{}, time.Time{}},
		{"ready a minute ago: a second later, for the condition's whole seconds", now.Add(-time.Minute), now.Add(-time.Minute + time.Second)},
		{"ready this second", now.Add(-300 * time.Millisecond), now},
		{"a node clock ahead of ours", now.Add(time.Minute), now},
	} {
		if got := startedAt(tc.readySince, now); !got.Equal(tc.want) {
			t.Errorf("%s: startedAt = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRestProbe(t *testing.T) {
	checkProbe(t, "answers", restProbe(nil, false), LevelRest, passes, ReasonRestAvailable)
	checkProbe(t, "answers, starting", restProbe(nil, true), LevelRest, passes, ReasonRestAvailable)
	unavailable := &flink.Error{Method: "GET", Endpoint: "/overview", StatusCode: http.StatusServiceUnavailable}
	refused := &flink.Error{Method: "GET", Endpoint: "/overview", Err: errors.New("connection refused")}
	internal := &flink.Error{Method: "GET", Endpoint: "/overview", StatusCode: http.StatusInternalServerError, Messages: []string{"boom\nstack"}}
	for _, tc := range []struct {
		err      error
		starting bool
		want     outcome
		reason   string
	}{
		{unavailable, false, fails, ReasonRestUnavailable},
		{refused, false, fails, ReasonRestUnavailable},
		{internal, false, fails, ReasonRestError},
		{errors.New("decoding"), false, fails, ReasonRestError},
		// Just after the JobManager turned ready, unreachable is a start;
		// an error the REST API answered with is not.
		{unavailable, true, unknowable, ReasonRestStarting},
		{refused, true, unknowable, ReasonRestStarting},
		{internal, true, fails, ReasonRestError},
		// A Service's name resolves from its creation on: no start.
		{&flink.Error{Method: "GET", Endpoint: "/overview", Err: &net.DNSError{Err: "no such host", Name: "fc-jobmanager.ns", IsNotFound: true}}, true, fails, ReasonRestUnavailable},
	} {
		checkProbe(t, fmt.Sprintf("%v (starting %t)", tc.err, tc.starting), restProbe(tc.err, tc.starting), LevelRest, tc.want, tc.reason)
	}
}

func TestJobsRequired(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     v1.FlinkClusterSpec
		required bool
		reason   string
	}{
		{"session cluster", v1.FlinkClusterSpec{}, false, ReasonNotRequired},
		{"session cluster requiring jobs", v1.FlinkClusterSpec{Health: &v1.HealthPolicy{RequireRunningJobs: true}}, true, ""},
		{"declared job", v1.FlinkClusterSpec{Job: &v1.JobSpec{State: v1.JobStateRunning}}, true, ""},
		{"declared job, state defaulted", v1.FlinkClusterSpec{Job: &v1.JobSpec{}}, true, ""},
		{"suspended job", v1.FlinkClusterSpec{Job: &v1.JobSpec{State: v1.JobStateSuspended}}, false, ReasonJobSuspended},
	} {
		p, required := jobsRequired(&v1.FlinkCluster{Spec: tc.spec})
		if required != tc.required {
			t.Errorf("%s: required = %v", tc.name, required)
		}
		if !required {
			checkProbe(t, tc.name, p, LevelJobs, passes, tc.reason)
		}
	}
}

func TestJobsProbe(t *testing.T) {
	running := JobSummary{ID: "aaa", Name: "orders", State: flink.JobRunning}
	restarting := JobSummary{ID: "bbb", Name: "orders", State: flink.JobRestarting}
	finished := JobSummary{ID: "ccc", Name: "old", State: flink.JobFinished}
	declared := v1.FlinkClusterSpec{Job: &v1.JobSpec{}}
	session := v1.FlinkClusterSpec{Health: &v1.HealthPolicy{RequireRunningJobs: true}}
	withID := func(id string) v1.FlinkClusterStatus { return v1.FlinkClusterStatus{Job: &v1.JobStatus{ID: id}} }
	submitted := v1.FlinkClusterStatus{Job: &v1.JobStatus{SubmittedAt: &metav1.Time{}}}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	submittedAgo := func(id, state string, ago time.Duration) v1.FlinkClusterStatus {
		at := metav1.NewTime(now.Add(-ago))
		return v1.FlinkClusterStatus{Job: &v1.JobStatus{ID: id, State: state, SubmittedAt: &at}}
	}
	initializing := JobSummary{ID: "ddd", Name: "orders", State: flink.JobInitializing}
	for _, tc := range []struct {
		name   string
		spec   v1.FlinkClusterSpec
		status v1.FlinkClusterStatus
		jobs   []JobSummary
		want   outcome
		reason string
	}{
		{"declared job RUNNING", declared, withID("aaa"), []JobSummary{finished, running}, passes, ReasonJobRunning},
		{"declared job RESTARTING", declared, withID("bbb"), []JobSummary{running, restarting}, fails, ReasonJobNotRunning},
		{"declared job FINISHED", declared, withID("ccc"), []JobSummary{finished}, fails, ReasonJobNotRunning},
		{"declared job unknown to Flink", declared, withID("zzz"), []JobSummary{running}, fails, ReasonJobNotFound},
		{"no id yet, some job RUNNING", declared, submitted, []JobSummary{finished, running}, passes, ReasonJobRunning},
		{"no id yet, submitted, nothing RUNNING", declared, submitted, []JobSummary{finished}, fails, ReasonJobNotRunning},
		{"never submitted", declared, v1.FlinkClusterStatus{}, nil, unknowable, ReasonJobNotSubmitted},
		{"just submitted, not listed yet", declared, submittedAgo("ddd", "", time.Second), nil, unknowable, ReasonJobStarting},
		{"just submitted, INITIALIZING", declared, submittedAgo("ddd", "", time.Second), []JobSummary{initializing}, unknowable, ReasonJobStarting},
		{"INITIALIZING recorded, still starting", declared, submittedAgo("ddd", "INITIALIZING", time.Second), []JobSummary{initializing}, unknowable, ReasonJobStarting},
		{"INITIALIZING past the grace", declared, submittedAgo("ddd", "", startGrace), []JobSummary{initializing}, fails, ReasonJobNotRunning},
		{"not listed past the grace", declared, submittedAgo("ddd", "", startGrace), nil, fails, ReasonJobNotFound},
		{"seen RUNNING, then unknown", declared, submittedAgo("ddd", "RUNNING", time.Second), nil, fails, ReasonJobNotFound},
		{"just submitted, RESTARTING", declared, submittedAgo("bbb", "", time.Second), []JobSummary{restarting}, fails, ReasonJobNotRunning},
		{"session with a RUNNING job", session, v1.FlinkClusterStatus{}, []JobSummary{restarting, running}, passes, ReasonJobsRunning},
		{"session without a RUNNING job", session, v1.FlinkClusterStatus{}, []JobSummary{restarting, finished}, fails, ReasonNoJobsRunning},
		{"session without jobs", session, v1.FlinkClusterStatus{}, nil, fails, ReasonNoJobsRunning},
	} {
		fc := &v1.FlinkCluster{Spec: tc.spec, Status: tc.status}
		checkProbe(t, tc.name, jobsProbe(fc, tc.jobs, now), LevelJobs, tc.want, tc.reason)
	}
}

func TestDuringUpgrade(t *testing.T) {
	f := duringUpgrade(fail(LevelJobs, ReasonJobNotRunning))
	if !f.Unknown || f.Reason != ReasonJobNotRunning || !strings.Contains(f.Message, "upgrade") {
		t.Errorf("failure during upgrade = %+v", f)
	}
	if p := duringUpgrade(ok(LevelRest)); p != ok(LevelRest) {
		t.Errorf("a pass changed: %+v", p)
	}
}

func TestUnknownAbove(t *testing.T) {
	below := jobManagerProbe(workload.JobManager{StatefulSet: &appsv1.StatefulSet{}}, 0, true)
	p := unknownAbove(LevelRest, below)
	checkProbe(t, "above a failed JobManager", p, LevelRest, unknowable, ReasonJobManagerNotReady)
}

func TestSentence(t *testing.T) {
	if got := sentence("flink REST GET /overview: HTTP 503"); got != "Flink REST GET /overview: HTTP 503." {
		t.Errorf("sentence = %q", got)
	}
	if got := sentence("  "); got != "No details." {
		t.Errorf("empty sentence = %q", got)
	}
	long := sentence(strings.Repeat("é", maxMessage))
	if !utf8.ValidString(long) || len(long) > maxMessage+8 {
		t.Errorf("long sentence: %d bytes, valid %v", len(long), utf8.ValidString(long))
	}
}

package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/lifecycle"
)

// TestDecideDeletion: a deleted cluster's job is stopped with a savepoint
// before the deletion goes on; where that cannot be done the deletion is
// held with a reason, never carried out silently, until the user says to.
func TestDecideDeletion(t *testing.T) {
	now := time.Unix(1700000000, 0)
	const job = "0123456789abcdef0123456789abcdef"
	stop := func(ago time.Duration) *v1.SavepointInfo {
		return &v1.SavepointInfo{TriggerID: "t1", JobID: job, Reason: v1.SavepointForDelete, Stop: true, TriggeredAt: metav1.NewTime(now.Add(-ago))}
	}
	running := lifecycle.Flink{Reachable: true, JobFound: true, JobState: flink.JobRunning}
	with := func(f lifecycle.Flink, op *lifecycle.Operation, state flink.JobStatus) lifecycle.Flink {
		f.Pending, f.JobState = op, state
		return f
	}
	for _, tc := range []struct {
		name        string
		in          deletionInput
		wantProceed bool
		wantReason  string
		wantTrigger bool
		wantResend  bool
		wantText    string
	}{
		{"forced", deletionInput{forced: true, job: &v1.JobStatus{ID: job}}, true, ReasonDeletedWithout, false, false, v1.AnnotationDeleteWithoutSavepoint},
		{"no job submitted", deletionInput{}, true, ReasonNothingToSave, false, false, ""},
		{"stateless job", deletionInput{stateless: true, job: &v1.JobStatus{ID: job}}, true, ReasonNothingToSave, false, false, "stateless"},
		{"Flink unreachable: held", deletionInput{job: &v1.JobStatus{ID: job}}, false, ReasonFlinkUnreachable, false, false, "set the annotation " + v1.AnnotationDeleteWithoutSavepoint + "=true"},
		{"job unknown to Flink", deletionInput{job: &v1.JobStatus{ID: job}, flink: lifecycle.Flink{Reachable: true}}, true, ReasonNothingToSave, false, false, ""},
		{"running: stop it", deletionInput{job: &v1.JobStatus{ID: job}, flink: running}, false, ReasonSavingState, true, false, ""},
		{"restarting: held", deletionInput{job: &v1.JobStatus{ID: job}, flink: with(running, nil, flink.JobRestarting)}, false, ReasonJobNotRunning, false, false, "RESTARTING"},
		{"already ended", deletionInput{job: &v1.JobStatus{ID: job}, flink: with(running, nil, flink.JobCanceled)}, true, ReasonNothingToSave, false, false, "CANCELED"},
		{"stop in flight", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(time.Minute)}, flink: with(running, &lifecycle.Operation{}, flink.JobRunning), timeout: 5 * time.Minute},
			false, ReasonSavingState, false, false, ""},
		{"stop past its timeout: waits on the same trigger", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(6 * time.Minute)}, flink: with(running, &lifecycle.Operation{}, flink.JobRunning), timeout: 5 * time.Minute},
			false, ReasonSavepointTimedOut, false, false, "still waiting"},
		{"stop done", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(time.Minute)}, flink: with(running, &lifecycle.Operation{Done: true, Path: "s3://b/sp/savepoint-1"}, flink.JobFinished)},
			true, ReasonStoppedForDeletion, false, false, "s3://b/sp/savepoint-1"},
		{"stop failed, job still running: held, then tried again", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(10 * time.Second)}, flink: with(running, &lifecycle.Operation{Done: true, Failure: "boom"}, flink.JobRunning)},
			false, ReasonSavepointFailed, false, false, "boom"},
		{"stop failed a while ago: a new one", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(time.Minute)}, flink: with(running, &lifecycle.Operation{Done: true, Failure: "boom"}, flink.JobRunning)},
			false, ReasonSavingState, true, false, ""},
		{"stop forgotten, job finished: the savepoint from the history", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(time.Minute)},
			flink: func() lifecycle.Flink {
				f := with(running, &lifecycle.Operation{Unknown: true}, flink.JobFinished)
				f.Savepoints = []lifecycle.Checkpoint{{ID: 3, Path: "s3://b/sp/old", TriggeredAt: now.Add(-time.Hour)}, {ID: 9, Path: "s3://b/sp/final", TriggeredAt: now.Add(-time.Minute)}}
				return f
			}()}, true, ReasonStoppedForDeletion, false, false, "s3://b/sp/final"},
		{"stop never sent or forgotten, job running: the same trigger again", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: stop(time.Minute)}, flink: with(running, &lifecycle.Operation{Unknown: true}, flink.JobRunning)},
			false, ReasonSavingState, false, true, ""},
		{"a savepoint of another job is no stop of this one", deletionInput{job: &v1.JobStatus{ID: job, PendingSavepoint: &v1.SavepointInfo{JobID: "other", Stop: true}}, flink: with(running, &lifecycle.Operation{Done: true, Path: "s3://x"}, flink.JobRunning)},
			false, ReasonSavingState, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.now = now
			v := decideDeletion(tc.in)
			if v.proceed != tc.wantProceed || v.reason != tc.wantReason || (v.trigger != nil) != tc.wantTrigger || v.resend != tc.wantResend {
				t.Fatalf("verdict = %+v", v)
			}
			if !strings.Contains(v.message, tc.wantText) {
				t.Errorf("message %q lacks %q", v.message, tc.wantText)
			}
			if !v.proceed && v.requeue <= 0 {
				t.Errorf("a held deletion is never looked at again: %+v", v)
			}
			if tr := v.trigger; tr != nil && (!tr.Stop || tr.JobID != job || tr.Reason != v1.SavepointForDelete || len(tr.TriggerID) != 32 || !tr.TriggeredAt.Equal(&metav1.Time{Time: now})) {
				t.Errorf("trigger = %+v", tr)
			}
		})
	}
}

package faults

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func snap(path string, id int64, savepoint, complete bool) *flinksim.SnapshotRecord {
	return &flinksim.SnapshotRecord{Path: path, Exists: complete, Complete: complete, CheckpointID: id, Savepoint: savepoint}
}

func start(job string, s float64, restore *flinksim.SnapshotRecord) flinksim.JobStart {
	st := flinksim.JobStart{JobID: job, At: at(s), Restore: restore}
	if restore != nil {
		st.RestorePath = restore.Path
	}
	return st
}

func end(job string, s float64, state flink.JobStatus, newest *flinksim.SnapshotRecord) flinksim.JobEnd {
	return flinksim.JobEnd{JobID: job, At: at(s), State: state, Newest: newest}
}

func TestCheck(t *testing.T) {
	sp1 := snap("s3://b/sp/savepoint-1", 4, true, true)
	chk3 := snap("s3://b/chk/a/chk-3", 3, false, true)
	chk9 := snap("s3://b/chk/b/chk-9", 9, false, true)
	gone := snap("s3://b/chk/a/chk-3", 0, false, false)
	for _, tc := range []struct {
		name      string
		facts     Facts
		violation []string
	}{
		{"stop with savepoint, restore it", Facts{Record: flinksim.Record{MaxRunning: 1,
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, sp1)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobFinished, sp1)}}}, nil},
		{"two jobs at once", Facts{Record: flinksim.Record{MaxRunning: 2, MaxRunningJobs: []string{"a", "b"}}}, []string{OneJobRunning}},
		{"restore from a checkpoint the cancel deleted", Facts{Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, gone)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobCanceled, gone)}}}, []string{RestoreExists}},
		{"restore older than the newest at the stop", Facts{Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, chk3)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobFinished, sp1)}}}, []string{NewestState}},
		{"start without state after a stop", Facts{Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, nil)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobSuspended, chk3)}}}, []string{NewestState}},
		{"a failed restore leaves the newest state as it was", Facts{Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, sp1), start("c", 9, chk3)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobFinished, sp1), end("b", 8, flink.JobFailed, nil)}}}, []string{NewestState}},
		{"rollback to the pre-upgrade savepoint", Facts{Rollbacks: map[string]bool{"c": true}, Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, sp1), start("c", 12, sp1)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobFinished, sp1), end("b", 11, flink.JobCanceled, chk9)}}}, nil},
		{"the same restore, not declared a rollback", Facts{Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, sp1), start("c", 12, sp1)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobFinished, sp1), end("b", 11, flink.JobCanceled, chk9)}}}, []string{NewestState}},
		{"rollback to a point no stop left", Facts{Rollbacks: map[string]bool{"c": true}, Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, sp1), start("c", 12, chk3)},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobFinished, sp1), end("b", 11, flink.JobCanceled, chk9)}}}, []string{RollbackPoint}},
		{"a new FlinkCluster starts afresh; the old one's late end is not its history", Facts{Created: []time.Time{at(0), at(5)}, Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), start("b", 6, nil), start("c", 10, chk9)},
			Ends:   []flinksim.JobEnd{end("b", 8, flink.JobCanceled, chk9), end("a", 8.5, flink.JobSuspended, sp1)}}}, nil},
		{"a recovery is Flink's own restore", Facts{Record: flinksim.Record{
			Starts: []flinksim.JobStart{start("a", 1, nil), {JobID: "a", At: at(6), Recovered: true, RestorePath: chk3.Path, Restore: chk3}},
			Ends:   []flinksim.JobEnd{end("a", 5, flink.JobSuspended, sp1)}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range Check(tc.facts) {
				got = append(got, v.Invariant)
				if v.Detail == "" {
					t.Errorf("%s without detail", v.Invariant)
				}
			}
			if !slices.Equal(got, tc.violation) {
				t.Errorf("violations %v, want %v:\n%v", got, tc.violation, Check(tc.facts))
			}
		})
	}
}

func TestCheckSettled(t *testing.T) {
	finished := flinksim.ClusterView{Jobs: []flinksim.JobView{{ID: "a", State: flink.JobFinished, Present: true}}}
	runs := flinksim.ClusterView{Jobs: []flinksim.JobView{{ID: "a", State: flink.JobFinished, Present: true}, {ID: "b", State: flink.JobRunning, Present: true}}}
	cluster := func(conds ...metav1.Condition) *v1.FlinkCluster {
		fc := &v1.FlinkCluster{Spec: v1.FlinkClusterSpec{Job: &v1.JobSpec{State: v1.JobStateRunning}}}
		fc.Generation = 4
		fc.Status = v1.FlinkClusterStatus{ObservedGeneration: 4, Job: &v1.JobStatus{ID: "a", State: "FINISHED"}, Conditions: conds}
		return fc
	}
	cond := func(typ string, s metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, ObservedGeneration: gen, Reason: "R"}
	}
	for _, tc := range []struct {
		name    string
		fc      *v1.FlinkCluster
		view    flinksim.ClusterView
		wants   bool
		settled bool
	}{
		{"stopped, nothing says so", cluster(cond(v1.ConditionJobsRunning, metav1.ConditionTrue, 4), cond(v1.ConditionDegraded, metav1.ConditionFalse, 4)), finished, true, false},
		{"stopped, JobsRunning False", cluster(cond(v1.ConditionJobsRunning, metav1.ConditionFalse, 4)), finished, false, true},
		{"stopped, Degraded", cluster(cond(v1.ConditionDegraded, metav1.ConditionTrue, 4)), finished, false, true},
		{"stopped, said of an older generation", cluster(cond(v1.ConditionJobsRunning, metav1.ConditionFalse, 3)), finished, true, false},
		{"the status names a job Flink does not run", func() *v1.FlinkCluster {
			fc := cluster(cond(v1.ConditionJobsRunning, metav1.ConditionTrue, 4))
			fc.Status.Job = &v1.JobStatus{ID: "c", State: "RUNNING"}
			return fc
		}(), runs, false, false},
		{"a job runs", func() *v1.FlinkCluster {
			fc := cluster()
			fc.Status.Job = &v1.JobStatus{ID: "b", State: "RUNNING"}
			return fc
		}(), runs, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckSettled(tc.fc, tc.view)
			if (len(got) > 0) != tc.wants {
				t.Fatalf("violations %v, want some: %v", got, tc.wants)
			}
			if tc.wants && (got[0].Invariant != StoppedSaysWhy || !strings.Contains(got[0].Detail, "a FINISHED")) {
				t.Errorf("violation %v", got[0])
			}
			if ok, why := Settled(tc.fc, tc.view); ok != tc.settled {
				t.Errorf("settled = %v (%s)", ok, why)
			}
		})
	}
}

// TestGenerate: a seed is one schedule, steps have what they need, a
// removed job comes back before the end, and seeds differ.
func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	kinds := map[Kind]bool{}
	for seed := int64(1); seed <= 200; seed++ {
		s := Generate(seed)
		if again := Generate(seed); again.String() != s.String() {
			t.Fatalf("seed %d gave two schedules:\n%s\n%s", seed, s, again)
		}
		seen[s.String()] = true
		if s.SlowCleanup > 0 && !s.HighAvailability {
			t.Errorf("seed %d: a slow cleanup without high availability, which has none", seed)
		}
		hasJob, version := true, s.Releases[0]
		for _, st := range s.Steps {
			kinds[st.Kind] = true
			switch st.Kind {
			case Version:
				if st.Version == version || !slices.Contains(s.Releases, st.Version) {
					t.Errorf("seed %d: version step %s from %s", seed, st.Version, version)
				}
				version = st.Version
			case Parallelism:
				if st.Parallelism < 1 || st.Parallelism > Slots {
					t.Errorf("seed %d: parallelism %d", seed, st.Parallelism)
				}
			case RemoveJob, AddJob:
				if hasJob != (st.Kind == RemoveJob) {
					t.Errorf("seed %d: %s while the job is declared: %v", seed, st.Kind, hasJob)
				}
				hasJob = !hasJob
			case RESTOutage, SlowSavepoints, FailingSavepoints:
				if st.For <= 0 {
					t.Errorf("seed %d: %s without a duration", seed, st.Kind)
				}
			}
		}
		if !hasJob {
			t.Errorf("seed %d ends without its job:\n%s", seed, s)
		}
	}
	if len(seen) < 195 {
		t.Errorf("200 seeds gave %d schedules", len(seen))
	}
	if len(kinds) != 12 {
		t.Errorf("kinds drawn: %v", kinds)
	}
}

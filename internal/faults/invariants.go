package faults

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
)

// The invariants, judged from Flink's side (the simulator's record), never
// from the operator's status.
const (
	OneJobRunning  = "at most one job RUNNING per cluster"
	RestoreExists  = "every restore from a snapshot Flink completed and still retains"
	NewestState    = "never a restore older than the newest snapshot completed at the stop"
	RollbackPoint  = "a rollback restores the point recorded at a stop"
	StoppedSaysWhy = "no job left stopped without a condition saying so"
	Settles        = "the cluster settles after the schedule"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Detail    string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Facts are what a run leaves to judge.
type Facts struct {
	Record flinksim.Record
	// Rollbacks are the jobs the operator submitted as rollbacks, by ID
	// (its RolledBack events name them).
	Rollbacks map[string]bool
	// Created are the times the FlinkCluster was created under its name,
	// the first included: a new object starts a new job history.
	Created []time.Time
}

// Check judges a run's record. Within one life of the FlinkCluster, each
// submission after a job stopped restores the newest snapshot any stopped
// job completed (a removed and re-added spec.job included: its state is
// not the operator's to drop), except a rollback, which restores a point
// that was the newest at an earlier stop. Recoveries by a new leader are
// Flink's own restores, judged only for existence and overlap.
func Check(f Facts) []Violation {
	var out []Violation
	r := f.Record
	if r.MaxRunning > 1 {
		out = append(out, Violation{OneJobRunning, fmt.Sprintf("%d jobs RUNNING at once at %s: %s",
			r.MaxRunning, stamp(r.MaxRunningAt), strings.Join(r.MaxRunningJobs, ", "))})
	}
	epochOf := map[string]int{}
	type lineage struct {
		newest *flinksim.SnapshotRecord
		from   string // the job whose stop left it
		points map[string]bool
	}
	lives := map[int]*lineage{}
	life := func(epoch int) *lineage {
		if lives[epoch] == nil {
			lives[epoch] = &lineage{points: map[string]bool{}}
		}
		return lives[epoch]
	}
	for _, ev := range merge(r) {
		if s := ev.start; s != nil {
			epoch := epochAt(f.Created, s.At)
			epochOf[s.JobID] = epoch
			l := life(epoch)
			if s.RestorePath != "" && (s.Restore == nil || !s.Restore.Complete) {
				out = append(out, Violation{RestoreExists, fmt.Sprintf("job %s started at %s from %s, which %s", s.JobID, stamp(s.At), s.RestorePath, missing(s.Restore))})
			}
			switch {
			case s.Recovered:
			case f.Rollbacks[s.JobID]:
				if !l.points[s.RestorePath] {
					out = append(out, Violation{RollbackPoint, fmt.Sprintf("rollback job %s restored from %q, which no stop left as its newest snapshot", s.JobID, s.RestorePath)})
				}
				if s.Restore != nil {
					l.newest, l.from = s.Restore, "the rollback"
				}
			case l.newest != nil && s.RestorePath != l.newest.Path:
				from := "without state"
				if s.RestorePath != "" {
					from = "from " + s.RestorePath + describe(s.Restore)
				}
				out = append(out, Violation{NewestState, fmt.Sprintf("job %s started at %s %s; the newest snapshot completed at the stop of job %s is %s%s",
					s.JobID, stamp(s.At), from, l.from, l.newest.Path, describe(l.newest))})
			}
			continue
		}
		e := ev.end
		epoch, ok := epochOf[e.JobID]
		if !ok {
			epoch = epochAt(f.Created, e.At)
		}
		if e.Newest != nil {
			l := life(epoch)
			l.newest, l.from = e.Newest, e.JobID
			l.points[e.Newest.Path] = true
		}
	}
	return out
}

// CheckSettled judges the cluster once the schedule is over and it
// settled: a cluster that should run its job and runs none says so in a
// condition of its current generation.
func CheckSettled(fc *v1.FlinkCluster, view flinksim.ClusterView) []Violation {
	if fc.Spec.Job == nil || fc.Spec.Job.State == v1.JobStateSuspended || len(runningIDs(view)) > 0 || explained(fc) {
		return nil
	}
	var states []string
	for _, j := range view.Jobs {
		if j.Present {
			states = append(states, j.ID+" "+string(j.State))
		}
	}
	return []Violation{{StoppedSaysWhy, fmt.Sprintf("no job RUNNING (Flink has: %s), status.job %s, and no condition of generation %d says so: %s",
		orNone(states), jobStatus(fc), fc.Generation, conditions(fc))}}
}

// Settled reports whether the cluster is quiescent: its status is of the
// current generation, no upgrade or savepoint is in flight, and either
// Flink runs the job the status names or a condition says why not.
func Settled(fc *v1.FlinkCluster, view flinksim.ClusterView) (bool, string) {
	st := fc.Status
	switch {
	case st.ObservedGeneration != fc.Generation:
		return false, fmt.Sprintf("status of generation %d, spec %d", st.ObservedGeneration, fc.Generation)
	case st.Upgrade != nil:
		return false, fmt.Sprintf("upgrade in flight: %+v", *st.Upgrade)
	case fc.Spec.Job == nil:
		return true, ""
	case st.Job == nil:
		return false, "no job status"
	case st.Job.PendingSavepoint != nil:
		return false, fmt.Sprintf("savepoint in flight: %+v", *st.Job.PendingSavepoint)
	}
	if runs(view, st.Job.ID) && st.Job.State == string(flink.JobRunning) {
		return true, ""
	}
	if explained(fc) {
		return true, ""
	}
	return false, fmt.Sprintf("status.job %s, Flink runs %s", jobStatus(fc), orNone(runningIDs(view)))
}

// runs: Flink runs the job with this ID (another may run beside it: that
// is OneJobRunning's business).
func runs(view flinksim.ClusterView, id string) bool {
	for _, j := range view.Jobs {
		if j.Present && j.State == flink.JobRunning && j.ID == id {
			return true
		}
	}
	return false
}

func runningIDs(view flinksim.ClusterView) []string {
	var out []string
	for _, j := range view.Jobs {
		if j.Present && j.State == flink.JobRunning {
			out = append(out, j.ID)
		}
	}
	return out
}

// explained: a condition of the current generation says the job does not
// run or the cluster failed to keep its spec.
func explained(fc *v1.FlinkCluster) bool {
	for _, c := range []struct {
		typ  string
		want metav1.ConditionStatus
	}{{v1.ConditionJobsRunning, metav1.ConditionFalse}, {v1.ConditionDegraded, metav1.ConditionTrue}} {
		if got := meta.FindStatusCondition(fc.Status.Conditions, c.typ); got != nil && got.Status == c.want && got.ObservedGeneration == fc.Generation {
			return true
		}
	}
	return false
}

type event struct {
	start *flinksim.JobStart
	end   *flinksim.JobEnd
}

// merge orders starts and ends by time; at the same instant an end comes
// first (a stop completes before the submission it allowed).
func merge(r flinksim.Record) []event {
	var out []event
	for i := range r.Starts {
		out = append(out, event{start: &r.Starts[i]})
	}
	for i := range r.Ends {
		out = append(out, event{end: &r.Ends[i]})
	}
	at := func(e event) time.Time {
		if e.start != nil {
			return e.start.At
		}
		return e.end.At
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := at(out[i]), at(out[j])
		if a.Equal(b) {
			return out[i].end != nil && out[j].start != nil
		}
		return a.Before(b)
	})
	return out
}

// epochAt is the index of the FlinkCluster's life at t.
func epochAt(created []time.Time, t time.Time) int {
	n := 0
	for i, c := range created {
		if !c.After(t) {
			n = i
		}
	}
	return n
}

func missing(s *flinksim.SnapshotRecord) string {
	switch {
	case s == nil || !s.Exists:
		return "did not exist then"
	case s.CheckpointID == 0:
		return "held no snapshot Flink completed"
	}
	return "had lost state files"
}

func describe(s *flinksim.SnapshotRecord) string {
	if s == nil || s.CheckpointID == 0 {
		return ""
	}
	kind := "checkpoint"
	if s.Savepoint {
		kind = "savepoint"
	}
	at := ""
	if !s.CompletedAt.IsZero() {
		at = ", completed " + stamp(s.CompletedAt)
	}
	return fmt.Sprintf(" (%s %d%s)", kind, s.CheckpointID, at)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func jobStatus(fc *v1.FlinkCluster) string {
	if fc.Status.Job == nil {
		return "none"
	}
	return fmt.Sprintf("%s %q", fc.Status.Job.ID, fc.Status.Job.State)
}

func conditions(fc *v1.FlinkCluster) string {
	var out []string
	for _, c := range fc.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s (%s, generation %d)", c.Type, c.Status, c.Reason, c.ObservedGeneration))
	}
	return orNone(out)
}

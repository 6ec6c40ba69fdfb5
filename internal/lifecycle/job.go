package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// maxResubmitBackoff bounds the wait between submissions of a job that does
// not reach Flink.
const maxResubmitBackoff = 5 * time.Minute

// Facts about the job, one helper each.

// alive: Flink runs the recorded job (in any state short of terminal).
func alive(in Input) bool { return in.Flink.JobFound && !in.Flink.JobState.Terminal() }

// gone: Flink answered and the recorded job is terminal or unknown, so no
// JobManager, new or recovering, will run it again. A CANCELED or FINISHED
// job is globally terminal: Flink's HA services drop its job graph.
func gone(in Input) bool { return in.Flink.Reachable && !alive(in) }

// neverReached: the recorded job was submitted but Flink never showed it
// (a failed jar download, an operator restart between record and send, or
// a JobManager lost before the operator's first look).
func neverReached(job *v1.JobStatus) bool {
	return job.ID != "" && job.SubmittedAt != nil && job.State == ""
}

// neverGot: Flink answers that it does not know a job it never showed, and
// it would know it had it got it, so sending it again loses nothing.
// Either its JobManager has been ready since before the submission (a
// Dispatcher keeps every job it accepted, a terminal one too, for
// jobstore.expiration-time, an hour by default), or Flink runs with high
// availability, whose new leader recovers every job it accepted
// (Dispatcher#persistAndRunJob writes the JobGraph to the HA store before
// running it). A JobManager without HA that became ready after the
// submission may have run the job, and checkpointed, then lost it: the
// operator looks only every poll, and a checkpoint can complete within
// one (see ran). Both times are kept to the second, by two clocks: the
// JobManager's readiness probe waits 5 s after its start, so a process
// that started after the submission turns ready more than the rounding
// and a few seconds of skew later. Left open with HA: a job that ended
// and that Flink cleaned up before a failover, all between two looks, is
// forgotten by the new leader too, but its job result store keeps its
// entry (the operator renders job-result-store.delete-on-commit: false),
// so Flink refuses the resend (EndedUnseen).
func neverGot(in Input, job *v1.JobStatus) bool {
	if in.Flink.JobFound || !neverReached(job) || in.EndedUnseen {
		return false
	}
	return in.Deployed.HighAvailable() || !in.JobManagerSince.IsZero() && !in.JobManagerSince.After(job.SubmittedAt.Time)
}

// observe copies what Flink says of the job into the status.
func (s *Step) observe() {
	in, job := s.in, s.job()
	if !in.Flink.JobFound {
		return
	}
	job.State = string(in.Flink.JobState)
	job.FailureCause = ""
	if in.Flink.JobState == flink.JobFailed {
		job.FailureCause = in.Flink.FailureCause
	}
	if in.Flink.HistoryUnread || in.Flink.HistoryGone || starting(in.Flink.JobState) {
		// The checkpoint history did not answer, or Flink no longer has
		// it, or shows none while the job starts (rule.go beforeStop):
		// its zero count is not the job's, and a recorded count of none
		// would later read as a job that never checkpointed (lost).
		return
	}
	job.CheckpointsCompleted = in.Flink.CheckpointsCompleted
	if cp := in.Flink.LatestCheckpoint; cp != nil && cp.Path != "" &&
		(job.LastCheckpoint == nil || job.LastCheckpoint.Path != cp.Path) {
		job.LastCheckpoint = &v1.CheckpointInfo{ID: cp.ID, Path: cp.Path, JobID: job.ID, ObservedAt: s.now()}
	}
}

// recordJob records the job as Flink reports it now (observe), and looks
// again while it is still starting, where no phase will poll it: the
// health poller wakes a cluster only when its verdict changes, and a job
// turning RUNNING from INITIALIZING changes none (fault schedule 18: a job
// recovering from a JobManager loss when an upgrade began, whose savepoint
// then failed, stayed INITIALIZING in the status for good while Flink ran
// it).
func (s *Step) recordJob() {
	s.observe()
	if starting(s.in.Flink.JobState) {
		s.requeue(Poll)
	}
}

// FlinkProgressOnly reports whether next differs from recorded only in
// what Flink moves on by itself: the completed-checkpoint count, a newer
// checkpoint of the job already recorded, and the state of a job that was
// submitted and not yet seen (INITIALIZING, CREATED). These ride on the
// next write made for another reason. Written alone they would cost a
// write per checkpoint of every reconcile, and one per job cluster from a
// new leader, which finds them moved on since the last write.
//
// A newer checkpoint rides along only while the recorded one stays among
// the retained checkpoints Flink keeps (CheckpointStore subsumes the
// oldest beyond state.checkpoints.num-retained): it is the restore point
// of a job a JobManager without HA forgets, and a subsumed path restores
// nothing. With retained 1 every newer checkpoint is written.
func FlinkProgressOnly(recorded, next *v1.FlinkClusterStatus, retained int32) bool {
	was, now := recorded.Job, next.Job
	if was == nil || now == nil || was.ID != now.ID {
		return false
	}
	job := *now
	job.CheckpointsCompleted = was.CheckpointsCompleted
	if cp, old := now.LastCheckpoint, was.LastCheckpoint; cp != nil && old != nil && cp.JobID == old.JobID && cp.ID >= old.ID &&
		(cp.ID == old.ID || now.CheckpointsCompleted-was.CheckpointsCompleted < int64(retained)-1) {
		job.LastCheckpoint = old
	}
	if was.State == "" && starting(flink.JobStatus(now.State)) {
		job.State = ""
	}
	n := *next
	n.Job = &job
	return equality.Semantic.DeepEqual(&n, recorded)
}

// starting: a state a submitted job passes through before RUNNING.
func starting(s flink.JobStatus) bool { return s == flink.JobInitializing || s == flink.JobCreated }

// submit records a new job ID and its restore path before the controller
// submits it, so a repeated submission after a restart is refused by Flink
// as a duplicate instead of running twice.
func (s *Step) submit(restorePath, reason string) {
	in, job := s.in, s.job()
	firstJob := job.ID == ""
	job.ID = jobID(in.UID, in.Generation, job.ID, in.Now)
	job.State = ""
	job.FailureCause = ""
	job.EndedAt = nil
	job.RestoredFrom = restorePath
	now := s.now()
	job.SubmittedAt = &now
	job.CheckpointsCompleted = 0
	s.act(ActSubmit, restorePath)
	switch {
	case restorePath != "":
		s.event(false, reason, "Submitting job %s restored from %s", job.ID, restorePath)
	case firstJob && reason == "Submitted":
		// A new cluster's first job, like its first children, is what the
		// status says (job.id, job.submittedAt, JobsRunning): no event.
	default:
		s.event(false, reason, "Submitting job %s without state", job.ID)
	}
	s.requeue(Poll)
}

// resubmit sends the recorded job again, under the same ID and from the
// same state, without a status write, backing off as the failure lasts.
func (s *Step) resubmit() {
	in, job := s.in, s.job()
	s.act(ActSubmit, job.RestoredFrom)
	s.requeue(min(max(in.Now.Sub(job.SubmittedAt.Time), Poll), maxResubmitBackoff))
}

// newestState is the state a job restarts from: the newer of the last
// savepoint and the last checkpoint the operator saw, else the spec's
// initial savepoint.
func newestState(job *v1.JobStatus, spec *v1.JobSpec) string {
	sp, cp := job.LastSavepoint, job.LastCheckpoint
	switch {
	case sp != nil && sp.Path != "" && (cp == nil || !checkpointNewer(job.ID, cp, sp)):
		return sp.Path
	case cp != nil:
		return cp.Path
	}
	return spec.InitialSavepointPath
}

// checkpointNewer orders a checkpoint against a savepoint. Of two jobs, the
// current one's state is newer (it started from the other's or later).
// Within one job, a stop-with-savepoint is the last state it wrote, and
// otherwise the shared checkpoint counter orders them; the operator's
// clock decides only when the savepoint's ID is unknown.
func checkpointNewer(current string, cp *v1.CheckpointInfo, sp *v1.SavepointInfo) bool {
	switch {
	case cp.JobID != sp.JobID:
		return cp.JobID == current
	case sp.Stop:
		return false
	case sp.CheckpointID > 0:
		return cp.ID > sp.CheckpointID
	}
	return sp.CompletedAt == nil || cp.ObservedAt.After(sp.CompletedAt.Time)
}

// savedState is the state a restart restores from when nothing runs to
// take a savepoint: the newest state held, or none for stateless jobs.
func savedState(job *v1.JobStatus, spec *v1.JobSpec) string {
	if spec.UpgradeMode == v1.UpgradeStateless {
		return ""
	}
	return newestState(job, spec)
}

// jobID and triggerID are Flink's 32-hex-digit IDs, derived from the cluster
// and the moment of the decision and recorded in status before use.
// The previous job's ID is part of the seed, so a new job never takes the
// ID of the one it replaces (Flink refuses an ID it holds as terminal).
func jobID(uid string, generation int64, previous string, now time.Time) string {
	return hexID(fmt.Sprintf("job/%s/%d/%s/%d", uid, generation, previous, now.UnixNano()))
}

func triggerID(uid, job, reason string, now time.Time) string {
	return hexID(fmt.Sprintf("trigger/%s/%s/%s/%d", uid, job, reason, now.UnixNano()))
}

func hexID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:16])
}

// orUnknown names a state path, none when empty.
func orUnknown(s string) string { return orNone(s, "no saved state") }

// jobState names the job's state as Flink reported it; a job Flink did
// not show (unreachable, or not known) is in no state it reported, which
// the messages said as "no saved state" until 2026-12-07.
func jobState(f Flink) string {
	return orNone(string(f.JobState), "unknown: Flink did not report the job")
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

package flinksim

import (
	"path"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// The record: what Flink itself saw of a cluster's jobs, in the order it
// happened, for tests that judge an operator from Flink's side (which job
// ran beside which, what each restored from, what state the previous one
// left). It is an observation only: it changes no behaviour, and it keeps
// counting across a cluster's re-creation under the same name, as the
// storage and HA services it observes do.

// Record is a cluster's job history as its JobManagers saw it.
type Record struct {
	// Starts are the job submissions (Dispatcher#submitJob) and the
	// recoveries of a new leader (SessionDispatcherLeaderProcess#onStart),
	// oldest first.
	Starts []JobStart `json:"starts"`
	// Ends are the jobs that stopped: a globally terminal state, or
	// SUSPENDED when their JobManager stopped under them, oldest first.
	Ends []JobEnd `json:"ends"`
	// MaxRunning is the most jobs RUNNING at once over every live
	// Dispatcher of the cluster; MaxRunningAt and MaxRunningJobs say when
	// that was first reached and which jobs they were.
	MaxRunning     int       `json:"maxRunning"`
	MaxRunningAt   time.Time `json:"maxRunningAt,omitzero"`
	MaxRunningJobs []string  `json:"maxRunningJobs,omitempty"`
}

// JobStart is one job accepted by a Dispatcher.
type JobStart struct {
	JobID string    `json:"jobID"`
	At    time.Time `json:"at"`
	// Recovered is a job a new leader read from the HA job graph store and
	// restores from the store's latest checkpoint, not a REST submission.
	Recovered bool `json:"recovered,omitempty"`
	// RestorePath is the submission's SavepointRestoreSettings path (for
	// a recovery, the HA store's latest checkpoint); empty for none.
	RestorePath string `json:"restorePath,omitempty"`
	// Restore is the snapshot at RestorePath as Flink would find it at
	// that moment; nil without a path.
	Restore *SnapshotRecord `json:"restore,omitempty"`
}

// JobEnd is one job that stopped.
type JobEnd struct {
	JobID string    `json:"jobID"`
	At    time.Time `json:"at"`
	// State is FINISHED, CANCELED, FAILED, or SUSPENDED (the JobManager
	// stopped: SchedulerBase#closeAsync suspends the job, not terminal).
	State flink.JobStatus `json:"state"`
	// Newest is the newest checkpoint or savepoint the job completed
	// (CheckpointStatsTracker's latest completed ones, by completion),
	// its files as they are once the end's cleanup ran; nil when it
	// completed none.
	Newest *SnapshotRecord `json:"newest,omitempty"`
}

// SnapshotRecord is a checkpoint or savepoint at a path, as
// AbstractFsCheckpointStorageAccess#resolveCheckpointPointer would find it.
type SnapshotRecord struct {
	Path string `json:"path"`
	// Exists is true when its _metadata is there.
	Exists bool `json:"exists"`
	// Complete is true when it is a snapshot Flink completed and has not
	// discarded, with every state file still there: a restore reads it.
	Complete bool `json:"complete"`
	// CheckpointID and Savepoint are Flink's ID and kind; zero when the
	// path holds no snapshot Flink completed.
	CheckpointID int64 `json:"checkpointID,omitempty"`
	Savepoint    bool  `json:"savepoint,omitempty"`
	// CompletedAt is when Flink completed it; zero when unknown.
	CompletedAt time.Time `json:"completedAt,omitzero"`
}

// recordStart notes a submission the Dispatcher accepted.
func (e *Engine) recordStart(c *cluster, d *dispatcher, now time.Time, sub *submission) {
	s := JobStart{JobID: sub.id, At: now, RestorePath: sub.restorePath}
	if sub.restorePath != "" {
		s.Restore = e.snapshotAt(d, sub.restorePath)
	}
	c.record.Starts = append(c.record.Starts, s)
}

// recordRecovery notes a job a new leader recovers: it restores the HA
// store's latest checkpoint (DefaultCompletedCheckpointStore), if any.
func (e *Engine) recordRecovery(c *cluster, d *dispatcher, now time.Time, hj *haJob) {
	s := JobStart{JobID: hj.sub.id, At: now, Recovered: true}
	if n := len(hj.checkpoints); n > 0 {
		s.RestorePath = hj.checkpoints[n-1].snap.pointer
		s.Restore = e.snapshotAt(d, s.RestorePath)
	}
	c.record.Starts = append(c.record.Starts, s)
}

// recordEnd notes a job that reached a globally terminal state, after
// the completed checkpoint store's shutdown discarded what it does.
func (e *Engine) recordEnd(c *cluster, j *job, now time.Time, s flink.JobStatus) {
	end := JobEnd{JobID: j.id, At: now, State: s}
	if st := newestCompleted(j); st != nil {
		end.Newest = e.snapshotAt(j.d, st.ExternalPath)
	}
	c.record.Ends = append(c.record.Ends, end)
}

// recordSuspended notes the jobs a stopping JobManager suspended (those
// not yet globally terminal before it stopped), after its checkpoint
// stores' shutdown discarded what they do.
func (e *Engine) recordSuspended(c *cluster, jobs []*job, now time.Time) {
	for _, j := range jobs {
		e.recordEnd(c, j, now, flink.JobSuspended)
	}
}

// live is the Dispatcher's jobs not yet globally terminal.
func (d *dispatcher) live() []*job {
	var out []*job
	for _, id := range d.order {
		if j := d.jobs[id]; !j.state.Terminal() {
			out = append(out, j)
		}
	}
	return out
}

// recordRunning updates the most jobs RUNNING at once.
func (c *cluster) recordRunning(now time.Time) {
	var ids []string
	for d := range c.dispatchers() {
		for _, id := range d.order {
			if d.jobs[id].state == flink.JobRunning {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > c.record.MaxRunning {
		c.record.MaxRunning, c.record.MaxRunningAt, c.record.MaxRunningJobs = len(ids), now, ids
	}
}

// newestCompleted is the later of the job's latest completed checkpoint
// and savepoint, by completion time, then by ID (one counter orders both).
func newestCompleted(j *job) *flink.CheckpointStatistics {
	cp, sp := j.latestCompleted, j.latestSavepoint
	switch {
	case cp == nil:
		return sp
	case sp == nil:
		return cp
	case sp.LatestAckTimestamp > cp.LatestAckTimestamp || sp.LatestAckTimestamp == cp.LatestAckTimestamp && sp.ID > cp.ID:
		return sp
	}
	return cp
}

// snapshotAt looks at a path as the Dispatcher's JobManager resolves it:
// the directory's _metadata, or the file itself.
func (e *Engine) snapshotAt(d *dispatcher, pointer string) *SnapshotRecord {
	r := &SnapshotRecord{Path: pointer}
	l, err := d.locate(pointer)
	if err != nil {
		return r
	}
	if path.Base(l.path) != "_metadata" {
		l = l.child("_metadata")
	}
	r.Exists = e.fs.exists(l)
	if snap := e.snapshots[l]; snap != nil {
		ok, _ := snap.readable(e.fs)
		r.Complete = r.Exists && ok
		r.CheckpointID, r.Savepoint = snap.id, snap.savepoint
	}
	r.CompletedAt = e.completedAt(pointer)
	return r
}

// completedAt finds when Flink completed the snapshot at pointer, in the
// statistics of any job that took it (or, once a recovery replaced that
// job, in the record of its end); zero when none has it any more.
func (e *Engine) completedAt(pointer string) time.Time {
	for _, c := range e.clusters {
		for _, end := range c.record.Ends {
			if n := end.Newest; n != nil && n.Path == pointer && !n.CompletedAt.IsZero() {
				return n.CompletedAt
			}
		}
		for _, h := range c.history {
			j := h.job
			for _, st := range append([]*flink.CheckpointStatistics{j.latestCompleted, j.latestSavepoint}, historyRefs(j)...) {
				if st != nil && st.Status == "COMPLETED" && st.ExternalPath == pointer {
					return time.UnixMilli(st.LatestAckTimestamp).UTC()
				}
			}
		}
	}
	return time.Time{}
}

func historyRefs(j *job) []*flink.CheckpointStatistics {
	out := make([]*flink.CheckpointStatistics, len(j.history))
	for i := range j.history {
		out[i] = &j.history[i]
	}
	return out
}

// clone copies a record for a view: its snapshot records are not shared.
func (r Record) clone() Record {
	out := Record{MaxRunning: r.MaxRunning, MaxRunningAt: r.MaxRunningAt, MaxRunningJobs: append([]string(nil), r.MaxRunningJobs...),
		Starts: make([]JobStart, len(r.Starts)), Ends: make([]JobEnd, len(r.Ends))}
	for i, s := range r.Starts {
		s.Restore = s.Restore.clone()
		out.Starts[i] = s
	}
	for i, end := range r.Ends {
		end.Newest = end.Newest.clone()
		out.Ends[i] = end
	}
	return out
}

func (s *SnapshotRecord) clone() *SnapshotRecord {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

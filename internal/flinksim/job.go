package flinksim

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// job is one job of a Dispatcher: its JobMaster, scheduler and
// CheckpointCoordinator, as DefaultScheduler and DefaultExecutionGraph
// move it through Flink's job states. Its subtasks move together: the
// simulated job graph is one vertex of `parallelism` subtasks in one slot
// sharing group.
type job struct {
	d           *dispatcher
	sub         *submission
	id, name    string
	parallelism int
	recovered   bool

	state      flink.JobStatus
	timestamps map[flink.JobStatus]time.Time
	start, end time.Time
	// until ends the current timed state: INITIALIZING, CREATED,
	// RESTARTING, CANCELLING, FAILING.
	until time.Time
	// cancelAfterInit is a cancel that arrived while INITIALIZING.
	cancelAfterInit bool
	// graphless: the AdaptiveScheduler is in a state without an
	// ExecutionGraph (WaitingForResources, CreatingExecutionGraph), or the
	// job ended in one; its checkpoint statistics are then empty.
	graphless bool

	// tasks is the ExecutionState of every subtask; slots the
	// TaskManagers (process IDs) holding them, one entry per slot.
	tasks       string
	tasksUntil  time.Time // DEPLOYING ends
	scheduledAt time.Time // slot requests were made
	slots       []string

	// What the job's configuration sets (CheckpointConfig,
	// CheckpointingOptions, JobManagerOptions).
	interval, timeout time.Duration
	tolerable         int
	retention         props
	retained          int
	checkpointDir     string // "" means JobManagerCheckpointStorage
	slotTimeout       time.Duration
	strategy          restartStrategy

	// The CheckpointCoordinator.
	nextID       int64
	nextPeriodic time.Time // zero while the periodic scheduler is stopped
	pending      []*pending
	store        []*snapshot // the CompletedCheckpointStore, oldest first
	failedInARow int
	stopping     bool
	restoreFrom  *snapshot

	// Statistics (CheckpointStatsTracker) and the exception history.
	history                          []flink.CheckpointStatistics
	latestCompleted, latestSavepoint *flink.CheckpointStatistics
	latestFailed                     *flink.CheckpointStatistics
	completedCount, failedCount      int64
	restoredCount                    int64
	restored                         *flink.RestoredCheckpointStatistics
	failureCause                     string
	failedAt                         time.Time
	// exceptions is the root exception history, oldest first; pending the
	// failure a restart archives once it restarts the tasks.
	exceptions     []rootException
	pendingFailure *rootException

	// resultOnly: the Dispatcher knows the job only by its result, as a
	// CheckpointResourcesCleanupRunner shows it (dispatcher.cleanUpRecovered).
	resultOnly bool

	// vertices is the job's ExecutionGraph; parallelism above is its slot
	// count (the widest vertex).
	vertices []*vertex
	// adaptive is set when jobmanager.scheduler is adaptive; then waiting
	// is WaitingForResources, sufficientAt when its free slots became
	// sufficient, waitExpired that its resource wait timeout passed, and
	// the rest track a rescale in Executing.
	adaptive             *adaptiveSettings
	waiting, waitExpired bool
	sufficientAt         time.Time
	requirementsChanged  bool
	executingSince       time.Time
	rescaleWanted        time.Time
	rescaleAt            time.Time
	sufficientSince      time.Time
	lastCompletedAt      time.Time
	// numRestarts is the job's numRestarts metric: restarts and rescales.
	numRestarts int

	// archivedAt is when the job went into its process's job store;
	// unlisted that the store no longer lists it, expired.
	archivedAt time.Time
	unlisted   bool
}

// rootException is a RootExceptionHistoryEntry.
type rootException struct {
	cause string
	at    time.Time
	// task is the failed task; "" for a global failure.
	task, location string
}

// props are a snapshot's CheckpointProperties: whether it is deleted when
// subsumed, and when the job ends FINISHED, CANCELED or FAILED or is
// SUSPENDED (its JobManager shut down).
type props struct {
	subsumed, finished, cancelled, failed, suspended bool
	// savepoint is CheckpointProperties#isSavepoint: the snapshot's type
	// as the job holds it, which latest.restored.is_savepoint reports.
	savepoint bool
}

// retentionProps maps execution.checkpointing.externalized-checkpoint-
// retention (the same key in every minor) to CheckpointProperties#
// forCheckpoint: NO_EXTERNALIZED_CHECKPOINTS is
// CHECKPOINT_NEVER_RETAINED, DELETE_ON_CANCELLATION is
// CHECKPOINT_RETAINED_ON_FAILURE (deleted on suspension too), and only
// RETAIN_ON_CANCELLATION (CHECKPOINT_RETAINED_ON_CANCELLATION) keeps a
// checkpoint when the job is canceled or suspended.
func retentionProps(v string) props {
	switch v {
	case "RETAIN_ON_CANCELLATION":
		return props{subsumed: true, finished: true}
	case "DELETE_ON_CANCELLATION":
		return props{subsumed: true, finished: true, cancelled: true, suspended: true}
	}
	return props{subsumed: true, finished: true, cancelled: true, failed: true, suspended: true}
}

// shouldDiscard is CompletedCheckpoint#shouldBeDiscardedOnShutdown.
func (p props) shouldDiscard(s flink.JobStatus) bool {
	return s == flink.JobFinished && p.finished || s == flink.JobCanceled && p.cancelled ||
		s == flink.JobFailed && p.failed || s == flink.JobSuspended && p.suspended
}

type pendingKind string

const (
	kindCheckpoint      pendingKind = "checkpoint"
	kindSavepoint       pendingKind = "savepoint"
	kindStop            pendingKind = "stop"
	kindCancelSavepoint pendingKind = "savepoint-and-cancel"
)

// pending is a PendingCheckpoint: triggered, not yet complete.
type pending struct {
	id        int64
	kind      pendingKind
	periodic  bool
	triggered time.Time
	due       time.Time
	target    string
	format    flink.SavepointFormatType
	result    *opResult // the REST trigger's, if any
}

func (p *pending) savepoint() bool { return p.kind != kindCheckpoint }

// newJob creates a job's JobMaster: INITIALIZING until it is built
// (DefaultJobMasterServiceProcess).
func (e *Engine) newJob(c *cluster, d *dispatcher, sub *submission, now time.Time, recovered bool) *job {
	j := &job{
		d: d, sub: sub, id: sub.id, name: sub.name, parallelism: sub.parallelism, recovered: recovered,
		start: now, timestamps: map[flink.JobStatus]time.Time{}, nextID: 1, tasks: "CREATED",
	}
	for _, v := range sub.graph {
		cp := *v
		j.vertices = append(j.vertices, &cp)
	}
	if len(j.vertices) == 0 {
		// A job recovered from HA storage written before graphs existed,
		// or built in a test without a program.
		j.vertices, _ = buildGraph(max(1, sub.parallelism), nil, sub.conf)
	}
	if hj := j.haJob(); recovered && hj != nil {
		// The recovered job graph carries the resource requirements last
		// persisted for it, which the AdaptiveScheduler starts from
		// (JobResourceRequirements#readFromJobGraph).
		for id, b := range hj.requirements {
			if v := j.vertex(id); v != nil {
				v.lower, v.upper = b[0], b[1]
			}
		}
	}
	j.parallelism = j.slotsNeeded()
	j.setState(flink.JobInitializing, now)
	j.until = now.Add(e.opts.InitializationDelay)
	h := c.history[j.id]
	if h == nil || !recovered {
		if h == nil {
			c.historyOrder = append(c.historyOrder, j.id)
		}
		h = &jobHistory{}
		c.history[j.id] = h
		c.totals.JobsSubmitted++
	}
	h.job, h.present = j, true
	return j
}

func (j *job) setState(s flink.JobStatus, now time.Time) {
	j.state = s
	j.timestamps[s] = now
	if s.Terminal() {
		j.end = now
	}
}

// jobEvent is a job's next timed change.
func (e *Engine) jobEvent(c *cluster, j *job) (time.Time, func(time.Time)) {
	switch j.state {
	case flink.JobInitializing:
		return j.until, func(at time.Time) { e.initialize(c, j, at) }
	case flink.JobCreated:
		if j.waiting {
			return e.waitingEvent(c, j)
		}
		return j.until, func(at time.Time) { e.startScheduling(c, j, at) }
	case flink.JobRestarting:
		return j.until, func(at time.Time) { e.restartTasks(c, j, at) }
	case flink.JobCancelling:
		return j.until, func(at time.Time) { e.terminate(c, j, at, flink.JobCanceled) }
	case flink.JobFailing:
		return j.until, func(at time.Time) { e.terminate(c, j, at, flink.JobFailed) }
	case flink.JobRunning:
	default:
		return time.Time{}, nil
	}
	switch j.tasks {
	case "SCHEDULED":
		if j.slotTimeout > 0 {
			return j.scheduledAt.Add(j.slotTimeout), func(at time.Time) {
				// DeclarativeSlotPoolBridge times out the slot requests
				// after slot.request.timeout.
				e.failJob(c, j, at, fmt.Sprintf("org.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException: Slot request bulk is not fulfillable! Could not allocate the required slot within slot request timeout (%d ms)", j.slotTimeout.Milliseconds()), false)
			}
		}
		return time.Time{}, nil
	case "DEPLOYING":
		return j.tasksUntil, func(at time.Time) { e.deployed(c, j, at) }
	case "INITIALIZING":
		return j.tasksUntil, func(at time.Time) { e.initialized(c, j, at) }
	}
	var (
		best time.Time
		fn   func(time.Time)
	)
	consider := func(t time.Time, f func(time.Time)) {
		if fn == nil || t.Before(best) {
			best, fn = t, f
		}
	}
	for _, p := range j.pending {
		p := p
		consider(p.triggered.Add(j.timeout), func(at time.Time) {
			e.failPending(c, j, p, at, "Checkpoint expired before completing.", true)
		})
		if e.fault(c, p) != FaultStall {
			consider(p.due, func(at time.Time) { e.completePending(c, j, p, at) })
		}
	}
	if !j.nextPeriodic.IsZero() {
		consider(j.nextPeriodic, func(at time.Time) { e.triggerPeriodic(c, j, at) })
	}
	if !j.rescaleAt.IsZero() {
		// schedule re-evaluates the rescale after every event.
		consider(j.rescaleAt, func(time.Time) { j.rescaleAt = time.Time{} })
	}
	return best, fn
}

func (e *Engine) fault(c *cluster, p *pending) Fault {
	if p.savepoint() {
		return c.savepointFault
	}
	return c.checkpointFault
}

// initialize builds the JobMaster: its scheduler with the restart
// strategy, its checkpoint storage, and the state it restores
// (DefaultExecutionGraphFactory#createAndRestoreExecutionGraph: the latest
// completed checkpoint if the store has one, else the savepoint the job
// was submitted with). If any of it fails the job is FAILED at once, with
// no restart (JobInitializationException: Could not start the JobMaster).
func (e *Engine) initialize(c *cluster, j *job, at time.Time) {
	if err := e.buildJobMaster(c, j, at); err != nil {
		j.failureCause = "org.apache.flink.runtime.client.JobInitializationException: Could not start the JobMaster.\nCaused by: " + err.Error()
		j.failedAt = at
		// ExecutionGraphInfo(ArchivedExecutionGraph): the failure is the
		// history's one, global entry.
		j.exceptions = append(j.exceptions, rootException{cause: j.failureCause, at: at})
		j.d.jm.logf(at, "ERROR Job %s failed to initialize: %s", j.id, err)
		e.terminate(c, j, at, flink.JobFailed)
		return
	}
	j.setState(flink.JobCreated, at)
	j.until = at
}

func (e *Engine) buildJobMaster(c *cluster, j *job, at time.Time) error {
	cf := j.sub.conf
	var err error
	if j.interval, _, err = cf.duration("execution.checkpointing.interval"); err != nil {
		return err
	}
	if j.timeout, _, err = cf.duration("execution.checkpointing.timeout"); err != nil {
		return err
	}
	if _, ok := cf.value("execution.checkpointing.tolerable-failed-checkpoints"); ok {
		if j.tolerable, err = cf.integer("execution.checkpointing.tolerable-failed-checkpoints"); err != nil {
			return err
		}
	}
	retention, err := cf.enum("execution.checkpointing.externalized-checkpoint-retention", "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS")
	if err != nil {
		return err
	}
	j.retention = retentionProps(retention)
	retainedKey := "state.checkpoints.num-retained"
	if cf.version.AtLeast(1, 20) {
		retainedKey = "execution.checkpointing.num-retained"
	}
	if j.retained, err = cf.integer(retainedKey); err != nil {
		return err
	}
	if j.slotTimeout, _, err = cf.duration("slot.request.timeout"); err != nil {
		return err
	}
	if j.strategy, err = newRestartStrategy(cf, j.interval > 0); err != nil {
		return err
	}
	if j.adaptive, err = readAdaptive(cf, j.interval); err != nil {
		return err
	}
	if j.adaptive == nil {
		if err := j.checkParallelism(); err != nil {
			return err
		}
	}
	dirKey := "state.checkpoints.dir"
	if cf.version.AtLeast(1, 20) {
		dirKey = "execution.checkpointing.dir"
	}
	j.checkpointDir, _ = cf.raw(dirKey)
	if j.checkpointDir != "" {
		if err := j.d.jm.fileSystemFor(j.checkpointDir); err != nil {
			return err
		}
	}
	if j.recovered && j.d.ha != nil {
		if hj := j.d.ha.jobs[j.id]; hj != nil {
			j.nextID = max(j.nextID, hj.counter)
			for _, cp := range hj.checkpoints {
				if !e.fs.exists(cp.blob) {
					return fmt.Errorf("org.apache.flink.util.FlinkException: Could not retrieve checkpoint %d from state handle under %s. This indicates that the retrieved state handle is broken. Try cleaning the state handle store.", cp.snap.id, cp.blob)
				}
				j.store = append(j.store, cp.snap)
			}
			if n := len(j.store); n > 0 {
				// CheckpointCoordinator#restoreInitialCheckpointIfPresent:
				// the same job graph, so only the state's max parallelism
				// can matter.
				return j.restoreAtStart(j.store[n-1], at)
			}
		}
	}
	if j.sub.restorePath == "" {
		return nil
	}
	snap, err := e.resolveSnapshot(j.d, j.sub.restorePath)
	if err != nil {
		return err
	}
	mapped, err := j.loadAndValidate(snap, j.sub.allowNonRestored)
	if err != nil {
		return err
	}
	// CheckpointCoordinator#restoreSavepoint: the snapshot, with the
	// states that map, joins the store through
	// addCheckpointAndSubsumeOldestOne, so with high availability its
	// pointer is in the HA store too and the next checkpoint subsumes it
	// there as well. Its properties follow the claim mode: CLAIM, the
	// job's own checkpoint properties (a checkpoint the job owns, deleted
	// once subsumed); NO_CLAIM, CheckpointProperties#forUnclaimedSnapshot,
	// and LEGACY, #forSavepoint: savepoint types Flink never deletes. The
	// type is what latest.restored.is_savepoint reports, after a failover
	// too (CheckpointStatsTracker#reportRestoredCheckpoint reads
	// CheckpointProperties#isSavepoint), whatever the snapshot was taken
	// as. The ID counter continues after it.
	own := *snap
	own.operators = mapped
	own.props = props{savepoint: true}
	if j.sub.claimMode == "CLAIM" {
		own.props = j.retention
	}
	j.addToStore(e, &own)
	j.nextID = snap.id + 1
	if hj := j.haJob(); hj != nil {
		// CheckpointIDCounter#setCount: with HA the counter is there too.
		hj.counter = j.nextID
	}
	return j.restoreAtStart(&own, at)
}

// restoreAtStart points the job's first run at a snapshot. The
// DefaultScheduler assigns its state while it builds the ExecutionGraph,
// in the JobMaster's start; the AdaptiveScheduler builds its graph, and
// assigns the state, once it has slots (CreatingExecutionGraph, see
// scheduleAdaptive).
func (j *job) restoreAtStart(s *snapshot, at time.Time) error {
	if j.adaptive == nil {
		if err := j.assignStates(s); err != nil {
			return err
		}
	}
	j.restore(s, at)
	return nil
}

// resolveSnapshot finds the checkpoint or savepoint at a path as
// AbstractFsCheckpointStorageAccess#resolveCheckpointPointer does: the
// directory's _metadata file, or the file itself.
func (e *Engine) resolveSnapshot(d *dispatcher, pointer string) (*snapshot, error) {
	l, err := d.locate(pointer)
	if err != nil {
		return nil, err
	}
	if path.Base(l.path) != "_metadata" {
		l = l.child("_metadata")
	}
	snap := e.snapshots[l]
	if snap == nil || !e.fs.exists(l) {
		scheme := "file"
		if u, err := url.Parse(pointer); err == nil && u.Scheme != "" {
			scheme = u.Scheme
		}
		return nil, fmt.Errorf("java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory '%s' on file system '%s'.", pointer, scheme)
	}
	return snap, nil
}

// restore points the next run at a snapshot; the tasks read its state
// when they deploy.
func (j *job) restore(s *snapshot, at time.Time) {
	j.restoreFrom = s
	j.restoredCount++
	j.restored = &flink.RestoredCheckpointStatistics{ID: s.id, RestoreTimestamp: ms(at), IsSavepoint: s.props.savepoint, ExternalPath: s.pointer}
}

// startScheduling is DefaultScheduler#startSchedulingInternal: the job is
// RUNNING at once and its tasks wait for slots.
func (e *Engine) startScheduling(c *cluster, j *job, at time.Time) {
	if j.adaptive != nil {
		j.waitForResources(at)
		if j.cancelAfterInit {
			e.cancel(c, j, at)
		}
		return
	}
	j.setState(flink.JobRunning, at)
	j.tasks = "SCHEDULED"
	j.scheduledAt = at
	if j.cancelAfterInit {
		e.cancel(c, j, at)
	}
}

// deployed runs the tasks. A task that cannot read the state it restores
// fails at once, which is a task failure like any other.
func (e *Engine) deployed(c *cluster, j *job, at time.Time) {
	if c.restoreDelay > 0 {
		// Task#doRun: INITIALIZING while StreamTask#restoreInternal
		// restores the operators' state, then RUNNING.
		j.tasks = "INITIALIZING"
		j.tasksUntil = at.Add(c.restoreDelay)
		return
	}
	e.initialized(c, j, at)
}

// initialized ends the tasks' INITIALIZING: they run, or the restore or
// the operators' opening fails.
func (e *Engine) initialized(c *cluster, j *job, at time.Time) {
	if s := j.restoreFrom; s != nil {
		if ok, missing := s.readable(e.fs); !ok {
			e.failJob(c, j, at, fmt.Sprintf("java.io.FileNotFoundException: %s (No such file or directory)", missing), false)
			return
		}
	}
	if c.taskStartFault != "" {
		e.failJob(c, j, at, c.taskStartFault, false)
		return
	}
	j.tasks = "RUNNING"
	if j.interval > 0 && !j.stopping {
		// CheckpointCoordinatorDeActivator starts the periodic scheduler
		// once the tasks run.
		j.nextPeriodic = at.Add(j.interval)
	}
}

// triggerPeriodic is the periodic checkpoint trigger; with one in flight
// it waits for the next round (max-concurrent-checkpoints 1).
func (e *Engine) triggerPeriodic(c *cluster, j *job, at time.Time) {
	j.nextPeriodic = at.Add(j.interval)
	for _, p := range j.pending {
		if !p.savepoint() {
			return
		}
	}
	e.addPending(c, j, &pending{kind: kindCheckpoint, periodic: true}, at)
}

func (e *Engine) addPending(c *cluster, j *job, p *pending, at time.Time) {
	p.id, p.triggered = j.nextID, at
	j.nextID++
	if hj := j.haJob(); hj != nil {
		hj.counter = j.nextID
	}
	delay := e.opts.CheckpointDelay
	if p.savepoint() {
		delay = e.opts.SavepointDelay
		if c.savepointDelay > 0 {
			delay = c.savepointDelay
		}
	}
	p.due = at.Add(delay)
	j.pending = append(j.pending, p)
}

func (j *job) haJob() *haJob {
	if j.d.ha == nil {
		return nil
	}
	return j.d.ha.jobs[j.id]
}

func (j *job) dropPending(p *pending) {
	for i, q := range j.pending {
		if q == p {
			j.pending = append(j.pending[:i], j.pending[i+1:]...)
			return
		}
	}
}

// completePending finalizes a snapshot: the JobManager writes _metadata,
// the TaskManagers their state. A checkpoint joins the completed
// checkpoint store and subsumes the oldest beyond num-retained; a
// savepoint does not (CheckpointCoordinator#completePendingCheckpoint).
func (e *Engine) completePending(c *cluster, j *job, p *pending, at time.Time) {
	if e.fault(c, p) == FaultFail {
		e.failPending(c, j, p, at, "Failure to finalize checkpoint.", true)
		return
	}
	j.dropPending(p)
	snap := &snapshot{id: p.id, savepoint: p.savepoint(), props: j.retention, operators: j.operatorStates()}
	typ := "CHECKPOINT"
	if p.savepoint() {
		typ = "SAVEPOINT"
		if p.kind == kindStop {
			typ = "SYNC_SAVEPOINT"
		}
		snap.props = props{savepoint: true}
		snap.pointer = flinkPath(p.target + "/savepoint-" + j.id[:6] + "-" + randomHex(6))
	} else if j.checkpointDir == "" {
		snap.pointer = "<checkpoint-not-externally-addressable>"
	} else {
		snap.pointer = flinkPath(j.checkpointDir + "/" + j.id + "/chk-" + fmt.Sprint(p.id))
	}
	if p.savepoint() || j.checkpointDir != "" {
		if err := e.writeSnapshot(c, j, snap); err != nil {
			e.failPending(c, j, p, at, "An Exception occurred while triggering the checkpoint. IO-problem detected.", true)
			return
		}
	}
	st := flink.CheckpointStatistics{
		ClassName: flink.CheckpointClassCompleted, ID: p.id, Status: "COMPLETED", IsSavepoint: p.savepoint(),
		CheckpointType: typ, TriggerTimestamp: ms(p.triggered), LatestAckTimestamp: ms(at), EndToEndDuration: at.Sub(p.triggered).Milliseconds(),
		CheckpointedSize: 4096, StateSize: 4096, NumSubtasks: int32(j.parallelism), NumAcknowledgedSubtask: int32(j.parallelism),
		ExternalPath: snap.pointer, SavepointFormat: string(p.format), Discarded: false,
	}
	j.completedCount++
	j.record(st)
	if p.savepoint() {
		j.latestSavepoint = &st
	} else {
		j.latestCompleted = &st
		j.lastCompletedAt = at
		j.failedInARow = 0
		j.addToStore(e, snap)
	}
	if p.kind == kindStop && c.stopFault == StopTasksDoNotFinish {
		// StopWithSavepointTerminationHandlerImpl#onAnyExecutionNotFinished
		// (StopWithSavepointOperationHandlerImpl from 1.19): the savepoint
		// is complete and stays, but a task did not reach FINISHED, so the
		// scheduler fails the job over globally (its restart strategy
		// decides, restoring the latest checkpoint, which the savepoint is
		// not) and the stop operation fails with that exception.
		cause := fmt.Sprintf("org.apache.flink.util.FlinkException: Inconsistent execution state after stopping with savepoint. At least one execution is still in one of the following states: FAILED. A global fail-over is triggered to recover the job %s.", j.id)
		j.d.jm.logf(at, "WARN A savepoint was created at %s but the corresponding job %s didn't terminate successfully.", snap.pointer, j.id)
		if p.result != nil {
			p.result.complete(at, "", 0, cause)
		}
		e.failJob(c, j, at, cause, true)
		return
	}
	if p.result != nil {
		location := ""
		if p.savepoint() {
			location = snap.pointer
		}
		p.result.complete(at, location, p.id, "")
	}
	switch p.kind {
	case kindStop:
		// The tasks finish after the synchronous savepoint; the job ends
		// FINISHED (StopWithSavepointTerminationHandlerImpl).
		e.terminate(c, j, at, flink.JobFinished)
	case kindCancelSavepoint:
		e.cancel(c, j, at)
	}
}

// writeSnapshot writes a snapshot's files where the processes that write
// them resolve its path.
func (e *Engine) writeSnapshot(c *cluster, j *job, s *snapshot) error {
	if err := j.d.jm.fileSystemFor(s.pointer); err != nil {
		return err
	}
	meta, err := j.d.locate(s.pointer + "/_metadata")
	if err != nil {
		return err
	}
	s.metadata = &meta
	seen := map[string]bool{}
	for _, id := range j.slots {
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, tm := range c.tms {
			if tm.id() == id {
				l, err := locate(s.pointer+"/"+tm.pod.Name+"-state", tm.pod.UID, c.key.Namespace, tm.pod.Mounts)
				if err != nil {
					return err
				}
				s.state = append(s.state, l)
			}
		}
	}
	e.fs.write(meta)
	for _, l := range s.state {
		e.fs.write(l)
	}
	e.snapshots[meta] = s
	return nil
}

// addToStore is DefaultCompletedCheckpointStore#
// addCheckpointAndSubsumeOldestOne; with high availability the pointer is
// written to HA storage too. Every snapshot that joins a running job's
// store joins here (a recovered store is read from the HA list), so the
// two subsume in step.
func (j *job) addToStore(e *Engine, s *snapshot) {
	j.store = append(j.store, s)
	hj := j.haJob()
	if hj != nil {
		if blob, err := j.d.locate(j.d.jm.ha.storagePath + "/completedCheckpoint" + randomHex(6)); err == nil {
			e.fs.write(blob)
			hj.checkpoints = append(hj.checkpoints, haCheckpoint{snap: s, blob: blob})
		}
	}
	for len(j.store) > max(1, j.retained) {
		old := j.store[0]
		j.store = j.store[1:]
		if old.props.subsumed {
			e.discard(old)
		}
		if hj != nil && len(hj.checkpoints) > 0 {
			e.fs.remove(hj.checkpoints[0].blob)
			hj.checkpoints = hj.checkpoints[1:]
		}
	}
}

// failPending fails a snapshot. Checkpoint failures of the counted kinds
// fail the job over once more than execution.checkpointing.tolerable-
// failed-checkpoints (0 by default) fail in a row; savepoint failures are
// never counted (CheckpointFailureManager#checkFailureCounter and
// #handleJobLevelCheckpointException). A failed stop-with-savepoint
// leaves the job running and restarts the periodic checkpoints.
func (e *Engine) failPending(c *cluster, j *job, p *pending, at time.Time, reason string, counted bool) {
	j.dropPending(p)
	j.failedCount++
	st := flink.CheckpointStatistics{
		ClassName: flink.CheckpointClassFailed, ID: p.id, Status: "FAILED", IsSavepoint: p.savepoint(), CheckpointType: "CHECKPOINT",
		TriggerTimestamp: ms(p.triggered), FailureTimestamp: ms(at), FailureMessage: reason, NumSubtasks: int32(j.parallelism),
	}
	if p.savepoint() {
		st.CheckpointType = "SAVEPOINT"
	}
	j.latestFailed = &st
	j.record(st)
	if p.result != nil {
		p.result.complete(at, "", 0, "org.apache.flink.runtime.checkpoint.CheckpointException: "+reason)
	}
	if p.kind == kindStop || p.kind == kindCancelSavepoint {
		j.stopping = false
		if j.interval > 0 && j.state == flink.JobRunning {
			j.nextPeriodic = at.Add(j.interval)
		}
	}
	if counted && !p.savepoint() {
		j.failedInARow++
		if j.failedInARow > j.tolerable {
			j.failedInARow = 0
			e.failJob(c, j, at, "org.apache.flink.util.FlinkRuntimeException: Exceeded checkpoint tolerable failure threshold. The latest checkpoint failed due to "+reason+", view the Checkpoint History tab or the Job Manager log to find out why continuous checkpoints failed.", true)
		}
	}
}

// abortPending aborts every snapshot in flight, as stopping the checkpoint
// scheduler or a failover does (CheckpointCoordinator#
// abortPendingCheckpoints).
func (j *job) abortPending(at time.Time, reason string) {
	for _, p := range j.pending {
		j.failedCount++
		st := flink.CheckpointStatistics{
			ClassName: flink.CheckpointClassFailed, ID: p.id, Status: "FAILED", IsSavepoint: p.savepoint(), CheckpointType: "CHECKPOINT",
			TriggerTimestamp: ms(p.triggered), FailureTimestamp: ms(at), FailureMessage: strings.TrimPrefix(reason, "org.apache.flink.runtime.checkpoint.CheckpointException: "),
			NumSubtasks: int32(j.parallelism),
		}
		j.latestFailed = &st
		j.record(st)
		if p.result != nil {
			p.result.complete(at, "", 0, reason)
		}
	}
	j.pending = nil
	j.nextPeriodic = time.Time{}
	j.stopping = false
}

func (j *job) record(st flink.CheckpointStatistics) {
	j.history = append([]flink.CheckpointStatistics{st}, j.history...)
	if len(j.history) > 10 {
		// web.checkpoints.history, 10 by default.
		j.history = j.history[:10]
	}
}

// failJob handles a task or global failure (DefaultScheduler#
// handleTaskFailure, #handleGlobalFailure): the restart strategy decides
// between RESTARTING, for its backoff, and FAILING then FAILED.
func (e *Engine) failJob(c *cluster, j *job, at time.Time, cause string, global bool) {
	if j.state != flink.JobRunning {
		return
	}
	j.failureCause, j.failedAt = cause, at
	failure := rootException{cause: cause, at: at}
	if !global {
		failure.task = fmt.Sprintf("%s (1/%d)#0", j.vertices[0].name, j.vertices[0].parallelism)
		failure.location = j.d.jm.pod.Name
		if len(j.slots) > 0 {
			failure.location = j.slots[0]
		}
	}
	kind := "task"
	if global {
		kind = "global"
	}
	j.d.jm.logf(at, "INFO Job %s switched from RUNNING after a %s failure: %s", j.id, kind, cause)
	j.strategy.notifyFailure(at)
	j.abortPending(at, "org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.")
	j.slots = nil
	j.tasks = "CANCELED"
	if j.strategy.canRestart(at) {
		// DefaultScheduler archives the failure when it restarts the tasks.
		j.pendingFailure = &failure
		j.setState(flink.JobRestarting, at)
		j.until = at.Add(j.strategy.backoff(at))
		c.history[j.id].restarts++
		j.numRestarts++
		c.totals.Restarts++
		return
	}
	j.exceptions = append(j.exceptions, failure)
	j.d.jm.logf(at, "INFO Job %s fails: the restart strategy %s is exhausted", j.id, j.strategy)
	j.setState(flink.JobFailing, at)
	j.until = at.Add(e.cancelDelay(c))
}

func (e *Engine) cancelDelay(c *cluster) time.Duration {
	if c.cancelDelay > 0 {
		return c.cancelDelay
	}
	return e.opts.CancelDelay
}

// restartTasks is DefaultScheduler#restartTasks: the job is RUNNING again,
// restores its latest completed checkpoint and requests slots.
func (e *Engine) restartTasks(c *cluster, j *job, at time.Time) {
	if j.pendingFailure != nil {
		j.exceptions = append(j.exceptions, *j.pendingFailure)
		j.pendingFailure = nil
	}
	if n := len(j.store); n > 0 {
		j.restore(j.store[n-1], at)
	}
	j.resetMetrics()
	if j.adaptive != nil {
		j.waitForResources(at)
		return
	}
	j.setState(flink.JobRunning, at)
	j.tasks = "SCHEDULED"
	j.scheduledAt = at
}

// cancel is DefaultExecutionGraph#cancel: CANCELLING until the tasks are
// canceled, then CANCELED.
func (e *Engine) cancel(c *cluster, j *job, at time.Time) {
	switch j.state {
	case flink.JobInitializing:
		j.cancelAfterInit = true
		return
	case flink.JobCreated, flink.JobRunning, flink.JobRestarting:
	default:
		return
	}
	if j.waiting {
		// StateWithoutExecutionGraph#cancel (WaitingForResources#cancel
		// before 1.19): nothing runs, the job goes to Finished CANCELED
		// at once, with the sparse graph.
		j.waiting = false
		e.terminate(c, j, at, flink.JobCanceled)
		return
	}
	j.abortPending(at, "org.apache.flink.runtime.checkpoint.CheckpointException: CheckpointCoordinator shutdown.")
	delay := e.cancelDelay(c)
	if len(j.slots) == 0 {
		// Nothing deployed: nothing to wait for.
		delay = 0
	}
	j.setState(flink.JobCancelling, at)
	j.tasks = "CANCELING"
	j.until = at.Add(delay)
}

// terminate ends a job in a globally terminal state: its slots are freed,
// the completed checkpoint store shuts down (deleting what the retention
// policy does not keep), and the Dispatcher records the result and cleans
// the job up.
func (e *Engine) terminate(c *cluster, j *job, at time.Time, s flink.JobStatus) {
	j.abortPending(at, "org.apache.flink.runtime.checkpoint.CheckpointException: CheckpointCoordinator shutdown.")
	j.setState(s, at)
	j.slots = nil
	// FINISHED, CANCELED and FAILED are ExecutionStates too.
	j.tasks = string(s)
	for _, snap := range j.store {
		if snap.props.shouldDiscard(s) {
			e.discard(snap)
		}
	}
	j.store = nil
	j.d.recordResult(e, c, j, at)
	j.d.archive(c, j, at)
	j.d.jm.logf(at, "INFO Job %s reached globally terminal state %s", j.id, s)
	e.recordEnd(c, j, at, s)
}

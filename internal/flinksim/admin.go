package flinksim

import (
	"crypto/md5"
	"encoding/hex"
	"maps"
	"net/http"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// Fault injection and inspection, for tests. The same operations are
// served over HTTP under /admin/clusters/{namespace}/{name}/.

// ClusterView is the simulator's view of one cluster.
type ClusterView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// JobManagerReady is true while a JobManager pod is Ready and its
	// process listens.
	JobManagerReady bool `json:"jobManagerReady"`
	// Version is what the leading (else the oldest) JobManager runs.
	Version        string        `json:"version"`
	JobManagers    []ProcessView `json:"jobManagers"`
	TaskManagers   int           `json:"taskManagers"`
	SlotsTotal     int           `json:"slotsTotal"`
	SlotsAvailable int           `json:"slotsAvailable"`
	// UnavailableRemaining is how many more requests get a 503; -1 means
	// until cleared.
	UnavailableRemaining int       `json:"unavailableRemaining"`
	SavepointFault       Fault     `json:"savepointFault,omitempty"`
	CheckpointFault      Fault     `json:"checkpointFault,omitempty"`
	StopFault            StopFault `json:"stopFault,omitempty"`
	// LostAnswers is how many more answers of each endpoint are lost
	// (LoseAnswers).
	LostAnswers map[string]int `json:"lostAnswers,omitempty"`
	// Requests counts REST requests by "METHOD /path/{template}".
	Requests map[string]int `json:"requests"`
	// Totals count over the cluster's life, across resubmissions that
	// reuse a job ID (which replace that job's own counters).
	Totals Totals `json:"totals"`
	// Jobs are every job the cluster ran, in the state the last
	// JobManager that had it saw.
	Jobs []JobView `json:"jobs"`
	// Events is the simulated log of process starts, refusals and stops.
	Events []string `json:"events"`
	// Workload is what the cluster's workload last did; nil without one.
	Workload *WorkloadView `json:"workload,omitempty"`
	// Record is every job start and end and the most jobs RUNNING at once.
	Record Record `json:"record"`
}

// ProcessView is one JobManager or TaskManager process.
type ProcessView struct {
	ID      string `json:"id"`
	Pod     string `json:"pod"`
	Version string `json:"version,omitempty"`
	// Down says why the process does not serve; empty when it does.
	Down   string `json:"down,omitempty"`
	Leader bool   `json:"leader,omitempty"`
	// Log is the process's simulated log.
	Log []string `json:"log"`
}

// Totals are a cluster's cumulative counters.
type Totals struct {
	JobsSubmitted        int `json:"jobsSubmitted"`
	SavepointsTriggered  int `json:"savepointsTriggered"`
	StopsTriggered       int `json:"stopsTriggered"`
	CheckpointsTriggered int `json:"checkpointsTriggered"`
	Restarts             int `json:"restarts"`
}

// JobView is the simulator's view of one job.
type JobView struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	State       flink.JobStatus `json:"state"`
	Parallelism int             `json:"parallelism"`
	// Present is false once no live JobManager has the job any more.
	Present bool `json:"present"`
	// SavepointsTriggered counts savepoint and stop-with-savepoint
	// triggers that reached the job; a repeated trigger ID is not counted
	// twice.
	SavepointsTriggered  int `json:"savepointsTriggered"`
	StopsTriggered       int `json:"stopsTriggered"`
	CheckpointsTriggered int `json:"checkpointsTriggered"`
	CheckpointsCompleted int `json:"checkpointsCompleted"`
	CheckpointsFailed    int `json:"checkpointsFailed"`
	Restarts             int `json:"restarts"`
	// Rescales counts the AdaptiveScheduler's restarts to change the
	// job's parallelism (Flink's numRestarts counts them too).
	Rescales int `json:"rescales"`
	// Vertices are the job graph's vertices with their parallelism now.
	Vertices []VertexView `json:"vertices"`
	// RestoredFrom is what the current run restored from, as Flink
	// reports it; nil when it started without state. Its is_savepoint is
	// the type the claim mode gave the snapshot (a retained checkpoint
	// restored under NO_CLAIM is a savepoint type);
	// RestoredFromSavepoint says whether it was taken as a savepoint.
	RestoredFrom          *flink.RestoredCheckpointStatistics `json:"restoredFrom,omitempty"`
	RestoredFromSavepoint bool                                `json:"restoredFromSavepoint,omitempty"`
	LatestCheckpoint      string                              `json:"latestCheckpoint,omitempty"`
	LatestSavepoint       string                              `json:"latestSavepoint,omitempty"`
	FailureCause          string                              `json:"failureCause,omitempty"`
}

// VertexView is one job vertex.
type VertexView struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
}

// jobHistory is what the view keeps of a job ID across JobManager
// processes.
type jobHistory struct {
	job     *job
	present bool
	// result is what a JobManager that took over the job's cleanup shows
	// of it (dispatcher.cleanUpRecovered); job stays the run it ended.
	result *job

	savepointsTriggered, stopsTriggered, checkpointsTriggered, restarts, rescales int
}

// shows reports whether j is how a JobManager shows the job: its run, or
// its result only.
func (h *jobHistory) shows(j *job) bool { return h != nil && (h.job == j || h.result == j) }

// View returns the simulator's view of a cluster, after applying what the
// clock made due.
func (e *Engine) View(k ClusterKey) (ClusterView, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return ClusterView{}, errorf(http.StatusNotFound, "Flink REST simulator: no Flink cluster %s is known", k)
	}
	e.advance(c, e.now())
	v := ClusterView{
		Namespace: k.Namespace, Name: k.Name, JobManagers: []ProcessView{},
		TaskManagers: len(c.registered()), SlotsTotal: c.slotsTotal(), SlotsAvailable: c.slotsAvailable(),
		UnavailableRemaining: c.unavailable,
		SavepointFault:       c.savepointFault, CheckpointFault: c.checkpointFault, StopFault: c.stopFault,
		LostAnswers: maps.Clone(c.lostAnswers),
		Requests:    maps.Clone(c.requests), Totals: c.totals, Jobs: []JobView{}, Events: append([]string{}, c.events...),
		Workload: c.workload.view(), Record: c.record.clone(),
	}
	lead := c.resourceManager()
	for _, p := range c.jms {
		pv := ProcessView{ID: p.id(), Pod: p.pod.Name, Down: p.down, Leader: p == lead, Log: append([]string{}, p.log...)}
		if p.conf != nil {
			pv.Version = p.version.String()
		}
		v.JobManagers = append(v.JobManagers, pv)
		if p.pod.Ready && p.serving() {
			v.JobManagerReady = true
		}
		if v.Version == "" || p == lead {
			v.Version = pv.Version
		}
	}
	for _, id := range c.historyOrder {
		h := c.history[id]
		j := h.job
		jv := JobView{
			ID: j.id, Name: j.name, State: j.state, Parallelism: j.parallelism, Present: h.present,
			SavepointsTriggered: h.savepointsTriggered, StopsTriggered: h.stopsTriggered,
			CheckpointsTriggered: h.checkpointsTriggered,
			CheckpointsCompleted: int(j.completedCount), CheckpointsFailed: int(j.failedCount),
			Restarts: h.restarts, Rescales: h.rescales, FailureCause: j.failureCause, Vertices: []VertexView{},
		}
		for _, vx := range j.vertices {
			jv.Vertices = append(jv.Vertices, VertexView{ID: vx.id, Name: vx.name, Parallelism: vx.parallelism, MaxParallelism: vx.maxParallelism})
		}
		if j.restored != nil {
			r := *j.restored
			jv.RestoredFrom, jv.RestoredFromSavepoint = &r, j.restoreFrom.savepoint
		}
		if j.latestCompleted != nil {
			jv.LatestCheckpoint = j.latestCompleted.ExternalPath
		}
		if j.latestSavepoint != nil {
			jv.LatestSavepoint = j.latestSavepoint.ExternalPath
		}
		v.Jobs = append(v.Jobs, jv)
	}
	return v, nil
}

// Clusters lists the clusters the simulator knows.
func (e *Engine) Clusters() []ClusterKey {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]ClusterKey, 0, len(e.clusters))
	for k := range e.clusters {
		out = append(out, k)
	}
	return out
}

// InjectUnavailable makes the next n REST requests of a cluster answer 503;
// n < 0 means until ClearFaults.
func (e *Engine) InjectUnavailable(k ClusterKey, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n < 0 {
		n = -1
	}
	e.get(k).unavailable = n
}

// LoseAnswers makes the next n requests to endpoint ("METHOD /path" with
// the templates of Flink's REST API specification, as View.Requests counts
// them, such as "POST /jars/{jarid}/run") take effect while their answers
// never arrive: the connection is reset once the JobManager has done what
// was asked. A test fault, not Flink behaviour: an answer lost on the way
// (a proxy, the pod network, a JobManager that dies as it answers) or one
// later than the client's timeout, which the client gives up on the same
// way, unsure whether the request landed. Whatever the answer would have
// been, a refusal too, it is lost. n <= 0 clears it.
func (e *Engine) LoseAnswers(k ClusterKey, endpoint string, n int) {
	e.setFault(k, func(c *cluster) {
		if c.lostAnswers == nil {
			c.lostAnswers = map[string]int{}
		}
		c.lostAnswers[endpoint] = max(n, 0)
	})
}

// SetSavepointFault makes savepoints (and stop-with-savepoint) fail or stall.
func (e *Engine) SetSavepointFault(k ClusterKey, f Fault) {
	e.setFault(k, func(c *cluster) { c.savepointFault = f })
}

// SetCheckpointFault makes checkpoints, periodic and triggered, fail or stall.
func (e *Engine) SetCheckpointFault(k ClusterKey, f Fault) {
	e.setFault(k, func(c *cluster) { c.checkpointFault = f })
}

// SetTaskStartFault makes the tasks of every job that deploys from now on
// throw cause as they start: user code failing in its operators'
// initializeState or open, which StreamTask#restoreInternal runs
// (OperatorChain#initializeStateAndOpenOperators) while the task is
// INITIALIZING and the job already RUNNING. Task#doRun marks the task
// FAILED, and the scheduler's failure handling decides as for FailJob:
// DefaultScheduler#handleTaskFailure (through
// updateTaskExecutionStateInternal in 1.15, SchedulerBase#onTaskFailed
// from 1.16), or, with jobmanager.scheduler adaptive,
// Executing#onFailure and AdaptiveScheduler#howToHandleFailure; either
// asks the restart strategy. Tasks that already run are not touched; ""
// clears it.
func (e *Engine) SetTaskStartFault(k ClusterKey, cause string) {
	e.setFault(k, func(c *cluster) { c.taskStartFault = cause })
}

// SetStopFault changes how stop-with-savepoint ends once its savepoint is
// complete (see StopTasksDoNotFinish).
func (e *Engine) SetStopFault(k ClusterKey, f StopFault) {
	e.setFault(k, func(c *cluster) { c.stopFault = f })
}

// SetSavepointDelay makes savepoints (and stop-with-savepoint) triggered
// from now on take d on the engine clock; zero restores
// EngineOptions.SavepointDelay. A delay beyond
// execution.checkpointing.timeout expires them.
func (e *Engine) SetSavepointDelay(k ClusterKey, d time.Duration) {
	e.setFault(k, func(c *cluster) { c.savepointDelay = d })
}

// SetCancelDelay makes cancellations (and failing jobs) take d: the tasks
// are slow to cancel. Zero restores EngineOptions.CancelDelay.
func (e *Engine) SetCancelDelay(k ClusterKey, d time.Duration) {
	e.setFault(k, func(c *cluster) { c.cancelDelay = d })
}

// SetRestoreDelay makes the tasks of every job that deploys from now on
// stay INITIALIZING for d before they run: Task#doRun restores the
// operators' state there (StreamTask#restoreInternal), which a large state
// makes long. The job is RUNNING meanwhile, and a checkpoint or savepoint
// triggered then fails: DefaultCheckpointPlanCalculator#checkTasksStarted
// finds a task to trigger not RUNNING (NOT_ALL_REQUIRED_TASKS_RUNNING).
// Tasks initializing now end theirs within d from now, so a smaller d
// (zero: at once) lifts the fault.
func (e *Engine) SetRestoreDelay(k ClusterKey, d time.Duration) {
	e.setFault(k, func(c *cluster) { e.restoreWithin(c, d) })
}

// restoreWithin sets the restore delay to d and ends the restores under
// way within d from now.
func (e *Engine) restoreWithin(c *cluster, d time.Duration) {
	c.restoreDelay = d
	by := e.now().Add(d)
	for disp := range c.dispatchers() {
		for _, j := range disp.jobs {
			if j.tasks == "INITIALIZING" && j.tasksUntil.After(by) {
				j.tasksUntil = by
			}
		}
	}
}

// SetCleanupDelay makes the global cleanup of a job that reaches a
// globally terminal state with high availability take d (slow HA storage;
// Flink retries a failing cleanup with cleanup-strategy's exponential
// delay for as long as it takes). Its job result store entry stays dirty
// meanwhile, and a JobManager that takes over then finishes the cleanup
// (see dispatcher.recover). Cleanups under way end within d from now, so
// zero ends them at once.
func (e *Engine) SetCleanupDelay(k ClusterKey, d time.Duration) {
	e.setFault(k, func(c *cluster) { e.cleanupWithin(c, d) })
}

// cleanupWithin sets the cleanup delay to d and ends the cleanups under
// way within d from now.
func (e *Engine) cleanupWithin(c *cluster, d time.Duration) {
	c.cleanupDelay = d
	by := e.now().Add(d)
	for disp := range c.dispatchers() {
		for id, due := range disp.cleanups {
			if due.After(by) {
				disp.cleanups[id] = by
			}
		}
	}
}

// ClearFaults removes every injected fault of a cluster.
func (e *Engine) ClearFaults(k ClusterKey) {
	e.setFault(k, func(c *cluster) {
		c.unavailable, c.savepointFault, c.checkpointFault, c.cancelDelay = 0, FaultNone, FaultNone, 0
		c.stopFault, c.savepointDelay, c.taskStartFault = StopFinishes, 0, ""
		c.lostAnswers = nil
		e.restoreWithin(c, 0)
		e.cleanupWithin(c, 0)
	})
}

// setFault changes faults at the current time: what was due under the old
// faults happens first, and a stalled snapshot that is released completes
// from now on, not back when it was due.
func (e *Engine) setFault(k ClusterKey, change func(*cluster)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.get(k)
	now := e.now()
	e.advance(c, now)
	change(c)
	for disp := range c.dispatchers() {
		for _, j := range disp.jobs {
			for _, pd := range j.pending {
				if pd.due.Before(now) {
					pd.due = now
				}
			}
		}
	}
	e.advance(c, now)
}

// SetJobState forces a job into FAILED or FAILING (the job fails as if its
// restart strategy were exhausted) or RESTARTING (a task fails and the
// restart strategy decides, see FailJob).
func (e *Engine) SetJobState(k ClusterKey, jobID string, s flink.JobStatus) error {
	switch s {
	case flink.JobRestarting:
		return e.FailJob(k, jobID, "")
	case flink.JobFailed, flink.JobFailing:
	default:
		return errorf(http.StatusBadRequest, "Flink REST simulator: can force FAILING, FAILED or RESTARTING, not %q", s)
	}
	return e.onJob(k, jobID, func(c *cluster, j *job, now time.Time) {
		j.strategy = noRestart{}
		e.failJob(c, j, now, "org.apache.flink.runtime.JobException: Failure injected into the Flink REST simulator", false)
		if s == flink.JobFailed {
			e.terminate(c, j, now, flink.JobFailed)
		}
	})
}

// FailJob fails a running job's tasks with cause: the job's restart
// strategy decides whether it restarts (RESTARTING) or fails.
func (e *Engine) FailJob(k ClusterKey, jobID, cause string) error {
	if cause == "" {
		cause = "org.apache.flink.runtime.JobException: Task failure injected into the Flink REST simulator"
	}
	return e.onJob(k, jobID, func(c *cluster, j *job, now time.Time) { e.failJob(c, j, now, cause, false) })
}

func (e *Engine) onJob(k ClusterKey, jobID string, fn func(*cluster, *job, time.Time)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return errorf(http.StatusNotFound, "Flink REST simulator: no Flink cluster %s is known", k)
	}
	now := e.now()
	e.advance(c, now)
	for _, p := range c.jms {
		if p.d == nil {
			continue
		}
		if j := p.d.jobs[jobID]; j != nil {
			if j.state != flink.JobRunning {
				return errorf(http.StatusConflict, "Flink REST simulator: job %s is %s, not RUNNING", jobID, j.state)
			}
			fn(c, j, now)
			e.advance(c, now)
			return nil
		}
	}
	return errorf(http.StatusNotFound, "Flink REST simulator: no live JobManager of %s has job %s", k, jobID)
}

// LoseJobManager crashes the leading JobManager process (else the oldest)
// and starts a new one in its pod, as a replaced pod would: nothing of
// the old process's memory nor of the pod's own disk is left. Without high
// availability its jobs are gone; with it, a JobManager recovers them once
// the crashed leader's lease expires.
func (e *Engine) LoseJobManager(k ClusterKey) error {
	return e.replaceJobManager(k, false, "killed (fault injected into the Flink REST simulator)")
}

// StopJobManager stops the leading JobManager process (else the oldest)
// gracefully, as SIGTERM does when its pod is deleted, evicted or rolled,
// and starts a new one in its pod, as a replaced pod would. Its jobs are
// SUSPENDED: without high availability their checkpoints are deleted
// unless retained on cancellation, and the jobs are gone; with it the
// leadership is released at once and the next leader recovers them.
func (e *Engine) StopJobManager(k ClusterKey) error {
	return e.replaceJobManager(k, true, "stopped gracefully (SIGTERM, injected into the Flink REST simulator)")
}

func (e *Engine) replaceJobManager(k ClusterKey, graceful bool, why string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil || len(c.jms) == 0 {
		return errorf(http.StatusNotFound, "Flink REST simulator: %s has no JobManager process", k)
	}
	now := e.now()
	e.advance(c, now)
	i := 0
	if lead := c.resourceManager(); lead != nil {
		for n, p := range c.jms {
			if p == lead {
				i = n
			}
		}
	}
	old := c.jms[i]
	e.stop(c, now, old, graceful, why)
	e.fs.dropPod(old.pod.UID)
	c.jms[i] = e.start(c, now, old.pod, true, old.generation+1)
	e.elect(c, now)
	e.advance(c, now)
	return nil
}

// ExpireOperations drops every completed operation result the cluster's
// Dispatchers keep, as if rest.async.store-duration had passed; it
// returns how many went.
func (e *Engine) ExpireOperations(k ClusterKey) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return 0
	}
	e.advance(c, e.now())
	n := 0
	for _, p := range c.jms {
		if p.d != nil {
			n += p.d.savepoints.expireAll() + p.d.checkpoints.expireAll()
		}
	}
	return n
}

// ExpireJobs forgets every terminal job the cluster's JobManagers keep in
// their job stores, as if jobstore.expiration-time and the store's
// cleanup had passed: GET /jobs/{jobid} answers 404 and no listing has
// them. It returns how many went.
func (e *Engine) ExpireJobs(k ClusterKey) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return 0
	}
	now := e.now()
	e.advance(c, now)
	n := 0
	for _, p := range c.jms {
		if p.d != nil {
			n += p.d.expireAll(c, now)
		}
	}
	return n
}

// LosePath deletes every file at or under a path, as the leading
// JobManager resolves it (an object store prefix, a claim, its own disk):
// a savepoint or checkpoint there can no longer be restored.
func (e *Engine) LosePath(k ClusterKey, uri string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return 0, errorf(http.StatusNotFound, "Flink REST simulator: no Flink cluster %s is known", k)
	}
	now := e.now()
	e.advance(c, now)
	podUID := ""
	var mounts []Mount
	if lead := c.resourceManager(); lead != nil {
		podUID, mounts = lead.pod.UID, lead.pod.Mounts
	} else if len(c.jms) > 0 {
		podUID, mounts = c.jms[0].pod.UID, c.jms[0].pod.Mounts
	}
	l, err := locate(uri, podUID, k.Namespace, mounts)
	if err != nil {
		return 0, errorf(http.StatusBadRequest, "%v", err)
	}
	n := e.fs.removeTree(l)
	c.logf(now, "lost %d files under %s (fault injected)", n, uri)
	return n, nil
}

func vertexID(id string) string {
	sum := md5.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}

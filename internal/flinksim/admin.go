package flinksim

import (
	"maps"
	"net/http"

	"github.com/datapilot/datapilot/internal/flink"
)

// Fault injection and inspection, for tests. The same operations are
// served over HTTP under /admin/clusters/{namespace}/{name}/.

// ClusterView is the simulator's view of one cluster.
type ClusterView struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	JobManagerReady bool   `json:"jobManagerReady"`
	Version         string `json:"version"`
	TaskManagers    int    `json:"taskManagers"`
	SlotsTotal      int    `json:"slotsTotal"`
	SlotsAvailable  int    `json:"slotsAvailable"`
	// UnavailableRemaining is how many more requests get a 503; -1 means
	// until cleared.
	UnavailableRemaining int   `json:"unavailableRemaining"`
	SavepointFault       Fault `json:"savepointFault,omitempty"`
	CheckpointFault      Fault `json:"checkpointFault,omitempty"`
	// Requests counts REST requests by "METHOD /path/{template}".
	Requests map[string]int `json:"requests"`
	// Totals count over the cluster's life, across resubmissions that
	// reuse a job ID (which replace that job's own counters).
	Totals Totals    `json:"totals"`
	Jobs   []JobView `json:"jobs"`
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
	// SavepointsTriggered counts savepoint and stop-with-savepoint
	// triggers; a repeated trigger ID is not counted twice.
	SavepointsTriggered  int `json:"savepointsTriggered"`
	StopsTriggered       int `json:"stopsTriggered"`
	CheckpointsTriggered int `json:"checkpointsTriggered"`
	CheckpointsCompleted int `json:"checkpointsCompleted"`
	CheckpointsFailed    int `json:"checkpointsFailed"`
	Restarts             int `json:"restarts"`
	// RestoredFrom is what the current run restored from; nil when it
	// started without state.
	RestoredFrom     *flink.RestoredCheckpointStatistics `json:"restoredFrom,omitempty"`
	LatestCheckpoint string                              `json:"latestCheckpoint,omitempty"`
	LatestSavepoint  string                              `json:"latestSavepoint,omitempty"`
}

// View returns the simulator's view of a cluster, after applying what the
// clock made due.
func (e *Engine) View(k ClusterKey) (ClusterView, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return ClusterView{}, errorf(http.StatusNotFound, "Flink REST simulator: no FlinkCluster %s is known", k)
	}
	e.advance(c, e.now())
	v := ClusterView{
		Namespace: k.Namespace, Name: k.Name,
		JobManagerReady: c.obs.JobManagerReady, Version: c.obs.Version,
		TaskManagers: len(c.obs.TaskManagerUIDs), SlotsTotal: c.slotsTotal(),
		SlotsAvailable:       max(0, c.slotsTotal()-c.slotsUsed()),
		UnavailableRemaining: c.unavailable,
		SavepointFault:       c.savepointFault, CheckpointFault: c.checkpointFault,
		Requests: maps.Clone(c.requests), Totals: c.totals, Jobs: []JobView{},
	}
	for _, id := range c.order {
		j := c.jobs[id]
		jv := JobView{
			ID: j.id, Name: j.name, State: j.state, Parallelism: j.parallelism,
			SavepointsTriggered: j.savepointsTriggered, StopsTriggered: j.stopsTriggered,
			CheckpointsTriggered: j.checkpointsTriggered,
			CheckpointsCompleted: int(j.completedCount), CheckpointsFailed: int(j.failedCount),
			Restarts: j.restarts,
		}
		if j.restored != nil {
			r := *j.restored
			jv.RestoredFrom = &r
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

// SetSavepointFault makes savepoints (and stop-with-savepoint) fail or stall.
func (e *Engine) SetSavepointFault(k ClusterKey, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(k).savepointFault = f
}

// SetCheckpointFault makes checkpoints, periodic and triggered, fail or stall.
func (e *Engine) SetCheckpointFault(k ClusterKey, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(k).checkpointFault = f
}

// ClearFaults removes every injected fault of a cluster.
func (e *Engine) ClearFaults(k ClusterKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.get(k)
	c.unavailable, c.savepointFault, c.checkpointFault = 0, FaultNone, FaultNone
}

// SetJobState forces a job into FAILING (it turns FAILED after the restart
// delay), FAILED, or RESTARTING (it runs again from its latest checkpoint).
func (e *Engine) SetJobState(k ClusterKey, jobID string, s flink.JobStatus) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil {
		return errorf(http.StatusNotFound, "Flink REST simulator: no FlinkCluster %s is known", k)
	}
	now := e.now()
	e.advance(c, now)
	j, err := c.lookupJob(jobID)
	if err != nil {
		return err
	}
	switch s {
	case flink.JobFailing:
		e.setState(j, flink.JobFailing, now)
		j.restartAt = now.Add(e.opts.RestartDelay)
	case flink.JobFailed:
		e.setState(j, flink.JobFailed, now)
	case flink.JobRestarting:
		e.restartJob(c, j, now)
	default:
		return errorf(http.StatusBadRequest, "Flink REST simulator: can force FAILING, FAILED or RESTARTING, not %q", s)
	}
	e.advance(c, now)
	return nil
}

// statusOf is the HTTP status of an Engine error.
func statusOf(err error) int {
	if ae, ok := err.(*apiError); ok {
		return ae.code
	}
	return http.StatusInternalServerError
}

package flinksim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// restCaches are what a JobManager's REST endpoint (WebMonitorEndpoint)
// caches, per job ID, on top of its Dispatcher: the DefaultExecutionGraphCache
// that every AbstractExecutionGraphHandler reads through (GET
// /jobs/{jobid}, /jobs/{jobid}/exceptions, and before 1.18
// /jobs/{jobid}/checkpoints), and from 1.18 the checkpoint statistics
// cache of AbstractCheckpointStatsHandler (FLINK-32469). Listings (GET
// /jobs, /jobs/overview, /overview) ask the Dispatcher every time. Each
// process has its own caches, empty when it starts.
type restCaches struct {
	// graphTTL is web.refresh-interval (RestEndpointFactory#
	// createExecutionGraphCache).
	graphTTL time.Duration
	graphs   map[string]cachedGraph
	// statsTTL and statsSize are rest.cache.checkpoint-statistics.timeout
	// (falling back to web.refresh-interval) and .size, from 1.18.
	statsTTL  time.Duration
	statsSize int
	stats     map[string]cachedStats
}

type cachedGraph struct {
	until time.Time
	j     *job // the ExecutionGraphInfo as it was when fetched
}

type cachedStats struct {
	written time.Time
	out     *flink.CheckpointingStatistics
	err     error
}

// readRestCaches follows RestHandlerConfiguration#fromConfiguration, which
// refuses a refresh interval under one millisecond, and Guava's
// CacheBuilder, which refuses a negative expiry or size.
func readRestCaches(c *conf) (*restCaches, error) {
	refresh, _, err := c.duration("web.refresh-interval")
	if err != nil {
		return nil, err
	}
	refresh = refresh.Truncate(time.Millisecond)
	if refresh <= 0 {
		return nil, fmt.Errorf("java.lang.IllegalArgumentException: The refresh interval (ms) should be larger than 0.")
	}
	r := &restCaches{graphTTL: refresh, graphs: map[string]cachedGraph{}, stats: map[string]cachedStats{}}
	if !c.version.AtLeast(1, 18) {
		return r, nil
	}
	if r.statsTTL, _, err = c.duration("rest.cache.checkpoint-statistics.timeout"); err != nil {
		return nil, err
	}
	if r.statsTTL < 0 {
		return nil, fmt.Errorf("java.lang.IllegalArgumentException: duration cannot be negative: %d NANOSECONDS", r.statsTTL.Nanoseconds())
	}
	if r.statsSize, err = c.integer("rest.cache.checkpoint-statistics.size"); err != nil {
		return nil, err
	}
	if r.statsSize < 0 {
		return nil, fmt.Errorf("java.lang.IllegalArgumentException: maximum size must not be negative")
	}
	return r, nil
}

// graph is DefaultExecutionGraphCache#getExecutionGraphInfo as the
// receiving JobManager's handlers call it: an entry younger than its
// time-to-live is answered as it was fetched; otherwise the Dispatcher is
// asked again and the answer kept for web.refresh-interval. A failed
// request (an unknown job) is not kept.
func (e *Engine) graph(c *cluster, jm *process, jobID string, now time.Time) (*job, error) {
	id, err := pathID("jobid", jobID)
	if err != nil {
		return nil, err
	}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return nil, err
	}
	rc := jm.rest
	if g, ok := rc.graphs[id]; ok && now.Before(g.until) {
		return g.j, nil
	}
	j, err := d.lookup(id)
	if err != nil {
		delete(rc.graphs, id)
		return nil, err
	}
	a := j.archived()
	rc.graphs[id] = cachedGraph{until: now.Add(rc.graphTTL), j: a}
	return a, nil
}

// archived is the job as an ExecutionGraphInfo shows it at one moment:
// what later changes of the job do not reach.
func (j *job) archived() *job {
	a := *j
	a.timestamps = maps.Clone(j.timestamps)
	a.pending = slices.Clone(j.pending)
	a.history = slices.Clone(j.history)
	a.exceptions = slices.Clone(j.exceptions)
	a.vertices = nil
	for _, v := range j.vertices {
		cp := *v
		a.vertices = append(a.vertices, &cp)
	}
	return &a
}

// checkpointStats answers GET /jobs/{jobid}/checkpoints: from 1.18
// AbstractCheckpointStatsHandler keeps the Dispatcher's answer
// (requestCheckpointStats) in a Guava cache for
// rest.cache.checkpoint-statistics.timeout after it was written, at most
// rest.cache.checkpoint-statistics.size jobs; the cached value is the
// future, so a failure (an unknown job) is kept too. The Dispatcher asks
// the job's JobMaster, which a job still initializing has not
// (Dispatcher#getJobMasterGateway: UnavailableDispatcherOperationException,
// which the handler does not map, so a 500), and falls back to the job
// store for a job that ended (FLINK-33872, 1.18.1; not modelled for
// 1.18.0). Before 1.18 the handler reads the execution graph cache.
func (e *Engine) checkpointStats(c *cluster, jm *process, jobID string, now time.Time) (*flink.CheckpointingStatistics, error) {
	if !jm.version.AtLeast(1, 18) {
		j, err := e.graph(c, jm, jobID, now)
		if err != nil {
			return nil, err
		}
		return checkpointingStatistics(j)
	}
	id, err := pathID("jobid", jobID)
	if err != nil {
		return nil, err
	}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return nil, err
	}
	rc := jm.rest
	if s, ok := rc.stats[id]; ok && now.Before(s.written.Add(rc.statsTTL)) {
		return s.copy(), s.err
	}
	delete(rc.stats, id)
	s := cachedStats{written: now}
	j, err := d.lookup(id)
	if err == nil && j.state == flink.JobInitializing {
		_, why := d.gateway(id)
		err = internalErr("%s", why)
	}
	if err == nil {
		s.out, err = checkpointingStatistics(j)
	}
	s.err = err
	if rc.statsTTL > 0 && rc.statsSize > 0 {
		rc.evictStats(now)
		rc.stats[id] = s
	}
	return s.copy(), s.err
}

// evictStats drops expired entries and, at the size limit, the oldest
// written (Guava evicts the least recently used).
func (rc *restCaches) evictStats(now time.Time) {
	for id, s := range rc.stats {
		if !now.Before(s.written.Add(rc.statsTTL)) {
			delete(rc.stats, id)
		}
	}
	for len(rc.stats) >= rc.statsSize {
		oldest := ""
		for id, s := range rc.stats {
			if oldest == "" || s.written.Before(rc.stats[oldest].written) {
				oldest = id
			}
		}
		delete(rc.stats, oldest)
	}
}

func (s cachedStats) copy() *flink.CheckpointingStatistics {
	if s.out == nil {
		return nil
	}
	out := *s.out
	out.History = slices.Clone(s.out.History)
	return &out
}

// checkpointingStatistics is CheckpointingStatisticsHandler's answer for
// a job's graph. A sparse graph of a job still initializing (before 1.18;
// see checkpointStats), or whose JobMaster never started, carries the
// job's checkpointing settings and so empty statistics (DefaultJobMasterServiceProcessFactory#
// createArchivedExecutionGraph: ArchivedExecutionGraph#
// createSparseArchivedExecutionGraph gives CheckpointStatsSnapshot.empty()
// for non-null settings); a job known only by its result, which a
// CheckpointResourcesCleanupRunner shows, has none: the handler answers
// 404 (CheckpointingStatisticsHandler#createCheckpointingStatistics).
func checkpointingStatistics(j *job) (*flink.CheckpointingStatistics, error) {
	if j.resultOnly {
		return nil, handlerErr(http.StatusNotFound, "Checkpointing has not been enabled.")
	}
	if j.graphless {
		// AdaptiveScheduler#requestCheckpointStats (1.18+; requestJob
		// before) answers from its state's job: StateWithoutExecutionGraph
		// #getJob is ArchivedExecutionGraph#createSparseArchivedExecution-
		// Graph, whose statistics are CheckpointStatsSnapshot#empty, even
		// after a restart, where the CheckpointStatsTracker still holds
		// the history it shows again once the job executes; the restored
		// checkpoint is reported only when the graph is created
		// (CheckpointCoordinator#restoreInitialCheckpointIfPresent). A job
		// cancelled or failed there ends with that sparse graph.
		return &flink.CheckpointingStatistics{History: []flink.CheckpointStatistics{}}, nil
	}
	inProgress := int32(len(j.pending))
	return &flink.CheckpointingStatistics{
		Counts: flink.CheckpointCounts{
			Restored: j.restoredCount, Completed: j.completedCount, Failed: j.failedCount, InProgress: inProgress,
			Total: j.completedCount + j.failedCount + int64(inProgress),
		},
		Latest: flink.LatestCheckpoints{
			Completed: j.latestCompleted, Savepoint: j.latestSavepoint, Failed: j.latestFailed, Restored: j.restored,
		},
		History: append([]flink.CheckpointStatistics{}, j.history...),
	}, nil
}

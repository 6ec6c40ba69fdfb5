// Package flinksim is the Flink REST simulator: a stand-in for the REST API
// of Flink JobManagers, for the local platform and end-to-end tests, where no
// Flink runs. It answers the endpoints the operator uses with bodies that
// follow the official schema, and derives what it reports (REST up or down,
// TaskManagers, slots, Flink version, job restarts) from the Flink pods it
// sees in the Kubernetes API. It is not Flink: jobs are records that change
// state on a simulated clock.
//
// The state machine (Engine) is pure: Kubernetes observations and a clock go
// in, REST answers come out. Simulator adds the Kubernetes watch and the HTTP
// server.
package flinksim

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// Simulated durations, when EngineOptions leaves them zero.
const (
	DefaultCheckpointInterval = 3 * time.Second
	DefaultCheckpointDelay    = 200 * time.Millisecond
	DefaultSavepointDelay     = 500 * time.Millisecond
	DefaultRestartDelay       = time.Second
	// SimulatedFlinkRevision is the commit the simulator reports; it tells a
	// reader at once that no real Flink answered.
	SimulatedFlinkRevision = "flink-rest-simulator"
)

// EngineOptions tune the simulated durations.
type EngineOptions struct {
	// CheckpointInterval between periodic checkpoints of a running job.
	CheckpointInterval time.Duration
	// CheckpointDelay is how long a triggered checkpoint takes.
	CheckpointDelay time.Duration
	// SavepointDelay is how long a savepoint (or stop-with-savepoint) takes.
	SavepointDelay time.Duration
	// RestartDelay is how long a job stays RESTARTING (or FAILING) before
	// it runs again (or fails).
	RestartDelay time.Duration
	// Clock is the time source; nil means time.Now.
	Clock func() time.Time
}

// ClusterKey names a FlinkCluster.
type ClusterKey struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (k ClusterKey) String() string { return k.Namespace + "/" + k.Name }

// Observation is what the Kubernetes API says about one cluster's pods.
type Observation struct {
	// JobManagerReady is true while a JobManager pod is Ready.
	JobManagerReady bool
	// JobManagerUID identifies the (leading) JobManager pod; a change means
	// a new JobManager process.
	JobManagerUID string
	// Version is the Flink version the JobManager runs.
	Version string
	// TaskManagerUIDs are the Ready TaskManager pods.
	TaskManagerUIDs []string
	// SlotsPerTaskManager is spec.taskManager.slots.
	SlotsPerTaskManager int
}

// Fault is an injected behaviour of checkpoints or savepoints.
type Fault string

const (
	// FaultNone clears the fault.
	FaultNone Fault = ""
	// FaultFail makes operations complete with a failure cause.
	FaultFail Fault = "fail"
	// FaultStall keeps operations IN_PROGRESS until the fault is cleared.
	FaultStall Fault = "stall"
)

// Engine holds the simulated state of every cluster. Time-driven changes
// (checkpoints, completions, restarts) are applied lazily whenever a cluster
// is read or observed, so the Engine needs no goroutine and a test clock
// drives it completely. Safe for concurrent use.
type Engine struct {
	opts EngineOptions

	mu       sync.Mutex
	clusters map[ClusterKey]*cluster
	// savepointIDs maps savepoint locations to their checkpoint IDs, so a job
	// restored from one continues its numbering, as in Flink.
	savepointIDs map[string]int64
}

type cluster struct {
	key      ClusterKey
	obs      Observation
	observed bool
	// wasReady tells a JobManager coming back from a JobManager first seen.
	wasReady bool

	jars    map[string]string // jar ID -> original file name
	jobs    map[string]*job
	order   []string // job IDs in submission order
	touched time.Time

	unavailable     int // remaining 503 answers; <0 means until cleared
	savepointFault  Fault
	checkpointFault Fault
	requests        map[string]int // "METHOD /template" -> count
	totals          Totals
}

type job struct {
	id, name    string
	parallelism int
	state       flink.JobStatus
	start, end  time.Time
	stateSince  time.Time
	timestamps  map[flink.JobStatus]time.Time
	restartAt   time.Time // RESTARTING or FAILING ends

	nextCheckpointID int64
	lastPeriodic     time.Time
	history          []flink.CheckpointStatistics // newest first
	latestCompleted  *flink.CheckpointStatistics
	latestSavepoint  *flink.CheckpointStatistics
	latestFailed     *flink.CheckpointStatistics
	completedCount   int64
	failedCount      int64
	restored         *flink.RestoredCheckpointStatistics
	restoreCount     int64

	ops map[string]*operation // trigger ID -> operation

	savepointsTriggered  int
	stopsTriggered       int
	checkpointsTriggered int
	restarts             int
}

type opKind string

const (
	opCheckpoint opKind = "checkpoint"
	opSavepoint  opKind = "savepoint"
	opStop       opKind = "stop"
)

type operation struct {
	id        string
	kind      opKind
	doneAt    time.Time
	done      bool
	targetDir string
	cancelJob bool
	format    flink.SavepointFormatType
	ckptType  string
	// Results.
	location     string
	checkpointID int64
	failure      string
}

// NewEngine returns an empty Engine.
func NewEngine(o EngineOptions) *Engine {
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.CheckpointDelay <= 0 {
		o.CheckpointDelay = DefaultCheckpointDelay
	}
	if o.SavepointDelay <= 0 {
		o.SavepointDelay = DefaultSavepointDelay
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = DefaultRestartDelay
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return &Engine{opts: o, clusters: map[ClusterKey]*cluster{}, savepointIDs: map[string]int64{}}
}

// apiError is a REST error: an HTTP status and Flink's {"errors": [...]}.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.msg) }

func errorf(code int, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (e *Engine) now() time.Time { return e.opts.Clock() }

func (e *Engine) get(k ClusterKey) *cluster {
	c := e.clusters[k]
	if c == nil {
		c = &cluster{key: k, jars: map[string]string{}, jobs: map[string]*job{}, requests: map[string]int{}}
		e.clusters[k] = c
	}
	return c
}

// Observe records what the Kubernetes API shows for a cluster. A JobManager
// that changed or came back, or a TaskManager that disappeared, restarts the
// running jobs, which then restore from their latest checkpoint or
// savepoint. TaskManagers that only appear (scale-up) restart nothing, as
// with Flink's default scheduler.
func (e *Engine) Observe(k ClusterKey, o Observation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.get(k)
	now := e.now()
	e.advance(c, now)
	o.TaskManagerUIDs = slices.Sorted(slices.Values(o.TaskManagerUIDs))
	o.TaskManagerUIDs = slices.Compact(o.TaskManagerUIDs)
	if o.SlotsPerTaskManager <= 0 {
		o.SlotsPerTaskManager = 1
	}
	prev, had := c.obs, c.observed
	restart := false
	if had && o.JobManagerReady {
		if prev.JobManagerUID != "" && o.JobManagerUID != prev.JobManagerUID {
			restart = true
		}
		if !prev.JobManagerReady && c.wasReady {
			restart = true
		}
	}
	for _, uid := range prev.TaskManagerUIDs {
		if !slices.Contains(o.TaskManagerUIDs, uid) {
			restart = true
		}
	}
	c.obs, c.observed = o, true
	if o.JobManagerReady {
		c.wasReady = true
	}
	if restart {
		for _, id := range c.order {
			j := c.jobs[id]
			if j.state == flink.JobRunning || j.state == flink.JobCreated || j.state == flink.JobRestarting {
				e.restartJob(c, j, now)
			}
		}
	}
	e.advance(c, now)
}

// Forget drops a cluster whose FlinkCluster is gone.
func (e *Engine) Forget(k ClusterKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.clusters, k)
}

func (e *Engine) restartJob(c *cluster, j *job, now time.Time) {
	j.restarts++
	c.totals.Restarts++
	e.setState(j, flink.JobRestarting, now)
	j.restartAt = now.Add(e.opts.RestartDelay)
	// In-flight operations die with the tasks, as in Flink.
	for _, op := range j.ops {
		if !op.done {
			op.done, op.failure = true, fmt.Sprintf("org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint was canceled because the job %s restarted (Flink REST simulator)", j.id)
		}
	}
}

func (e *Engine) setState(j *job, s flink.JobStatus, now time.Time) {
	j.state, j.stateSince = s, now
	j.timestamps[s] = now
	if s.Terminal() {
		j.end = now
	}
}

func (c *cluster) slotsTotal() int { return len(c.obs.TaskManagerUIDs) * c.obs.SlotsPerTaskManager }

// slotsUsed counts slots held by running jobs.
func (c *cluster) slotsUsed() int {
	n := 0
	for _, j := range c.jobs {
		if j.state == flink.JobRunning || j.state == flink.JobFailing {
			n += j.parallelism
		}
	}
	return n
}

// advance applies everything the clock has made due.
func (e *Engine) advance(c *cluster, now time.Time) {
	// Without a JobManager nothing progresses.
	if !c.obs.JobManagerReady {
		return
	}
	for _, id := range c.order {
		j := c.jobs[id]
		switch j.state {
		case flink.JobFailing:
			if !now.Before(j.restartAt) {
				e.setState(j, flink.JobFailed, now)
			}
		case flink.JobRestarting:
			if !now.Before(j.restartAt) && c.slotsTotal()-c.slotsUsed() >= j.parallelism {
				e.restore(j, now)
				e.setState(j, flink.JobRunning, now)
				j.lastPeriodic = now
			}
		case flink.JobCreated:
			if c.slotsTotal()-c.slotsUsed() >= j.parallelism {
				e.setState(j, flink.JobRunning, now)
				j.lastPeriodic = now
			}
		}
		if j.state == flink.JobRunning {
			e.periodicCheckpoints(c, j, now)
		}
		e.completeOperations(c, j, now)
	}
}

// restore points a restarting job at its newest completed checkpoint or
// savepoint, as Flink's failover does.
func (e *Engine) restore(j *job, now time.Time) {
	var from *flink.CheckpointStatistics
	for _, cp := range []*flink.CheckpointStatistics{j.latestCompleted, j.latestSavepoint} {
		if cp != nil && (from == nil || cp.ID > from.ID) {
			from = cp
		}
	}
	if from == nil {
		// Nothing taken since the submission: restore what it was submitted
		// with, if anything.
		if j.restored != nil {
			j.restored.RestoreTimestamp = ms(now)
			j.restoreCount++
		}
		return
	}
	j.restored = &flink.RestoredCheckpointStatistics{
		ID: from.ID, RestoreTimestamp: ms(now), IsSavepoint: from.IsSavepoint, ExternalPath: from.ExternalPath,
	}
	j.restoreCount++
}

func (e *Engine) periodicCheckpoints(c *cluster, j *job, now time.Time) {
	iv := e.opts.CheckpointInterval
	if c.checkpointFault == FaultStall {
		j.lastPeriodic = now
		return
	}
	// Catch up interval by interval, bounded so a long pause costs little.
	for i := 0; i < 10 && !j.lastPeriodic.Add(iv).After(now); i++ {
		j.lastPeriodic = j.lastPeriodic.Add(iv)
		if c.checkpointFault == FaultFail {
			e.failCheckpoint(j, j.lastPeriodic, "Checkpoint failed (fault injected into the Flink REST simulator)")
		} else {
			e.completeCheckpoint(c, j, j.lastPeriodic, "CHECKPOINT", false, "", "")
		}
	}
	if j.lastPeriodic.Add(iv).Before(now) {
		j.lastPeriodic = now
	}
}

func (e *Engine) completeCheckpoint(c *cluster, j *job, at time.Time, typ string, savepoint bool, dir string, format flink.SavepointFormatType) *flink.CheckpointStatistics {
	id := j.nextCheckpointID
	j.nextCheckpointID++
	cp := flink.CheckpointStatistics{
		ClassName: flink.CheckpointClassCompleted, ID: id, Status: "COMPLETED", IsSavepoint: savepoint,
		CheckpointType: typ, TriggerTimestamp: ms(at) - 50, LatestAckTimestamp: ms(at), EndToEndDuration: 50,
		CheckpointedSize: 4096, StateSize: 4096, NumSubtasks: int32(j.parallelism), NumAcknowledgedSubtask: int32(j.parallelism),
	}
	if savepoint {
		if dir == "" {
			dir = fmt.Sprintf("file:///flink-simulator/%s/%s/savepoints", c.key.Namespace, c.key.Name)
		}
		cp.SavepointFormat = string(format)
		cp.ExternalPath = strings.TrimRight(dir, "/") + fmt.Sprintf("/savepoint-%s-%s", j.id[:6], randomHex(6))
		e.savepointIDs[cp.ExternalPath] = id
		j.latestSavepoint = &cp
	} else {
		cp.ExternalPath = fmt.Sprintf("file:///flink-simulator/%s/%s/checkpoints/%s/chk-%d", c.key.Namespace, c.key.Name, j.id, id)
		j.latestCompleted = &cp
	}
	j.completedCount++
	e.record(j, cp)
	return &cp
}

func (e *Engine) failCheckpoint(j *job, at time.Time, msg string) {
	id := j.nextCheckpointID
	j.nextCheckpointID++
	cp := flink.CheckpointStatistics{
		ClassName: flink.CheckpointClassFailed, ID: id, Status: "FAILED", CheckpointType: "CHECKPOINT",
		TriggerTimestamp: ms(at) - 50, FailureTimestamp: ms(at), FailureMessage: msg,
		NumSubtasks: int32(j.parallelism),
	}
	j.latestFailed = &cp
	j.failedCount++
	e.record(j, cp)
}

func (e *Engine) record(j *job, cp flink.CheckpointStatistics) {
	j.history = append([]flink.CheckpointStatistics{cp}, j.history...)
	if len(j.history) > 10 {
		j.history = j.history[:10]
	}
}

func (e *Engine) completeOperations(c *cluster, j *job, now time.Time) {
	for _, id := range sortedKeys(j.ops) {
		op := j.ops[id]
		if op.done || now.Before(op.doneAt) {
			continue
		}
		fault := c.savepointFault
		if op.kind == opCheckpoint {
			fault = c.checkpointFault
		}
		switch {
		case fault == FaultStall:
			continue
		case j.state != flink.JobRunning:
			op.failure = fmt.Sprintf("org.apache.flink.runtime.checkpoint.CheckpointException: Job %s is %s, not RUNNING (Flink REST simulator)", j.id, j.state)
		case fault == FaultFail:
			op.failure = fmt.Sprintf("org.apache.flink.runtime.checkpoint.CheckpointException: %s failed (fault injected into the Flink REST simulator)", op.kind)
			if op.kind == opCheckpoint {
				e.failCheckpoint(j, now, op.failure)
			}
		case op.kind == opCheckpoint:
			cp := e.completeCheckpoint(c, j, now, "CHECKPOINT", false, "", "")
			op.checkpointID = cp.ID
		default:
			cp := e.completeCheckpoint(c, j, now, "SAVEPOINT", true, op.targetDir, op.format)
			op.location, op.checkpointID = cp.ExternalPath, cp.ID
			switch {
			case op.kind == opStop:
				e.setState(j, flink.JobFinished, now)
			case op.cancelJob:
				e.setState(j, flink.JobCanceled, now)
			}
		}
		op.done = true
	}
}

// lookupJob finds a job of a cluster that answers REST.
func (c *cluster) lookupJob(id string) (*job, error) {
	j := c.jobs[id]
	if j == nil {
		return nil, errorf(http.StatusNotFound, "Job %s not found", id)
	}
	return j, nil
}

// Request is the entry point of every REST call: it applies the injected
// unavailability, counts the request and advances the cluster's clock. The
// caller holds no lock; fn runs under the Engine's lock.
func (e *Engine) request(k ClusterKey, endpoint string, fn func(c *cluster, now time.Time) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.clusters[k]
	if c == nil || !c.observed {
		return errorf(http.StatusServiceUnavailable, "Flink REST simulator: no FlinkCluster %s is known", k)
	}
	c.requests[endpoint]++
	if c.unavailable != 0 {
		if c.unavailable > 0 {
			c.unavailable--
		}
		return errorf(http.StatusServiceUnavailable, "Flink REST simulator: 503 injected for %s", k)
	}
	if !c.obs.JobManagerReady {
		return errorf(http.StatusServiceUnavailable, "Flink REST simulator: the JobManager of %s is not ready", k)
	}
	now := e.now()
	e.advance(c, now)
	return fn(c, now)
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newID is a Flink ID: 32 lowercase hex digits.
func newID() string { return randomHex(16) }

func vertexID(jobID string) string {
	sum := md5.Sum([]byte(jobID))
	return hex.EncodeToString(sum[:])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jarName is the name the user uploaded, without the ID prefix.
func jarName(id string) string {
	base := path.Base(id)
	if _, rest, ok := strings.Cut(base, "_"); ok {
		return rest
	}
	return base
}

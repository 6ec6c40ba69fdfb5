package flinksim

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// vertex is one JobVertex of a job's ExecutionGraph: an operator chain run
// by `parallelism` subtasks, every subtask of the job's vertices sharing
// one slot group (so the job needs as many slots as its widest vertex).
type vertex struct {
	id, name       string
	parallelism    int
	maxParallelism int
	// explicitMax is a max parallelism the program set (the operator's
	// setMaxParallelism or pipeline.max-parallelism): restoring state
	// cannot change it (SchedulerBase#computeVertexParallelismStore).
	explicitMax bool
	// stateful says the vertex's operators write state into snapshots.
	stateful bool
	// lower and upper are the vertex's resource requirements, which only
	// the AdaptiveScheduler acts on (JobVertexResourceRequirements).
	lower, upper int
	// samples are the current run's task metrics, one per workload
	// second; a restart starts new task attempts, with new metrics.
	samples []sample
	// consumed says the current run's tasks have had records: a Kafka
	// source reader registers pendingRecords only then.
	consumed bool
}

// defaultVertexName is the job graph of a program run without a workload.
const defaultVertexName = "Source: simulated -> Sink: simulated"

// buildGraph is what the program's StreamGraph becomes: the workload's
// vertices (or the default one) at the submitted parallelism, each capped
// by its maximum parallelism. Without one set, the maximum is
// pipeline.max-parallelism, else KeyGroupRangeAssignment#
// computeDefaultMaxParallelism of the vertex's parallelism. A vertex's ID
// is its head operator's ID, which the program determines, not the job:
// resubmitting the same program yields the same IDs (operatorID).
func buildGraph(parallelism int, w *workload, cf *conf) ([]*vertex, error) {
	models := []VertexModel{{Name: defaultVertexName}}
	if w != nil {
		models = w.w.Vertices
	}
	configured := -1
	if _, ok := cf.value("pipeline.max-parallelism"); ok {
		n, err := cf.integer("pipeline.max-parallelism")
		if err != nil {
			return nil, err
		}
		configured = n
	}
	out := make([]*vertex, 0, len(models))
	upstream := ""
	for i, m := range models {
		v := &vertex{id: operatorID(i, upstream, m.UID), name: m.Name, stateful: !m.Stateless}
		upstream = v.id
		switch {
		case m.MaxParallelism > 0:
			v.maxParallelism, v.explicitMax = m.MaxParallelism, true
		case configured > 0:
			v.maxParallelism, v.explicitMax = configured, true
		default:
			v.maxParallelism = defaultMaxParallelism(parallelism)
		}
		// A parallelism above the maximum is accepted here: the JobMaster
		// refuses it (checkParallelism).
		v.parallelism, v.lower, v.upper = parallelism, 1, parallelism
		out = append(out, v)
	}
	return out, nil
}

// operatorID is StreamGraphHasherV2's hash of a chain's head operator:
// of its uid when the program sets one (DataStream#uid), else of its
// place in the topology (its position and its input's hash), so removing
// or inserting a vertex upstream changes the IDs of those downstream, and
// a uid keeps an operator's ID whatever changes around it. Names do not
// count.
func operatorID(position int, upstream, uid string) string {
	if uid != "" {
		return vertexID("uid:" + uid)
	}
	return vertexID(fmt.Sprintf("generated:%d:%s", position, upstream))
}

// checkParallelism is ExecutionJobVertex's constructor, which the
// DefaultScheduler runs when the JobMaster builds the ExecutionGraph:
// a vertex whose parallelism is above its max parallelism fails the job's
// initialization.
func (j *job) checkParallelism() error {
	for _, v := range j.vertices {
		if v.parallelism > v.maxParallelism {
			return fmt.Errorf("org.apache.flink.runtime.JobException: Vertex %s's parallelism (%d) is higher than the max parallelism (%d). Please lower the parallelism or increase the max parallelism.", v.name, v.parallelism, v.maxParallelism)
		}
	}
	return nil
}

// defaultMaxParallelism is KeyGroupRangeAssignment#
// computeDefaultMaxParallelism: 1.5 × the parallelism rounded up to a
// power of two, at least 128 and at most 32768.
func defaultMaxParallelism(p int) int {
	n := p + p/2
	if n > 1 {
		n = 1 << bits.Len(uint(n-1))
	}
	return min(max(n, 128), 32768)
}

// slotsNeeded is the job's slot count: its widest vertex, as one slot
// sharing group holds one subtask of every vertex per slot
// (SlotSharingGroup, the default group of a JobGraph).
func (j *job) slotsNeeded() int {
	n := 0
	for _, v := range j.vertices {
		n = max(n, v.parallelism)
	}
	return max(1, n)
}

// subtasks is the job's task count over all vertices.
func (j *job) subtasks() int {
	n := 0
	for _, v := range j.vertices {
		n += v.parallelism
	}
	return n
}

func (j *job) vertex(id string) *vertex {
	for _, v := range j.vertices {
		if v.id == id {
			return v
		}
	}
	return nil
}

// resetMetrics empties the task metrics of a restart: each new task has a
// new TaskIOMetricGroup, whose MeterViews and TimerGauges start empty.
func (j *job) resetMetrics() {
	for _, v := range j.vertices {
		v.samples, v.consumed = nil, false
	}
}

// adaptiveSettings are the AdaptiveScheduler's options
// (jobmanager.scheduler: adaptive), as the job's minor names them.
type adaptiveSettings struct {
	// stabilization and wait are how long a job waiting for resources
	// waits for its desired slots before it runs with sufficient ones,
	// and for sufficient ones before it fails.
	stabilization, wait time.Duration
	// minIncrease is the smallest scale-up new slots trigger (1.x).
	minIncrease int
	// cooldown is the least time between rescales (1.19+).
	cooldown time.Duration
	// executingStabilization delays a rescale to fewer slots than desired
	// (2.0+); checkpointTrigger makes a rescale wait for the next
	// completed checkpoint, at most maxDelay (2.0+, FLIP-461).
	executingStabilization time.Duration
	checkpointTrigger      bool
	maxDelay               time.Duration
}

// readAdaptive reads jobmanager.scheduler and, for the adaptive
// scheduler, its options; nil means the DefaultScheduler.
func readAdaptive(cf *conf, interval time.Duration) (*adaptiveSettings, error) {
	s, err := cf.enum("jobmanager.scheduler", "Default", "Adaptive", "AdaptiveBatch")
	if err != nil {
		return nil, err
	}
	if s != "Adaptive" {
		return nil, nil
	}
	a := &adaptiveSettings{}
	dur := func(key string) (time.Duration, error) {
		d, _, err := cf.duration(key)
		return d, err
	}
	prefix := "jobmanager.adaptive-scheduler."
	v2 := cf.version.AtLeast(2, 0)
	stab, wait := prefix+"resource-stabilization-timeout", prefix+"resource-wait-timeout"
	if v2 {
		stab, wait = prefix+"submission.resource-stabilization-timeout", prefix+"submission.resource-wait-timeout"
	}
	if a.stabilization, err = dur(stab); err != nil {
		return nil, err
	}
	if a.wait, err = dur(wait); err != nil {
		return nil, err
	}
	switch {
	case v2:
		if a.cooldown, err = dur(prefix + "executing.cooldown-after-rescaling"); err != nil {
			return nil, err
		}
		if a.executingStabilization, err = dur(prefix + "executing.resource-stabilization-timeout"); err != nil {
			return nil, err
		}
		if interval > 0 {
			a.checkpointTrigger = true
			// rescale-trigger.max-delay defaults to the checkpoint interval
			// × (rescale-trigger.max-checkpoint-failures + 1).
			failures, err := cf.integer(prefix + "rescale-trigger.max-checkpoint-failures")
			if err != nil {
				return nil, err
			}
			a.maxDelay = interval * time.Duration(failures+1)
			if d, set, err := cf.duration(prefix + "rescale-trigger.max-delay"); err != nil {
				return nil, err
			} else if set {
				a.maxDelay = d
			}
		}
	default:
		if a.minIncrease, err = cf.integer(prefix + "min-parallelism-increase"); err != nil {
			return nil, err
		}
		if cf.version.AtLeast(1, 19) {
			if a.cooldown, err = dur(prefix + "scaling-interval.min"); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// The AdaptiveScheduler's states, as the job's status shows them:
// WaitingForResources and CreatingExecutionGraph are CREATED, Executing is
// RUNNING, Restarting is RESTARTING.

// waitForResources is AdaptiveScheduler#goToWaitingForResources: the job
// is CREATED until enough slots are free.
func (j *job) waitForResources(at time.Time) {
	j.setState(flink.JobCreated, at)
	j.waiting, j.waitExpired, j.sufficientAt = true, false, time.Time{}
	j.graphless = true
	j.tasks = "CREATED"
	j.scheduledAt = at
	j.slots = nil
	j.resetMetrics()
}

// scheduleAdaptive is WaitingForResources#checkDesiredOrSufficient-
// ResourcesAvailable (1.x; the DefaultStateTransitionManager's Idling and
// Stabilizing phases on 2.x): a waiting job runs once its desired slots
// are free, or once sufficient ones (every vertex's lower bound) have
// stayed free for the stabilization timeout, counted from when they
// became sufficient and cleared when they stop being so. At the resource
// wait timeout it goes to CreatingExecutionGraph with what there is,
// which fails the job when that is not sufficient. Each vertex gets
// min(upper bound, free slots) subtasks (SlotSharingSlotAllocator#
// determineParallelism).
func (e *Engine) scheduleAdaptive(c *cluster, j *job, free map[string]int, tms []*process, now time.Time) {
	total := 0
	for _, t := range tms {
		total += max(0, free[t.id()])
	}
	desired, lower := 0, 1
	for _, v := range j.vertices {
		desired, lower = max(desired, v.upper), max(lower, v.lower)
	}
	switch {
	case total >= desired:
	case total < lower:
		j.sufficientAt = time.Time{}
		if j.waitExpired {
			// AdaptiveScheduler#determineParallelism in CreatingExecutionGraph.
			cause := "org.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException: Not enough resources available for scheduling."
			j.failureCause, j.failedAt = cause, now
			j.exceptions = append(j.exceptions, rootException{cause: cause, at: now})
			j.waiting = false
			e.terminate(c, j, now, flink.JobFailed)
		}
		return
	case j.waitExpired:
	default:
		if j.sufficientAt.IsZero() {
			j.sufficientAt = now
		}
		if now.Before(j.sufficientAt.Add(j.adaptive.stabilization)) {
			return
		}
	}
	for _, v := range j.vertices {
		v.parallelism = min(v.upper, total)
	}
	if s := j.restoreFrom; s != nil {
		// AdaptiveScheduler#createExecutionGraphAndRestoreState: the state
		// is assigned to the graph built for these slots; if it does not
		// fit, CreatingExecutionGraph ends the job FAILED.
		if err := j.assignStates(s); err != nil {
			j.failureCause, j.failedAt = err.Error(), now
			j.exceptions = append(j.exceptions, rootException{cause: j.failureCause, at: now})
			j.waiting = false
			e.terminate(c, j, now, flink.JobFailed)
			return
		}
	}
	j.parallelism = j.slotsNeeded()
	need := j.parallelism
	for _, t := range tms {
		for free[t.id()] > 0 && need > 0 {
			j.slots = append(j.slots, t.id())
			free[t.id()]--
			need--
		}
	}
	j.waiting, j.graphless = false, false
	j.setState(flink.JobRunning, now)
	j.tasks = "DEPLOYING"
	j.tasksUntil = now.Add(e.opts.DeployDelay)
	j.executingSince = now
}

// adaptiveTarget is the parallelism each vertex would get now from the
// slots the job holds plus the free ones, or nil when that is what it
// runs with: SlotSharingSlotAllocator#determineParallelism, each vertex
// min(its upper bound, the slots), none below its lower bound.
func (j *job) adaptiveTarget(freeTotal int) []int {
	avail := len(j.slots) + freeTotal
	out := make([]int, len(j.vertices))
	changed := false
	for i, v := range j.vertices {
		out[i] = min(v.upper, avail)
		if out[i] < v.lower {
			return nil
		}
		changed = changed || out[i] != v.parallelism
	}
	if !changed {
		return nil
	}
	return out
}

// maybeRescale is Executing#maybeRescale (1.18-1.20) and the
// DefaultStateTransitionManager (2.0+): a running job whose target
// parallelism differs from its own restarts at once (Restarting with no
// backoff), restoring its latest checkpoint with the new parallelism.
// On 1.x new slots and new requirements alike go through
// EnforceMinimalIncreaseRescalingController (a vertex that shrinks, or
// one that grows by min-parallelism-increase; scaling-interval.max is not
// modelled), and within scaling-interval.min of the last rescale (1.19,
// 1.20) Executing#rescaleWhenCooldownPeriodIsOver looks again
// scaling-interval.min after the event. On 2.x new requirements force
// it; new slots short of the desired ones wait the executing
// stabilization timeout; not within the cooldown after the last rescale,
// and with checkpointing only on a completed checkpoint or after the
// trigger's max delay.
func (e *Engine) maybeRescale(c *cluster, j *job, freeTotal int, now time.Time) {
	a := j.adaptive
	target := j.adaptiveTarget(freeTotal)
	if target == nil || !j.runningTasks() {
		j.rescaleWanted, j.rescaleAt = time.Time{}, time.Time{}
		return
	}
	v2 := j.cf().version.AtLeast(2, 0)
	if !v2 {
		should := false
		for i, v := range j.vertices {
			if d := target[i] - v.parallelism; d < 0 || d >= a.minIncrease {
				should = true
			}
		}
		if !should {
			return
		}
	} else if !j.requirementsChanged {
		desired := true
		for i, v := range j.vertices {
			desired = desired && target[i] == v.upper
		}
		if !desired {
			if j.sufficientSince.IsZero() {
				j.sufficientSince = now
			}
			if now.Before(j.sufficientSince.Add(a.executingStabilization)) {
				j.rescaleAt = j.sufficientSince.Add(a.executingStabilization)
				return
			}
		}
	}
	if j.rescaleWanted.IsZero() {
		j.rescaleWanted = now
	}
	due := j.executingSince.Add(a.cooldown)
	if !v2 && j.rescaleWanted.Sub(j.executingSince) <= a.cooldown {
		due = j.rescaleWanted.Add(a.cooldown)
	}
	if a.checkpointTrigger && !j.checkpointSince(j.rescaleWanted) {
		// Wait for a completed checkpoint (which re-evaluates this), at
		// most max-delay after the change was seen.
		due = later(due, j.rescaleWanted.Add(a.maxDelay))
	}
	if now.Before(due) {
		j.rescaleAt = due
		return
	}
	e.rescale(c, j, now)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkpointSince reports whether a checkpoint completed at or after t.
func (j *job) checkpointSince(t time.Time) bool {
	return !j.lastCompletedAt.IsZero() && !j.lastCompletedAt.Before(t)
}

// rescale restarts the job's tasks to change its parallelism, as Executing
// does through AdaptiveScheduler#goToRestarting: pending checkpoints abort,
// the tasks cancel, the job is RESTARTING and numRestarts counts it.
func (e *Engine) rescale(c *cluster, j *job, at time.Time) {
	j.d.jm.logf(at, "INFO Job %s rescales: its resource requirements or slots changed", j.id)
	j.abortPending(at, "org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.")
	j.slots = nil
	j.tasks = "CANCELED"
	j.setState(flink.JobRestarting, at)
	j.until = at
	j.numRestarts++
	j.requirementsChanged = false
	j.rescaleWanted, j.rescaleAt, j.sufficientSince = time.Time{}, time.Time{}, time.Time{}
	c.history[j.id].rescales++
}

func (j *job) cf() *conf { return j.sub.conf }

// waitingEvent is WaitingForResources' timers: the end of the
// stabilization timeout once sufficient slots are free (scheduleAdaptive
// re-evaluates after every event), and the resource wait timeout from
// entering the state (none when negative).
func (e *Engine) waitingEvent(c *cluster, j *job) (time.Time, func(time.Time)) {
	var at time.Time
	var fn func(time.Time)
	if !j.sufficientAt.IsZero() {
		at, fn = j.sufficientAt.Add(j.adaptive.stabilization), func(time.Time) {}
	}
	if j.adaptive.wait >= 0 && !j.waitExpired {
		if t := j.scheduledAt.Add(j.adaptive.wait); fn == nil || t.Before(at) {
			at, fn = t, func(time.Time) { j.waitExpired = true }
		}
	}
	return at, fn
}

package flinksim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// haConfig is what a JobManager's high-availability services read at
// start (HighAvailabilityServicesUtils).
type haConfig struct {
	// mode is ZOOKEEPER or KUBERNETES.
	mode string
	// identity names where the leader election and the pointers live: two
	// JobManagers with the same identity share one HA store.
	identity string
	// storagePath is the cluster's directory in high-availability.
	// storageDir (<storageDir>/<cluster-id>).
	storagePath string
	// jrsPath is where FileSystemJobResultStore writes, and deleteOnCommit
	// whether it deletes an entry once the job is cleaned up.
	jrsPath        string
	deleteOnCommit bool
	// leaseDuration is how long a crashed leader's leadership lasts:
	// the Kubernetes lease, or the ZooKeeper session.
	leaseDuration time.Duration
}

// readHAConfig follows HighAvailabilityMode#fromConfig and what the
// ZooKeeper and Kubernetes HA services need at start; nil without high
// availability.
func readHAConfig(p *process) (*haConfig, error) {
	c := p.conf
	raw, _ := c.value("high-availability.type")
	mode := strings.ToUpper(raw)
	switch mode {
	case "", "NONE", "STANDALONE":
		// "standalone" is the old default recovery mode, mapped to none.
		return nil, nil
	case "ZOOKEEPER", "KUBERNETES":
	default:
		// Any other value names a HighAvailabilityServicesFactory class.
		return nil, fmt.Errorf("org.apache.flink.util.FlinkException: Could not instantiate the HighAvailabilityServicesFactory %s. Caused by: java.lang.ClassNotFoundException: %s", raw, raw)
	}
	h := &haConfig{mode: mode}
	dir, ok := c.raw("high-availability.storageDir")
	if !ok || strings.TrimSpace(dir) == "" {
		fallbacks := []string{}
		for _, k := range c.minor.OldKeys["high-availability.storageDir"] {
			fallbacks = append(fallbacks, "{key="+k+", isDeprecated=true}")
		}
		return nil, fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: Configuration is missing the mandatory parameter: Key: 'high-availability.storageDir' , default: null (fallback keys: [%s])", strings.Join(fallbacks, ", "))
	}
	if err := p.fileSystemFor(dir); err != nil {
		// The BlobStore in HA storage is created at start.
		return nil, err
	}
	clusterID, _ := c.value("high-availability.cluster-id")
	h.storagePath = strings.TrimRight(dir, "/") + "/" + strings.Trim(clusterID, "/")
	if path, ok := c.raw("job-result-store.storage-path"); ok {
		h.jrsPath = path
	} else {
		// FileSystemJobResultStore#createDefaultJobResultStorePath.
		h.jrsPath = strings.TrimRight(dir, "/") + "/job-result-store/" + clusterID
	}
	var err error
	if h.deleteOnCommit, err = c.boolean("job-result-store.delete-on-commit"); err != nil {
		return nil, err
	}
	switch mode {
	case "ZOOKEEPER":
		quorum, ok := c.raw("high-availability.zookeeper.quorum")
		if !ok || strings.TrimSpace(quorum) == "" {
			return nil, fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: No ZooKeeper quorum specified in config.")
		}
		root, _ := c.value("high-availability.zookeeper.path.root")
		h.identity = "zookeeper:" + strings.ReplaceAll(quorum, " ", "") + root + "/" + strings.Trim(clusterID, "/")
		if h.leaseDuration, _, err = c.duration("high-availability.zookeeper.client.session-timeout"); err != nil {
			return nil, err
		}
	case "KUBERNETES":
		id, ok := c.raw("kubernetes.cluster-id")
		if !ok {
			return nil, fmt.Errorf("java.lang.NullPointerException: kubernetes.cluster-id is not set (KubernetesConfigOptions.CLUSTER_ID)")
		}
		ns, _ := c.value("kubernetes.namespace")
		h.identity = "kubernetes:" + ns + "/" + id
		if h.leaseDuration, _, err = c.duration("high-availability.kubernetes.leader-election.lease-duration"); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// haStore is what high availability keeps outside the JobManager
// processes: the leader, the job graphs (DefaultJobGraphStore), each job's
// completed checkpoint pointers (DefaultCompletedCheckpointStore) and
// checkpoint ID counter, all behind ZooKeeper nodes or ConfigMaps whose
// state handles point at blobs in high-availability.storageDir.
type haStore struct {
	identity    string
	leader      string
	vacantUntil time.Time
	jobs        map[string]*haJob
	order       []string
	// results is what each job result store entry records (its
	// JobResult); the entry's file says whether it is dirty or clean.
	results map[string]jobResult
}

// jobResult is a JobResult: the job's terminal state and, for a failed
// job only, its cause (JobResult#createFrom).
type jobResult struct {
	state flink.JobStatus
	cause string
}

type haJob struct {
	sub         *submission
	blob        loc
	checkpoints []haCheckpoint
	counter     int64
	// requirements are the JobResourceRequirements written into the stored
	// job graph, per vertex ID its lower and upper parallelism bound; nil
	// until the first update.
	requirements map[string][2]int
}

type haCheckpoint struct {
	snap *snapshot
	blob loc
}

func newHAStore(identity string) *haStore {
	return &haStore{identity: identity, jobs: map[string]*haJob{}, results: map[string]jobResult{}}
}

// dispatcher is a Dispatcher: the jobs of one JobManager process, with
// their runners and archived results, its job result store and its
// operation caches, all in the process's memory.
type dispatcher struct {
	jm    *process
	jobs  map[string]*job
	order []string
	// jrs is the EmbeddedJobResultStore used without high availability:
	// it keeps clean entries for the life of the process.
	jrs map[string]bool
	// ha is the HA store the Dispatcher leads; nil without high
	// availability.
	ha *haStore
	// savepoints holds savepoint and stop-with-savepoint triggers alike;
	// checkpoints the checkpoint triggers (DispatcherCachedOperationsHandler).
	savepoints, checkpoints *opCache
	// cleanups are the global cleanups under way with high availability,
	// by job ID, with when each ends (SetCleanupDelay).
	cleanups map[string]time.Time
}

func newDispatcher(p *process) *dispatcher {
	return &dispatcher{
		jm: p, jobs: map[string]*job{}, jrs: map[string]bool{}, cleanups: map[string]time.Time{},
		savepoints: newOpCache(p.storeDuration), checkpoints: newOpCache(p.storeDuration),
	}
}

// locate resolves a URI as the Dispatcher's JobManager sees it.
func (d *dispatcher) locate(uri string) (loc, error) { return d.jm.locate(uri) }

// jrsEntry is where FileSystemJobResultStore keeps a job's entry.
func (d *dispatcher) jrsEntry(id string, dirty bool) (loc, error) {
	name := id + ".json"
	if dirty {
		name = id + "_DIRTY.json"
	}
	return d.locate(strings.TrimRight(d.jm.ha.jrsPath, "/") + "/" + name)
}

// hasResult is JobResultStore#hasJobResultEntry.
func (d *dispatcher) hasResult(e *Engine, id string) bool {
	if d.ha == nil {
		return d.jrs[id]
	}
	for _, dirty := range []bool{true, false} {
		if l, err := d.jrsEntry(id, dirty); err == nil && e.fs.exists(l) {
			return true
		}
	}
	return false
}

// recordResult writes the job result as the Dispatcher does when a job
// reaches a globally terminal state (Dispatcher#jobReachedTerminalState:
// JobResultStore#createDirtyResult), then runs the job's global cleanup,
// which with high availability takes the cluster's cleanup delay
// (cleanUp). The embedded store used without it is the process's memory,
// cleaned at once.
func (d *dispatcher) recordResult(e *Engine, c *cluster, j *job, at time.Time) {
	id := j.id
	if d.ha == nil {
		d.jrs[id] = true
		return
	}
	if l, err := d.jrsEntry(id, true); err == nil {
		e.fs.write(l)
		r := jobResult{state: j.state}
		if j.state == flink.JobFailed {
			r.cause = j.failureCause
		}
		d.ha.results[id] = r
	}
	if c.cleanupDelay > 0 {
		d.cleanups[id] = at.Add(c.cleanupDelay)
		return
	}
	d.cleanUp(e, id)
}

// cleanUp ends a job's global cleanup (DispatcherResourceCleanerFactory:
// the job graph and the HA data go) and marks its result clean
// (JobResultStore#markResultAsClean): FileSystemJobResultStore deletes the
// dirty entry with job-result-store.delete-on-commit (the default) and
// renames it to the clean one otherwise.
func (d *dispatcher) cleanUp(e *Engine, id string) {
	delete(d.cleanups, id)
	if l, err := d.jrsEntry(id, true); err == nil {
		e.fs.remove(l)
	}
	if !d.jm.ha.deleteOnCommit {
		if l, err := d.jrsEntry(id, false); err == nil {
			e.fs.write(l)
		}
	}
	if hj := d.ha.jobs[id]; hj != nil {
		// Global cleanup: the job graph and the checkpoint pointers go.
		e.fs.remove(hj.blob)
		for _, cp := range hj.checkpoints {
			e.fs.remove(cp.blob)
		}
		delete(d.ha.jobs, id)
		d.ha.order = slices.DeleteFunc(d.ha.order, func(x string) bool { return x == id })
	}
}

// recover is SessionDispatcherLeaderProcess#onStart: the new leader reads
// every job graph of the HA store and runs it again (ExecutionType
// RECOVERY), restoring from the job's latest completed checkpoint. A job
// graph whose blob is gone fails the whole leader process. A job whose
// result is dirty (its cleanup did not end) is not recovered
// (SessionDispatcherLeaderProcess#recoverJobs skips it): a
// CheckpointResourcesCleanupRunner finishes its cleanup (cleanUpRecovered).
func (d *dispatcher) recover(e *Engine, c *cluster, now time.Time, s *haStore) error {
	d.ha = s
	dirty := d.dirtyResults(e)
	for _, id := range dirty {
		d.cleanUpRecovered(e, c, id, now)
	}
	for _, id := range s.order {
		hj := s.jobs[id]
		if slices.Contains(dirty, id) {
			continue
		}
		if !e.fs.exists(hj.blob) {
			return fmt.Errorf("org.apache.flink.util.FlinkRuntimeException: Could not recover job with job id %s. Caused by: java.io.FileNotFoundException: %s (No such file or directory): the job graph's state handle points at HA storage that is gone", id, hj.blob)
		}
	}
	for _, id := range s.order {
		hj := s.jobs[id]
		if slices.Contains(dirty, id) {
			continue
		}
		j := e.newJob(c, d, hj.sub, now, true)
		d.add(j)
		e.recordRecovery(c, d, now, hj)
		d.jm.logf(now, "INFO Recovered job %s from the job graph store", id)
	}
	return nil
}

// dirtyResults are the job IDs whose job result store entry is dirty
// (JobResultStore#getDirtyResults), in ID order.
func (d *dispatcher) dirtyResults(e *Engine) []string {
	var ids []string
	for id := range d.ha.results {
		if l, err := d.jrsEntry(id, true); err == nil && e.fs.exists(l) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// cleanUpRecovered is Dispatcher#runCleanupRetry for a dirty result: a
// CheckpointResourcesCleanupRunner shuts the job's completed checkpoint
// store down with its terminal state (what the retention does not keep is
// deleted; the old leader did that already here) and completes at once,
// so the Dispatcher archives what the runner shows of the job
// (Dispatcher#jobReachedTerminalState) before the rest of the cleanup
// runs, with the cluster's cleanup delay. The runner shows only the job's
// result (CheckpointResourcesCleanupRunner#requestJob:
// ArchivedExecutionGraph#createSparseArchivedExecutionGraph): the name
// "unknown", the state the result derives (ApplicationStatus#
// deriveJobStatus), no vertices, no checkpointing settings and so no
// checkpoint statistics, a failure only for FAILED, and no end time but a
// failure's.
func (d *dispatcher) cleanUpRecovered(e *Engine, c *cluster, id string, now time.Time) {
	result := d.ha.results[id]
	state := result.state
	j := &job{
		d: d, id: id, name: "unknown", state: state, tasks: string(state), start: now,
		timestamps: map[flink.JobStatus]time.Time{flink.JobInitializing: now}, resultOnly: true,
	}
	if hj := d.ha.jobs[id]; hj != nil {
		j.sub = hj.sub
	} else {
		j.sub = &submission{id: id, name: "unknown", conf: d.jm.conf}
	}
	if state == flink.JobFailed {
		// The failure's time is the runner's.
		j.timestamps[state], j.end = now, now
		j.failureCause, j.failedAt = result.cause, now
	}
	d.add(j)
	d.archive(c, j, now)
	if h := c.history[id]; h != nil {
		h.result, h.present = j, true
	}
	d.jm.logf(now, "INFO Cleaning up job %s, which reached globally terminal state %s before this JobManager took over", id, state)
	if c.cleanupDelay > 0 {
		d.cleanups[id] = now.Add(c.cleanupDelay)
		return
	}
	d.cleanUp(e, id)
}

func (d *dispatcher) add(j *job) {
	if _, ok := d.jobs[j.id]; !ok {
		d.order = append(d.order, j.id)
	}
	d.jobs[j.id] = j
}

// suspend is what a JobManager's end does to its jobs: they stop without
// reaching a globally terminal state, so with high availability their job
// graphs and checkpoint pointers stay for the next leader, and without it
// the jobs are gone, as are the archived ones. A graceful shutdown
// (SIGTERM: ClusterEntrypoint#closeAsync → Dispatcher#onStop →
// JobMaster#onStop → SchedulerBase#closeAsync) suspends each job
// (ExecutionGraph#suspend) and shuts its completed checkpoint store down
// with SUSPENDED (SchedulerBase#shutDownCheckpointServices): without high
// availability StandaloneCompletedCheckpointStore#shutdown deletes every
// checkpoint whose properties discard on suspension (all but
// RETAIN_ON_CANCELLATION's); with it DefaultCompletedCheckpointStore#
// shutdown only releases them ("Suspending"), since the next leader
// recovers from them. A crashed process runs none of this.
func (e *Engine) suspend(d *dispatcher, now time.Time, c *cluster, graceful bool) {
	for _, id := range d.order {
		j := d.jobs[id]
		if !j.state.Terminal() {
			j.abortPending(now, "org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.")
			j.slots = nil
			if graceful {
				e.suspendJob(d, j, now)
			}
		}
		if h := c.history[j.id]; h.shows(j) {
			h.present = false
		}
	}
}

func (e *Engine) suspendJob(d *dispatcher, j *job, now time.Time) {
	j.setState(flink.JobSuspended, now)
	j.tasks = "CANCELED"
	if d.ha == nil {
		for _, snap := range j.store {
			if snap.props.shouldDiscard(flink.JobSuspended) {
				e.discard(snap)
			}
		}
	}
	j.store = nil
	d.jm.logf(now, "INFO Job %s switched to SUSPENDED: its JobManager shuts down", j.id)
}

// submission is a job as submitted: what its JobGraph carries.
type submission struct {
	id, name    string
	parallelism int
	// conf is the job's effective configuration: the cluster's plus the
	// request's flinkConfiguration (JarRunHandler).
	conf *conf
	// restorePath, claimMode and allowNonRestored are its
	// SavepointRestoreSettings.
	restorePath      string
	claimMode        string
	allowNonRestored bool
	// graph is the JobGraph's vertices as the program built them.
	graph []*vertex
}

// submit is Dispatcher#submitJob: a job ID that is running, or known to
// the job result store as globally terminal, is refused.
func (d *dispatcher) submit(e *Engine, c *cluster, now time.Time, sub *submission) error {
	if old := d.jobs[sub.id]; (old != nil && !old.state.Terminal()) || d.hasResult(e, sub.id) {
		return fmt.Errorf("org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted.")
	}
	if err := applyParallelismOverrides(d.jm.conf, sub); err != nil {
		return err
	}
	if d.ha != nil {
		// DefaultJobGraphStore#putJobGraph, before the job runs.
		blob, err := d.locate(d.jm.ha.storagePath + "/submittedJobGraph" + randomHex(6))
		if err != nil {
			return err
		}
		e.fs.write(blob)
		d.ha.jobs[sub.id] = &haJob{sub: sub, blob: blob}
		if !slices.Contains(d.ha.order, sub.id) {
			d.ha.order = append(d.ha.order, sub.id)
		}
	}
	d.add(e.newJob(c, d, sub, now, false))
	e.recordStart(c, d, now, sub)
	return nil
}

// lookup is a job as the Dispatcher knows it (Dispatcher#requestJob
// through the leader gateway).
func (d *dispatcher) lookup(id string) (*job, error) {
	j := d.jobs[id]
	if j == nil {
		return nil, restErr(http.StatusNotFound, "org.apache.flink.runtime.rest.NotFoundException", "Job %s not found\nCaused by: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (%s)", id, id)
	}
	return j, nil
}

// gateway is Dispatcher#getJobMasterGateway for operations on a running
// job: an unknown or finished job has none, nor has one still
// initializing.
func (d *dispatcher) gateway(id string) (*job, string) {
	j := d.jobs[id]
	switch {
	case j == nil || j.state.Terminal():
		return nil, fmt.Sprintf("org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (%s)", id)
	case j.state == flink.JobInitializing:
		return nil, "org.apache.flink.runtime.dispatcher.UnavailableDispatcherOperationException: Unable to get JobMasterGateway for initializing job. The requested operation is not available while the JobManager is initializing."
	}
	return j, ""
}

// parallelismOverrides is PipelineOptions#PARALLELISM_OVERRIDES (1.17+).
const parallelismOverrides = "pipeline.jobvertex-parallelism-overrides"

// applyParallelismOverrides is Dispatcher#applyParallelismOverrides
// (1.17+), run by Dispatcher#internalSubmitJob before the job graph is
// persisted and its JobMaster built: the overrides of the Dispatcher's
// configuration, then, from 1.18.1, of the job's, set the parallelism of
// each vertex they name by its ID; an ID the graph does not have is
// ignored. The job's are a JarRunHandler request's flinkConfiguration
// (JarRunRequestBody from 1.17; JarHandlerContext#applyToConfiguration
// adds it to the configuration the program runs with), which reach the
// JobGraph's configuration only since FLINK-33534
// (FlinkPipelineTranslationUtil#getJobGraph, 1.18.1 and 1.19+): in 1.17.x
// and 1.18.0 the Dispatcher reads its own configuration alone, and a
// request's overrides change nothing. The vertex's parallelism is also the
// AdaptiveScheduler's upper bound (JobResourceRequirements), and a max
// parallelism the program did not set is derived from it later
// (SchedulerBase#computeVertexParallelismStore), so it follows too. The
// value is a Map option, "id:parallelism,id:parallelism"
// (ConfigurationUtils#convertToMap, which refuses an item without ':'
// whatever its key). Only the value of a vertex the graph has is parsed,
// by Integer#parseInt, as the loop over the graph's vertices reaches it:
// an unknown ID's value is never read. JobVertex#setParallelism (1.16+,
// so every minor with overrides) takes a parallelism of at least one, or
// -1 (ExecutionConfig#PARALLELISM_DEFAULT, unset), which the scheduler
// runs as 1 (SchedulerBase#normalizeParallelism, also the base of the
// default max parallelism, getDefaultMaxParallelism). A later change to
// apache/flink moves this out of the Dispatcher (ParallelismOverrideUtil),
// and a revision of it refuses -1; no minor modelled here ships it.
func applyParallelismOverrides(dispatcher *conf, sub *submission) error {
	if _, known := sub.conf.minor.Options[parallelismOverrides]; !known {
		return nil
	}
	overrides := map[string]string{}
	confs := []*conf{dispatcher}
	if readsJobOverrides(sub.conf.version) {
		confs = append(confs, sub.conf)
	}
	for _, cf := range confs {
		if err := readOverrides(cf, overrides); err != nil {
			return err
		}
	}
	for _, v := range sub.graph {
		raw, ok := overrides[v.id]
		if !ok {
			continue
		}
		n64, err := strconv.ParseInt(raw, 10, 32) // an int, as Integer#parseInt
		n := int(n64)
		if err != nil {
			return fmt.Errorf("java.lang.NumberFormatException: For input string: \"%s\"", raw)
		}
		switch {
		case n == parallelismDefault:
			n = 1 // SchedulerBase#normalizeParallelism
		case n < 1:
			return fmt.Errorf("java.lang.IllegalArgumentException: The parallelism must be at least one, or %d (unset).", parallelismDefault)
		}
		v.parallelism, v.upper = n, n
		if !v.explicitMax {
			v.maxParallelism = defaultMaxParallelism(n)
		}
	}
	return nil
}

// parallelismDefault is ExecutionConfig#PARALLELISM_DEFAULT.
const parallelismDefault = -1

// readsJobOverrides: the Dispatcher of v applies the job's own overrides,
// not only its configuration's (FLINK-33534: release-1.18 after 1.18.0,
// and 1.19). The operator's flink.Version.ReadsRequestOverrides states
// the same fact; it is kept apart on purpose, so the simulator does not
// follow the operator if that one is wrong.
func readsJobOverrides(v flink.Version) bool {
	return v.AtLeast(1, 19) || (v.Major == 1 && v.Minor == 18 && v.Patch >= 1)
}

// readOverrides adds a configuration's overrides to into, unparsed.
func readOverrides(cf *conf, into map[string]string) error {
	if cf == nil {
		return nil
	}
	raw, ok := cf.raw(parallelismOverrides)
	if !ok || strings.TrimSpace(raw) == "" {
		return nil
	}
	for _, entry := range strings.Split(raw, ",") {
		// Exactly two parts (ConfigurationUtils#convertToProperties).
		k, v, found := strings.Cut(entry, ":")
		if !found || strings.Contains(v, ":") {
			return parseErr(parallelismOverrides, raw, fmt.Errorf("java.lang.IllegalArgumentException: Map item is not a key-value pair (missing ':'?)"))
		}
		into[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

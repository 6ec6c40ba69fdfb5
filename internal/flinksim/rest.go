package flinksim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// The REST operations, one method per endpoint, returning the typed bodies
// of package flink. The HTTP handler calls them; in-process tests may too.
// Errors carry the HTTP status and message Flink's handler answers with;
// status 0 means the connection would have been refused.

var hexID = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)

// pathID is a JobIDPathParameter or TriggerIdPathParameter: 32 hex digits,
// else HandlerRequest refuses the request.
func pathID(name, v string) (string, error) {
	if !hexID.MatchString(v) {
		return "", handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve path parameter (%s) from value \"%s\".", name, v)
	}
	return strings.ToLower(v), nil
}

// Overview answers GET /overview.
func (e *Engine) Overview(k ClusterKey) (*flink.ClusterOverview, error) {
	return e.overview(target{k: k})
}

func (e *Engine) overview(t target) (out *flink.ClusterOverview, err error) {
	err = e.request(t, "GET /overview", func(c *cluster, jm *process, now time.Time) error {
		d, err := c.dispatcherFor(jm)
		if err != nil {
			return err
		}
		out = &flink.ClusterOverview{
			FlinkVersion: jm.version.String(), FlinkCommit: SimulatedFlinkRevision,
			TaskManagers: int32(len(c.registered())), SlotsTotal: int32(c.slotsTotal()), SlotsAvailable: int32(c.slotsAvailable()),
		}
		// Dispatcher#requestClusterOverview: the jobs its runners run,
		// plus what the job store counts of the archived ones.
		for _, j := range d.jobs {
			if j.archivedAt.IsZero() {
				out.JobsRunning++
			}
		}
		out.JobsFinished, out.JobsCancelled, out.JobsFailed = d.storedOverview()
		return nil
	})
	return out, err
}

// DashboardConfiguration answers GET /config.
func (e *Engine) DashboardConfiguration(k ClusterKey) (*flink.DashboardConfiguration, error) {
	return e.dashboardConfiguration(target{k: k})
}

func (e *Engine) dashboardConfiguration(t target) (out *flink.DashboardConfiguration, err error) {
	err = e.request(t, "GET /config", func(c *cluster, jm *process, now time.Time) error {
		out = &flink.DashboardConfiguration{
			RefreshInterval: jm.rest.graphTTL.Milliseconds(), TimezoneName: "Coordinated Universal Time", TimezoneOffset: 0,
			FlinkVersion: jm.version.String(), FlinkRevision: SimulatedFlinkRevision,
			Features: flink.Features{WebSubmit: true, WebCancel: true},
		}
		return nil
	})
	return out, err
}

// Jobs answers GET /jobs: the Dispatcher's jobs, running and archived.
func (e *Engine) Jobs(k ClusterKey) (*flink.JobIDsWithStatusOverview, error) {
	return e.jobs(target{k: k})
}

func (e *Engine) jobs(t target) (out *flink.JobIDsWithStatusOverview, err error) {
	err = e.request(t, "GET /jobs", func(c *cluster, jm *process, now time.Time) error {
		d, err := c.dispatcherFor(jm)
		if err != nil {
			return err
		}
		out = &flink.JobIDsWithStatusOverview{Jobs: []flink.JobIDWithStatus{}}
		for _, id := range d.order {
			if j := d.jobs[id]; !j.unlisted {
				out.Jobs = append(out.Jobs, flink.JobIDWithStatus{ID: id, Status: j.state})
			}
		}
		return nil
	})
	return out, err
}

// JobsOverview answers GET /jobs/overview.
func (e *Engine) JobsOverview(k ClusterKey) (*flink.MultipleJobsDetails, error) {
	return e.jobsOverview(target{k: k})
}

func (e *Engine) jobsOverview(t target) (out *flink.MultipleJobsDetails, err error) {
	err = e.request(t, "GET /jobs/overview", func(c *cluster, jm *process, now time.Time) error {
		d, err := c.dispatcherFor(jm)
		if err != nil {
			return err
		}
		out = &flink.MultipleJobsDetails{Jobs: []flink.JobDetails{}}
		for _, id := range d.order {
			j := d.jobs[id]
			if j.unlisted {
				continue
			}
			tasks := map[string]int32{"total": int32(j.subtasks())}
			for _, s := range executionStates {
				tasks[strings.ToLower(s)] = 0
			}
			tasks[strings.ToLower(j.tasks)] = int32(j.subtasks())
			out.Jobs = append(out.Jobs, flink.JobDetails{
				JID: j.id, Name: j.name, State: j.state, StartTime: ms(j.start), EndTime: endTime(j),
				Duration: duration(j, now), LastModification: ms(j.timestamps[j.state]), Tasks: tasks,
			})
		}
		return nil
	})
	return out, err
}

// executionStates are ExecutionState's values, which JobDetailsInfo counts.
var executionStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING", "INITIALIZING"}

// jobStatuses are JobStatus's values, each with a timestamp in
// JobDetailsInfo (0 when not reached).
var jobStatuses = []flink.JobStatus{
	flink.JobInitializing, flink.JobCreated, flink.JobRunning, flink.JobFailing, flink.JobFailed, flink.JobCancelling,
	flink.JobCanceled, flink.JobFinished, flink.JobRestarting, flink.JobSuspended, flink.JobReconciling,
}

// Job answers GET /jobs/{jobid}.
func (e *Engine) Job(k ClusterKey, jobID string) (*flink.JobDetailsInfo, error) {
	return e.job(target{k: k}, jobID)
}

func (e *Engine) job(t target, jobID string) (out *flink.JobDetailsInfo, err error) {
	err = e.request(t, "GET /jobs/{jobid}", func(c *cluster, jm *process, now time.Time) error {
		// JobDetailsHandler reads the execution graph cache.
		j, err := e.graph(c, jm, jobID, now)
		if err != nil {
			return err
		}
		ts := map[string]int64{}
		for _, s := range jobStatuses {
			ts[string(s)] = 0
			if at, ok := j.timestamps[s]; ok {
				ts[string(s)] = ms(at)
			}
		}
		out = &flink.JobDetailsInfo{
			JID: j.id, Name: j.name, IsStoppable: false, State: j.state,
			StartTime: ms(j.start), EndTime: endTime(j), Duration: duration(j, now),
			MaxParallelism: -1, Now: ms(now), Timestamps: ts, Vertices: []flink.JobDetailsVertex{},
			StatusCounts: map[string]int32{},
			Plan:         map[string]any{"jid": j.id, "name": j.name, "type": "STREAMING", "nodes": []any{}},
		}
		for _, s := range executionStates {
			out.StatusCounts[s] = 0
		}
		if !j.hasGraph() {
			return nil
		}
		out.StatusCounts[j.tasks] = int32(len(j.vertices))
		for _, v := range j.vertices {
			tasks := map[string]int32{}
			for _, s := range executionStates {
				tasks[s] = 0
			}
			tasks[j.tasks] = int32(v.parallelism)
			out.Vertices = append(out.Vertices, flink.JobDetailsVertex{
				ID: v.id, Name: v.name, MaxParallelism: int32(v.maxParallelism),
				Parallelism: int32(v.parallelism), Status: j.tasks,
				StartTime: ms(j.start), EndTime: endTime(j), Duration: duration(j, now), Tasks: tasks,
			})
		}
		return nil
	})
	return out, err
}

// Checkpoints answers GET /jobs/{jobid}/checkpoints. Latest.Restored says
// what the job's current run restored from.
func (e *Engine) Checkpoints(k ClusterKey, jobID string) (*flink.CheckpointingStatistics, error) {
	return e.checkpoints(target{k: k}, jobID)
}

func (e *Engine) checkpoints(t target, jobID string) (out *flink.CheckpointingStatistics, err error) {
	err = e.request(t, "GET /jobs/{jobid}/checkpoints", func(c *cluster, jm *process, now time.Time) error {
		out, err = e.checkpointStats(c, jm, jobID, now)
		return err
	})
	return out, err
}

// JobExceptions answers GET /jobs/{jobid}/exceptions.
func (e *Engine) JobExceptions(k ClusterKey, jobID string) (*flink.JobExceptions, error) {
	body, err := e.jobExceptions(target{k: k}, jobID, 20)
	if err != nil {
		return nil, err
	}
	var out flink.JobExceptions
	b, _ := json.Marshal(body)
	return &out, json.Unmarshal(b, &out)
}

// jobExceptions is JobExceptionsHandler: the root exception history,
// newest first, at most maxExceptions entries; before 2.0 also the
// deprecated root-exception and all-exceptions.
func (e *Engine) jobExceptions(t target, jobID string, maxExceptions int) (out map[string]any, err error) {
	err = e.request(t, "GET /jobs/{jobid}/exceptions", func(c *cluster, jm *process, now time.Time) error {
		// JobExceptionsHandler reads the execution graph cache.
		j, err := e.graph(c, jm, jobID, now)
		if err != nil {
			return err
		}
		entries := []map[string]any{}
		for i := len(j.exceptions) - 1; i >= 0 && len(entries) < maxExceptions; i-- {
			x := j.exceptions[i]
			cls, _, _ := strings.Cut(x.cause, ":")
			entry := map[string]any{
				"exceptionName": cls, "stacktrace": x.cause + "\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)",
				"timestamp": ms(x.at), "concurrentExceptions": []any{}, "taskName": nil, "taskManagerId": nil,
			}
			where := "location"
			if jm.version.AtLeast(2, 0) {
				where = "endpoint"
			}
			entry[where] = nil
			if x.task != "" {
				entry["taskName"], entry[where], entry["taskManagerId"] = x.task, x.location+":6122", x.location
			}
			if jm.version.AtLeast(1, 18) {
				entry["failureLabels"] = map[string]string{}
			}
			entries = append(entries, entry)
		}
		out = map[string]any{"exceptionHistory": map[string]any{"entries": entries, "truncated": len(j.exceptions) > len(entries)}}
		if !jm.version.AtLeast(2, 0) {
			out["all-exceptions"], out["truncated"] = []any{}, false
			out["root-exception"], out["timestamp"] = nil, nil
			if j.failureCause != "" {
				out["root-exception"], out["timestamp"] = j.failureCause+"\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)", ms(j.failedAt)
			}
		}
		return nil
	})
	return out, err
}

// TriggerCheckpoint answers POST /jobs/{jobid}/checkpoints (Flink 1.17+).
func (e *Engine) TriggerCheckpoint(k ClusterKey, jobID string, req flink.CheckpointTriggerRequest) (*flink.TriggerResponse, error) {
	return e.triggerCheckpoint(target{k: k}, jobID, req)
}

func (e *Engine) triggerCheckpoint(t target, jobID string, req flink.CheckpointTriggerRequest) (out *flink.TriggerResponse, err error) {
	err = e.request(t, "POST /jobs/{jobid}/checkpoints", func(c *cluster, jm *process, now time.Time) error {
		id, err := pathID("jobid", jobID)
		if err != nil {
			return err
		}
		trigger, err := triggerID(req.TriggerID, "CheckpointTriggerRequestBody")
		if err != nil {
			return err
		}
		d, err := c.dispatcherFor(jm)
		if err != nil {
			return err
		}
		out = &flink.TriggerResponse{RequestID: trigger}
		key := opKey{id, trigger}
		if d.checkpoints.contains(key, now) {
			// DispatcherCachedOperationsHandler#triggerCheckpoint: a known
			// key is acknowledged without a second checkpoint.
			return nil
		}
		r := d.checkpoints.register(key)
		j, why := d.gateway(id)
		if j == nil {
			r.complete(now, "", 0, why)
			return nil
		}
		c.history[id].checkpointsTriggered++
		c.totals.CheckpointsTriggered++
		if !j.runningTasks() {
			r.complete(now, "", 0, "org.apache.flink.runtime.checkpoint.CheckpointException: Not all required tasks are currently running.")
			return nil
		}
		e.addPending(c, j, &pending{kind: kindCheckpoint, result: r}, now)
		return nil
	})
	return out, err
}

// hasGraph reports whether the job has an ExecutionGraph: not while
// INITIALIZING, nor when its JobMaster failed to start, when REST shows a
// sparse archived graph without vertices or checkpoint statistics.
func (j *job) hasGraph() bool {
	_, created := j.timestamps[flink.JobCreated]
	return created
}

func (j *job) runningTasks() bool { return j.state == flink.JobRunning && j.tasks == "RUNNING" }

// triggerID is the request's TriggerId or a new one; TriggerId's
// deserializer refuses what is not 32 hex digits.
func triggerID(v, body string) (string, error) {
	if v == "" {
		return newID(), nil
	}
	if !hexID.MatchString(v) {
		return "", handlerErr(http.StatusBadRequest, "Request did not match expected format %s.", body)
	}
	return strings.ToLower(v), nil
}

// operation is a trigger's result in the answering JobManager's
// CompletedOperationCache (DispatcherCachedOperationsHandler keeps the
// savepoint and stop-with-savepoint triggers in one, checkpoint triggers
// in another); a trigger it does not know is a 404 with Flink's message.
func (c *cluster) operation(jm *process, kind, jobID, trigger string, now time.Time) (*opResult, error) {
	id, err := pathID("jobid", jobID)
	if err != nil {
		return nil, err
	}
	tid, err := pathID("triggerid", trigger)
	if err != nil {
		return nil, err
	}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return nil, err
	}
	cache := d.savepoints
	if kind == "checkpoint" {
		cache = d.checkpoints
	}
	r := cache.get(opKey{id, tid}, now)
	if r == nil {
		return nil, handlerErr(http.StatusNotFound, "There is no %s operation with triggerId=%s for job %s.", kind, tid, id)
	}
	return r, nil
}

// CheckpointStatus answers GET /jobs/{jobid}/checkpoints/{triggerid}.
func (e *Engine) CheckpointStatus(k ClusterKey, jobID, triggerID string) (*flink.CheckpointOperation, error) {
	return e.checkpointStatus(target{k: k}, jobID, triggerID)
}

func (e *Engine) checkpointStatus(t target, jobID, trigger string) (out *flink.CheckpointOperation, err error) {
	err = e.request(t, "GET /jobs/{jobid}/checkpoints/{triggerid}", func(c *cluster, jm *process, now time.Time) error {
		r, err := c.operation(jm, "checkpoint", jobID, trigger, now)
		if err != nil {
			return err
		}
		out = &flink.CheckpointOperation{Status: flink.QueueStatus{ID: flink.OperationInProgress}}
		if r.done {
			out.Status.ID = flink.OperationCompleted
			out.Operation = &flink.CheckpointInfo{FailureCause: throwable(r.failure)}
			if r.failure == "" {
				out.Operation.CheckpointID = r.id
			}
		}
		return nil
	})
	return out, err
}

// TriggerSavepoint answers POST /jobs/{jobid}/savepoints.
func (e *Engine) TriggerSavepoint(k ClusterKey, jobID string, req flink.SavepointTriggerRequest) (*flink.TriggerResponse, error) {
	return e.triggerSavepoint(target{k: k}, jobID, req)
}

func (e *Engine) triggerSavepoint(t target, jobID string, req flink.SavepointTriggerRequest) (out *flink.TriggerResponse, err error) {
	kind := kindSavepoint
	if req.CancelJob {
		kind = kindCancelSavepoint
	}
	err = e.request(t, "POST /jobs/{jobid}/savepoints", func(c *cluster, jm *process, now time.Time) error {
		trigger, err := e.savepointOp(c, jm, now, jobID, req.TriggerID, "SavepointTriggerRequestBody", "target-directory", req.TargetDirectory, kind, req.FormatType)
		out = &flink.TriggerResponse{RequestID: trigger}
		return err
	})
	return out, err
}

// StopWithSavepoint answers POST /jobs/{jobid}/stop. The job keeps running
// until the savepoint completes, then FINISHES; if the savepoint fails it
// keeps running; if its tasks do not finish (StopTasksDoNotFinish) it
// fails over and the operation fails.
func (e *Engine) StopWithSavepoint(k ClusterKey, jobID string, req flink.StopWithSavepointRequest) (*flink.TriggerResponse, error) {
	return e.stopWithSavepoint(target{k: k}, jobID, req)
}

func (e *Engine) stopWithSavepoint(t target, jobID string, req flink.StopWithSavepointRequest) (out *flink.TriggerResponse, err error) {
	err = e.request(t, "POST /jobs/{jobid}/stop", func(c *cluster, jm *process, now time.Time) error {
		trigger, err := e.savepointOp(c, jm, now, jobID, req.TriggerID, "StopWithSavepointRequestBody", "targetDirectory", req.TargetDirectory, kindStop, req.FormatType)
		out = &flink.TriggerResponse{RequestID: trigger}
		return err
	})
	return out, err
}

// savepointOp is SavepointHandlers' trigger: the target directory, else the
// receiving JobManager's configured savepoint directory, else a 400; then
// DispatcherCachedOperationsHandler#registerOperationIdempotently, so a
// trigger ID already in flight or cached (savepoint and stop alike) starts
// nothing; then the job's scheduler, where a job that is not running fails
// the operation, not the request.
func (e *Engine) savepointOp(c *cluster, jm *process, now time.Time, jobID, reqTrigger, body, field, dir string, kind pendingKind, format flink.SavepointFormatType) (string, error) {
	id, err := pathID("jobid", jobID)
	if err != nil {
		return "", err
	}
	trigger, err := triggerID(reqTrigger, body)
	if err != nil {
		return "", err
	}
	if dir == "" {
		dir, _ = jm.conf.raw(savepointDirKey(jm.version))
	}
	if dir == "" {
		return "", handlerErr(http.StatusBadRequest, "Config key [%s] is not set. Property [%s] must be provided.", savepointDirKey(jm.version), field)
	}
	d, err := c.dispatcherFor(jm)
	if err != nil {
		return "", err
	}
	key := opKey{id, trigger}
	if d.savepoints.contains(key, now) {
		return trigger, nil
	}
	r := d.savepoints.register(key)
	j, why := d.gateway(id)
	if j == nil {
		r.complete(now, "", 0, why)
		return trigger, nil
	}
	h := c.history[id]
	h.savepointsTriggered++
	c.totals.SavepointsTriggered++
	if kind == kindStop {
		h.stopsTriggered++
		c.totals.StopsTriggered++
	}
	if !j.runningTasks() {
		r.complete(now, "", 0, "org.apache.flink.runtime.checkpoint.CheckpointException: Not all required tasks are currently running.")
		return trigger, nil
	}
	if err := jm.fileSystemFor(dir); err != nil {
		r.complete(now, "", 0, "org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.\nCaused by: "+err.Error())
		return trigger, nil
	}
	if kind != kindSavepoint {
		// stopCheckpointScheduler: periodic checkpoints stop and those in
		// flight are aborted.
		j.abortPending(now, "org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.")
		j.stopping = true
	}
	if format == "" {
		format = flink.SavepointFormatCanonical
	}
	e.addPending(c, j, &pending{kind: kind, target: dir, format: format, result: r}, now)
	return trigger, nil
}

// savepointDirKey is CheckpointingOptions.SAVEPOINT_DIRECTORY's key.
func savepointDirKey(v flink.Version) string {
	if v.AtLeast(1, 20) {
		return "execution.checkpointing.savepoint-dir"
	}
	return "state.savepoints.dir"
}

// SavepointStatus answers GET /jobs/{jobid}/savepoints/{triggerid}, for
// savepoints and stop-with-savepoint alike.
func (e *Engine) SavepointStatus(k ClusterKey, jobID, triggerID string) (*flink.SavepointOperation, error) {
	return e.savepointStatus(target{k: k}, jobID, triggerID)
}

func (e *Engine) savepointStatus(t target, jobID, trigger string) (out *flink.SavepointOperation, err error) {
	err = e.request(t, "GET /jobs/{jobid}/savepoints/{triggerid}", func(c *cluster, jm *process, now time.Time) error {
		r, err := c.operation(jm, "savepoint", jobID, trigger, now)
		if err != nil {
			return err
		}
		out = &flink.SavepointOperation{Status: flink.QueueStatus{ID: flink.OperationInProgress}}
		if r.done {
			out.Status.ID = flink.OperationCompleted
			out.Operation = &flink.SavepointInfo{Location: r.location, FailureCause: throwable(r.failure)}
		}
		return nil
	})
	return out, err
}

// CancelJob answers PATCH /jobs/{jobid} (JobCancellationHandler): a job
// already CANCELED is acknowledged, one in another terminal state is a
// conflict, mode=stop has been removed.
func (e *Engine) CancelJob(k ClusterKey, jobID, mode string) error {
	return e.cancelJob(target{k: k}, jobID, mode)
}

func (e *Engine) cancelJob(t target, jobID, mode string) error {
	return e.request(t, "PATCH /jobs/{jobid}", func(c *cluster, jm *process, now time.Time) error {
		id, err := pathID("jobid", jobID)
		if err != nil {
			return err
		}
		switch strings.ToUpper(mode) {
		case "", "CANCEL":
		case "STOP":
			return handlerErr(http.StatusPermanentRedirect, "The termination mode \"stop\" has been removed. For an ungraceful shutdown, please use \"cancel\" instead. For a graceful shutdown, please use \"jobs/:jobId/stop\" instead.")
		default:
			return handlerErr(http.StatusBadRequest, "Bad request, could not parse parameters: Cannot resolve query parameter (mode) from value \"%s\".", mode)
		}
		d, err := c.dispatcherFor(jm)
		if err != nil {
			return err
		}
		j := d.jobs[id]
		switch {
		case j == nil:
			return handlerErr(http.StatusNotFound, "Job could not be found.\nCaused by: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (%s)", id)
		case j.state == flink.JobCanceled:
		case j.state.Terminal():
			return handlerErr(http.StatusConflict, "Job cancellation failed because the job has already reached another terminal state (%s).", j.state)
		default:
			e.cancel(c, j, now)
		}
		return nil
	})
}

// UploadJar answers POST /jars/upload (JarUploadHandler): the jar is moved
// into the receiving JobManager's jar directory, <web.upload.dir or its
// unique web.tmpdir>/flink-web-upload, as <UUID>_<name>.
func (e *Engine) UploadJar(k ClusterKey, fileName string) (*flink.JarUploadResponse, error) {
	return e.uploadJar(target{k: k}, fileName)
}

func (e *Engine) uploadJar(t target, fileName string) (out *flink.JarUploadResponse, err error) {
	err = e.request(t, "POST /jars/upload", func(c *cluster, jm *process, now time.Time) error {
		if !strings.HasSuffix(fileName, ".jar") {
			return handlerErr(http.StatusBadRequest, "Only Jar files are allowed.")
		}
		dir := jm.jarDir()
		file := dir + "/" + uuid() + "_" + path.Base(fileName)
		l, err := jm.locate(file)
		if err != nil {
			return err
		}
		e.fs.write(l)
		out = &flink.JarUploadResponse{Filename: file, Status: "success"}
		return nil
	})
	return out, err
}

// jarDir is RestServerEndpointConfiguration's upload directory.
func (p *process) jarDir() string {
	base, ok := p.conf.raw("web.upload.dir")
	if !ok {
		base = p.webTmp
	}
	return strings.TrimRight(base, "/") + "/flink-web-upload"
}

func (p *process) locate(uri string) (loc, error) {
	return locate(uri, p.pod.UID, p.namespace, p.pod.Mounts)
}

// DeleteJar answers DELETE /jars/{jarid} (JarDeleteHandler).
func (e *Engine) DeleteJar(k ClusterKey, jarID string) error { return e.deleteJar(target{k: k}, jarID) }

func (e *Engine) deleteJar(t target, jarID string) error {
	return e.request(t, "DELETE /jars/{jarid}", func(c *cluster, jm *process, now time.Time) error {
		l, err := jm.locate(jm.jarDir() + "/" + jarID)
		if err != nil {
			return err
		}
		if !e.fs.exists(l) {
			return handlerErr(http.StatusBadRequest, "File %s does not exist in %s.", jarID, jm.jarDir())
		}
		e.fs.remove(l)
		return nil
	})
}

// RunJar answers POST /jars/{jarid}/run.
// allowNonRestoredState false is taken as not given: the configured
// ignore-unclaimed-state applies.
func (e *Engine) RunJar(k ClusterKey, jarID string, req flink.JarRunRequest) (*flink.JarRunResponse, error) {
	var allow *bool
	if req.AllowNonRestoredState {
		allow = &req.AllowNonRestoredState
	}
	return e.runJar(target{k: k}, jarID, req, "", allow)
}

// runJar is JarRunHandler: the jar must be in the receiving JobManager's
// jar directory; the program runs in that JobManager with its
// configuration plus the request's flinkConfiguration, and submits its job
// to the leading Dispatcher. Any failure of the program or the submission
// is a 400 "Could not execute application.", its cause in the trace.
// allowNonRestored is the request's allowNonRestoredState (body, else
// query), nil when it gives none.
func (e *Engine) runJar(t target, jarID string, req flink.JarRunRequest, claimMode string, allowNonRestored *bool) (out *flink.JarRunResponse, err error) {
	err = e.request(t, "POST /jars/{jarid}/run", func(c *cluster, jm *process, now time.Time) error {
		file := jm.jarDir() + "/" + jarID
		l, err := jm.locate(file)
		if err != nil {
			return err
		}
		if !e.fs.exists(l) {
			return handlerErr(http.StatusBadRequest, "Jar file %s does not exist", file)
		}
		if req.ProgramArgs != "" && len(req.ProgramArgsList) > 0 {
			return handlerErr(http.StatusBadRequest, "Confusing request: programArgs and programArgsList are specified, please, use only programArgsList")
		}
		d, err := c.dispatcherFor(jm)
		if err != nil {
			return err
		}
		sub, err := e.program(jm, jarID, req, claimMode, allowNonRestored)
		if err == nil {
			sub.graph, err = buildGraph(sub.parallelism, c.workload, sub.conf)
		}
		if err == nil {
			err = d.submit(e, c, now, sub)
		}
		if err != nil {
			return handlerErr(http.StatusBadRequest, "Could not execute application.\nCaused by: org.apache.flink.util.FlinkRuntimeException: Could not execute application.\nCaused by: %s", err)
		}
		out = &flink.JarRunResponse{JobID: sub.id}
		return nil
	})
	return out, err
}

// program is what running the jar's main method builds: the job graph
// from the effective configuration (StreamExecutionEnvironment#configure
// reads the checkpointing options; a value it cannot parse fails the
// program).
func (e *Engine) program(jm *process, jarID string, req flink.JarRunRequest, claimMode string, allowNonRestored *bool) (*submission, error) {
	values := map[string]string{}
	for k, v := range jm.conf.values {
		values[k] = v
	}
	for k, v := range req.FlinkConfiguration {
		values[k] = v
	}
	cf := &conf{version: jm.version, minor: jm.conf.minor, values: values}
	if _, _, err := cf.duration("execution.checkpointing.interval"); err != nil {
		return nil, err
	}
	if _, err := cf.enum("execution.checkpointing.externalized-checkpoint-retention", "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS"); err != nil {
		return nil, err
	}
	sub := &submission{id: req.JobID, conf: cf}
	if sub.id == "" {
		sub.id = newID()
	} else if !hexID.MatchString(sub.id) {
		return nil, fmt.Errorf("java.lang.IllegalArgumentException: Cannot parse JobID from \"%s\". The expected format is [0-9a-fA-F]{32}, e.g. fd72014d4c864993a2e5a9287b4a9c5d.", sub.id)
	}
	sub.id = strings.ToLower(sub.id)
	// JarHandlerContext#fromRequest: the request's parallelism, else its
	// flinkConfiguration's parallelism.default (1.17+), else the option's
	// default, 1; applyToConfiguration writes it back over the cluster's
	// parallelism.default, which a REST run therefore never uses.
	sub.parallelism = int(req.Parallelism)
	if sub.parallelism <= 0 {
		sub.parallelism = 1
		if raw, ok := req.FlinkConfiguration["parallelism.default"]; ok {
			p, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil {
				return nil, fmt.Errorf("java.lang.NumberFormatException: For input string: \"%s\"", strings.TrimSpace(raw))
			}
			sub.parallelism = max(1, p)
		}
	}
	sub.name = req.EntryClass
	if sub.name == "" {
		sub.name = jarName(jarID)
	}
	// SavepointRestoreSettings (JarRunHandler#getSavepointRestoreSettings):
	// the request's path, else the configured one; its claim mode and
	// allowNonRestoredState, else the configured ones.
	pathKey, modeKey, ignoreKey := savepointKeys(jm.version)
	if allowNonRestored != nil {
		sub.allowNonRestored = *allowNonRestored
	} else {
		allow, err := cf.boolean(ignoreKey)
		if err != nil {
			return nil, err
		}
		sub.allowNonRestored = allow
	}
	sub.restorePath = req.SavepointPath
	if sub.restorePath == "" {
		sub.restorePath, _ = cf.raw(pathKey)
	}
	sub.claimMode = strings.ToUpper(claimMode)
	if sub.claimMode == "" {
		sub.claimMode = strings.ToUpper(string(req.RestoreMode))
	}
	if sub.claimMode == "" {
		mode, err := cf.enum(modeKey, "CLAIM", "NO_CLAIM", "LEGACY")
		if err != nil {
			return nil, err
		}
		sub.claimMode = mode
	}
	return sub, nil
}

// savepointKeys are the options of SavepointRestoreSettings#
// fromConfiguration: execution.savepoint.*, renamed execution.state-
// recovery.* in 1.20 (the old keys still read as deprecated keys).
func savepointKeys(v flink.Version) (path, mode, ignore string) {
	if v.AtLeast(1, 20) {
		return "execution.state-recovery.path", "execution.state-recovery.claim-mode", "execution.state-recovery.ignore-unclaimed-state"
	}
	return "execution.savepoint.path", "execution.savepoint-restore-mode", "execution.savepoint.ignore-unclaimed-state"
}

// TaskManagers answers GET /taskmanagers: those registered with the
// ResourceManager.
func (e *Engine) TaskManagers(k ClusterKey) (*flink.TaskManagersInfo, error) {
	return e.taskManagers(target{k: k})
}

func (e *Engine) taskManagers(t target) (out *flink.TaskManagersInfo, err error) {
	err = e.request(t, "GET /taskmanagers", func(c *cluster, jm *process, now time.Time) error {
		if _, err := c.dispatcherFor(jm); err != nil {
			return err
		}
		out = &flink.TaskManagersInfo{TaskManagers: []flink.TaskManagerInfo{}}
		free := c.freeSlots()
		scheme := "pekko"
		if !jm.version.AtLeast(1, 18) {
			// Flink moved from Akka to Pekko in 1.18.
			scheme = "akka"
		}
		for _, tm := range c.registered() {
			f := max(0, free[tm.id()])
			out.TaskManagers = append(out.TaskManagers, flink.TaskManagerInfo{
				ID:       vertexID(tm.id()),
				Path:     fmt.Sprintf("%s.tcp://flink@%s:6122/user/rpc/taskmanager_0", scheme, tm.pod.Name),
				DataPort: 6121, JMXPort: -1, TimeSinceLastHeartbeat: ms(now),
				SlotsNumber: int32(tm.slots), FreeSlots: int32(f),
				TotalResource: slotResources(tm.slots), FreeResource: slotResources(f),
				Hardware: flink.HardwareDescription{CPUCores: int32(tm.slots), PhysicalMemory: 4 << 30, FreeMemory: 1 << 30, ManagedMemory: 512 << 20},
			})
		}
		return nil
	})
	return out, err
}

func throwable(msg string) *flink.SerializedThrowable {
	if msg == "" {
		return nil
	}
	cls, _, _ := strings.Cut(msg, ":")
	return &flink.SerializedThrowable{Class: cls, StackTrace: msg + "\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)"}
}

func duration(j *job, now time.Time) int64 {
	if j.state.Terminal() && !j.end.IsZero() {
		return j.end.Sub(j.start).Milliseconds()
	}
	return now.Sub(j.start).Milliseconds()
}

// endTime is JobDetailsHandler's end-time: the terminal state's timestamp,
// -1 before the end, and 0 for a terminal job whose sparse graph has no
// timestamp for its state (a CANCELED or FINISHED result a
// CheckpointResourcesCleanupRunner shows), whose duration then runs on
// from its start.
func endTime(j *job) int64 {
	if j.state.Terminal() && j.end.IsZero() {
		return 0
	}
	return ms(j.end)
}

// slotResources is a made-up profile of a number of slots.
func slotResources(of int) flink.ResourceProfileInfo {
	return flink.ResourceProfileInfo{
		CPUCores: float64(of), TaskHeapMemory: int32(of * 384), TaskOffHeapMemory: 0,
		ManagedMemory: int32(of * 512), NetworkMemory: int32(of * 128),
	}
}

// jarName is the name the user uploaded, without the ID prefix.
func jarName(id string) string {
	base := path.Base(id)
	if _, rest, ok := strings.Cut(base, "_"); ok {
		return rest
	}
	return base
}

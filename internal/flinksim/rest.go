package flinksim

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// The REST operations, one method per endpoint, returning the typed bodies
// of package flink. The HTTP handler calls them; in-process tests may too.
// Errors carry the HTTP status Flink would answer with.

// Overview answers GET /overview.
func (e *Engine) Overview(k ClusterKey) (out *flink.ClusterOverview, err error) {
	err = e.request(k, "GET /overview", func(c *cluster, now time.Time) error {
		out = &flink.ClusterOverview{
			FlinkVersion:   c.obs.Version,
			FlinkCommit:    SimulatedFlinkRevision,
			TaskManagers:   int32(len(c.obs.TaskManagerUIDs)),
			SlotsTotal:     int32(c.slotsTotal()),
			SlotsAvailable: int32(max(0, c.slotsTotal()-c.slotsUsed())),
		}
		for _, j := range c.jobs {
			switch j.state {
			case flink.JobFinished:
				out.JobsFinished++
			case flink.JobCanceled:
				out.JobsCancelled++
			case flink.JobFailed:
				out.JobsFailed++
			default:
				// Flink counts every non-terminal job as running here.
				out.JobsRunning++
			}
		}
		return nil
	})
	return out, err
}

// DashboardConfiguration answers GET /config.
func (e *Engine) DashboardConfiguration(k ClusterKey) (out *flink.DashboardConfiguration, err error) {
	err = e.request(k, "GET /config", func(c *cluster, now time.Time) error {
		out = &flink.DashboardConfiguration{
			RefreshInterval: 3000, TimezoneName: "Coordinated Universal Time", TimezoneOffset: 0,
			FlinkVersion: c.obs.Version, FlinkRevision: SimulatedFlinkRevision,
			Features: flink.Features{WebSubmit: true, WebCancel: true},
		}
		return nil
	})
	return out, err
}

// Jobs answers GET /jobs.
func (e *Engine) Jobs(k ClusterKey) (out *flink.JobIDsWithStatusOverview, err error) {
	err = e.request(k, "GET /jobs", func(c *cluster, now time.Time) error {
		out = &flink.JobIDsWithStatusOverview{Jobs: []flink.JobIDWithStatus{}}
		for _, id := range c.order {
			out.Jobs = append(out.Jobs, flink.JobIDWithStatus{ID: id, Status: c.jobs[id].state})
		}
		return nil
	})
	return out, err
}

// JobsOverview answers GET /jobs/overview.
func (e *Engine) JobsOverview(k ClusterKey) (out *flink.MultipleJobsDetails, err error) {
	err = e.request(k, "GET /jobs/overview", func(c *cluster, now time.Time) error {
		out = &flink.MultipleJobsDetails{Jobs: []flink.JobDetails{}}
		for _, id := range c.order {
			j := c.jobs[id]
			out.Jobs = append(out.Jobs, flink.JobDetails{
				JID: j.id, Name: j.name, State: j.state, StartTime: ms(j.start), EndTime: ms(j.end),
				Duration: duration(j, now), LastModification: ms(j.stateSince), Tasks: taskCounts(j),
			})
		}
		return nil
	})
	return out, err
}

// Job answers GET /jobs/{jobid}.
func (e *Engine) Job(k ClusterKey, jobID string) (out *flink.JobDetailsInfo, err error) {
	err = e.request(k, "GET /jobs/{jobid}", func(c *cluster, now time.Time) error {
		j, err := c.lookupJob(jobID)
		if err != nil {
			return err
		}
		ts := map[string]int64{}
		for s, t := range j.timestamps {
			ts[string(s)] = ms(t)
		}
		vstatus := vertexStatus(j.state)
		out = &flink.JobDetailsInfo{
			JID: j.id, Name: j.name, IsStoppable: false, State: j.state,
			StartTime: ms(j.start), EndTime: ms(j.end), Duration: duration(j, now),
			MaxParallelism: -1, Now: ms(now), Timestamps: ts,
			Vertices: []flink.JobDetailsVertex{{
				ID: vertexID(j.id), Name: "Source: simulated -> Sink: simulated", MaxParallelism: 128,
				Parallelism: int32(j.parallelism), Status: vstatus,
				StartTime: ms(j.start), EndTime: ms(j.end), Duration: duration(j, now),
				Tasks: map[string]int32{vstatus: int32(j.parallelism)},
			}},
			StatusCounts: map[string]int32{vstatus: 1},
			Plan:         map[string]any{"jid": j.id, "name": j.name, "type": "STREAMING", "nodes": []any{}},
		}
		return nil
	})
	return out, err
}

// Checkpoints answers GET /jobs/{jobid}/checkpoints. Latest.Restored says
// what the job's current run restored from.
func (e *Engine) Checkpoints(k ClusterKey, jobID string) (out *flink.CheckpointingStatistics, err error) {
	err = e.request(k, "GET /jobs/{jobid}/checkpoints", func(c *cluster, now time.Time) error {
		j, err := c.lookupJob(jobID)
		if err != nil {
			return err
		}
		inProgress := int32(0)
		for _, op := range j.ops {
			if !op.done {
				inProgress++
			}
		}
		out = &flink.CheckpointingStatistics{
			Counts: flink.CheckpointCounts{
				Restored: j.restoreCount, Completed: j.completedCount, Failed: j.failedCount, InProgress: inProgress,
				Total: j.completedCount + j.failedCount + int64(inProgress),
			},
			Latest: flink.LatestCheckpoints{
				Completed: j.latestCompleted, Savepoint: j.latestSavepoint, Failed: j.latestFailed, Restored: j.restored,
			},
			History: append([]flink.CheckpointStatistics{}, j.history...),
		}
		return nil
	})
	return out, err
}

// TriggerCheckpoint answers POST /jobs/{jobid}/checkpoints. Flink added
// the endpoint in 1.19; older versions answer 404, as Flink does.
func (e *Engine) TriggerCheckpoint(k ClusterKey, jobID string, req flink.CheckpointTriggerRequest) (out *flink.TriggerResponse, err error) {
	err = e.request(k, "POST /jobs/{jobid}/checkpoints", func(c *cluster, now time.Time) error {
		if err := c.requireManualCheckpoints("/jobs/" + jobID + "/checkpoints"); err != nil {
			return err
		}
		j, err := c.lookupJob(jobID)
		if err != nil {
			return err
		}
		typ := req.CheckpointType
		if typ == "" {
			typ = "CONFIGURED"
		}
		id, dup := e.startOperation(j, req.TriggerID, &operation{kind: opCheckpoint, doneAt: now.Add(e.opts.CheckpointDelay), ckptType: typ})
		if !dup {
			j.checkpointsTriggered++
			c.totals.CheckpointsTriggered++
		}
		out = &flink.TriggerResponse{RequestID: id}
		return nil
	})
	return out, err
}

// CheckpointStatus answers GET /jobs/{jobid}/checkpoints/{triggerid}.
func (e *Engine) CheckpointStatus(k ClusterKey, jobID, triggerID string) (out *flink.CheckpointOperation, err error) {
	err = e.request(k, "GET /jobs/{jobid}/checkpoints/{triggerid}", func(c *cluster, now time.Time) error {
		if err := c.requireManualCheckpoints("/jobs/" + jobID + "/checkpoints/" + triggerID); err != nil {
			return err
		}
		op, err := findOperation(c, jobID, triggerID, opCheckpoint)
		if err != nil {
			return err
		}
		out = &flink.CheckpointOperation{Status: flink.QueueStatus{ID: flink.OperationInProgress}}
		if op.done {
			out.Status.ID = flink.OperationCompleted
			out.Operation = &flink.CheckpointInfo{CheckpointID: op.checkpointID, FailureCause: throwable(op.failure)}
		}
		return nil
	})
	return out, err
}

// TriggerSavepoint answers POST /jobs/{jobid}/savepoints.
func (e *Engine) TriggerSavepoint(k ClusterKey, jobID string, req flink.SavepointTriggerRequest) (out *flink.TriggerResponse, err error) {
	err = e.request(k, "POST /jobs/{jobid}/savepoints", func(c *cluster, now time.Time) error {
		j, err := c.lookupJob(jobID)
		if err != nil {
			return err
		}
		id, dup := e.startOperation(j, req.TriggerID, &operation{
			kind: opSavepoint, doneAt: now.Add(e.opts.SavepointDelay),
			targetDir: req.TargetDirectory, cancelJob: req.CancelJob, format: formatOr(req.FormatType),
		})
		if !dup {
			j.savepointsTriggered++
			c.totals.SavepointsTriggered++
		}
		out = &flink.TriggerResponse{RequestID: id}
		return nil
	})
	return out, err
}

// StopWithSavepoint answers POST /jobs/{jobid}/stop. The job keeps running
// until the savepoint completes, then FINISHES; if the savepoint fails it
// keeps running, as in Flink.
func (e *Engine) StopWithSavepoint(k ClusterKey, jobID string, req flink.StopWithSavepointRequest) (out *flink.TriggerResponse, err error) {
	err = e.request(k, "POST /jobs/{jobid}/stop", func(c *cluster, now time.Time) error {
		j, err := c.lookupJob(jobID)
		if err != nil {
			return err
		}
		id, dup := e.startOperation(j, req.TriggerID, &operation{
			kind: opStop, doneAt: now.Add(e.opts.SavepointDelay),
			targetDir: req.TargetDirectory, format: formatOr(req.FormatType),
		})
		if !dup {
			j.savepointsTriggered++
			j.stopsTriggered++
			c.totals.SavepointsTriggered++
			c.totals.StopsTriggered++
		}
		out = &flink.TriggerResponse{RequestID: id}
		return nil
	})
	return out, err
}

// SavepointStatus answers GET /jobs/{jobid}/savepoints/{triggerid}, for
// savepoints and stop-with-savepoint alike.
func (e *Engine) SavepointStatus(k ClusterKey, jobID, triggerID string) (out *flink.SavepointOperation, err error) {
	err = e.request(k, "GET /jobs/{jobid}/savepoints/{triggerid}", func(c *cluster, now time.Time) error {
		op, err := findOperation(c, jobID, triggerID, opSavepoint, opStop)
		if err != nil {
			return err
		}
		out = &flink.SavepointOperation{Status: flink.QueueStatus{ID: flink.OperationInProgress}}
		if op.done {
			out.Status.ID = flink.OperationCompleted
			out.Operation = &flink.SavepointInfo{Location: op.location, FailureCause: throwable(op.failure)}
		}
		return nil
	})
	return out, err
}

// CancelJob answers PATCH /jobs/{jobid}. Cancelling a finished job changes
// nothing.
func (e *Engine) CancelJob(k ClusterKey, jobID, mode string) error {
	return e.request(k, "PATCH /jobs/{jobid}", func(c *cluster, now time.Time) error {
		j, err := c.lookupJob(jobID)
		if err != nil {
			return err
		}
		if mode != "" && mode != "cancel" && mode != "CANCEL" {
			return errorf(http.StatusBadRequest, "Unsupported termination mode %q", mode)
		}
		if !j.state.Terminal() {
			e.setState(j, flink.JobCanceled, now)
		}
		return nil
	})
}

// UploadJar answers POST /jars/upload; the jar's content is not kept.
func (e *Engine) UploadJar(k ClusterKey, fileName string) (out *flink.JarUploadResponse, err error) {
	err = e.request(k, "POST /jars/upload", func(c *cluster, now time.Time) error {
		id := fmt.Sprintf("%s-%s-%s-%s-%s_%s", randomHex(4), randomHex(2), randomHex(2), randomHex(2), randomHex(6), fileName)
		c.jars[id] = fileName
		out = &flink.JarUploadResponse{Filename: "/tmp/flink-web-simulator/flink-web-upload/" + id, Status: "success"}
		return nil
	})
	return out, err
}

// RunJar answers POST /jars/{jarid}/run. The job is CREATED and runs as
// soon as enough slots are free; with a savepointPath it records that it
// restored from it.
func (e *Engine) RunJar(k ClusterKey, jarID string, req flink.JarRunRequest) (out *flink.JarRunResponse, err error) {
	err = e.request(k, "POST /jars/{jarid}/run", func(c *cluster, now time.Time) error {
		if _, ok := c.jars[jarID]; !ok {
			return errorf(http.StatusBadRequest, "Jar file /tmp/flink-web-simulator/flink-web-upload/%s does not exist", jarID)
		}
		id := req.JobID
		if id == "" {
			id = newID()
		}
		if old := c.jobs[id]; old != nil && !old.state.Terminal() {
			return errorf(http.StatusConflict, "Job has already been submitted: %s", id)
		}
		p := int(req.Parallelism)
		if p <= 0 {
			p = 1 // parallelism.default
		}
		name := req.EntryClass
		if name == "" {
			name = jarName(jarID)
		}
		j := &job{
			id: id, name: name, parallelism: p, start: now, timestamps: map[flink.JobStatus]time.Time{},
			nextCheckpointID: 1, ops: map[string]*operation{},
		}
		if req.SavepointPath != "" {
			j.restored = &flink.RestoredCheckpointStatistics{
				ID: e.savepointIDs[req.SavepointPath], RestoreTimestamp: ms(now), IsSavepoint: true, ExternalPath: req.SavepointPath,
			}
			j.restoreCount = 1
			j.nextCheckpointID = e.savepointIDs[req.SavepointPath] + 1
		}
		e.setState(j, flink.JobCreated, now)
		if c.jobs[id] == nil {
			c.order = append(c.order, id)
		}
		c.totals.JobsSubmitted++
		c.jobs[id] = j
		e.advance(c, now)
		out = &flink.JarRunResponse{JobID: id}
		return nil
	})
	return out, err
}

// TaskManagers answers GET /taskmanagers; a TaskManager's ID is derived
// from its pod's UID.
func (e *Engine) TaskManagers(k ClusterKey) (out *flink.TaskManagersInfo, err error) {
	err = e.request(k, "GET /taskmanagers", func(c *cluster, now time.Time) error {
		out = &flink.TaskManagersInfo{TaskManagers: []flink.TaskManagerInfo{}}
		// Free slots are handed out TaskManager by TaskManager.
		used := c.slotsUsed()
		for i, uid := range c.obs.TaskManagerUIDs {
			n := c.obs.SlotsPerTaskManager
			busy := min(used, n)
			used -= busy
			free := n - busy
			out.TaskManagers = append(out.TaskManagers, flink.TaskManagerInfo{
				ID:       vertexID(uid),
				Path:     fmt.Sprintf("pekko.tcp://flink@%s-taskmanager-%d:6122/user/rpc/taskmanager_0", c.key.Name, i),
				DataPort: 6121, JMXPort: -1, TimeSinceLastHeartbeat: ms(now),
				SlotsNumber: int32(n), FreeSlots: int32(free),
				TotalResource: slotResources(n), FreeResource: slotResources(free),
				Hardware: flink.HardwareDescription{CPUCores: int32(n), PhysicalMemory: 4 << 30, FreeMemory: 1 << 30, ManagedMemory: 512 << 20},
			})
		}
		return nil
	})
	return out, err
}

// startOperation registers op under the caller's trigger ID, or a new one.
// A trigger ID already known joins that operation (dup is true), which is
// what makes Flink's triggers idempotent.
func (e *Engine) startOperation(j *job, triggerID string, op *operation) (id string, dup bool) {
	if triggerID != "" {
		if _, ok := j.ops[triggerID]; ok {
			return triggerID, true
		}
	} else {
		triggerID = newID()
	}
	op.id = triggerID
	j.ops[triggerID] = op
	return triggerID, false
}

func findOperation(c *cluster, jobID, triggerID string, kinds ...opKind) (*operation, error) {
	j, err := c.lookupJob(jobID)
	if err != nil {
		return nil, err
	}
	op := j.ops[triggerID]
	if op == nil {
		return nil, errorf(http.StatusNotFound, "There is no operation with trigger id %s for job %s", triggerID, jobID)
	}
	for _, kd := range kinds {
		if op.kind == kd {
			return op, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "Trigger id %s of job %s is a %s, not a %s", triggerID, jobID, op.kind, kinds[0])
}

func throwable(msg string) *flink.SerializedThrowable {
	if msg == "" {
		return nil
	}
	cls, _, _ := strings.Cut(msg, ":")
	return &flink.SerializedThrowable{Class: cls, StackTrace: msg + "\n\tat simulated.FlinkRestSimulator(FlinkRestSimulator.java)"}
}

func formatOr(f flink.SavepointFormatType) flink.SavepointFormatType {
	if f == "" {
		return flink.SavepointFormatCanonical
	}
	return f
}

func duration(j *job, now time.Time) int64 {
	if j.state.Terminal() {
		return j.end.Sub(j.start).Milliseconds()
	}
	return now.Sub(j.start).Milliseconds()
}

// vertexStatus is the ExecutionState of the tasks of a job in state s.
func vertexStatus(s flink.JobStatus) string {
	switch s {
	case flink.JobRunning, flink.JobFailing:
		return "RUNNING"
	case flink.JobFinished:
		return "FINISHED"
	case flink.JobCanceled:
		return "CANCELED"
	case flink.JobFailed:
		return "FAILED"
	default:
		return "CREATED"
	}
}

func taskCounts(j *job) map[string]int32 {
	return map[string]int32{"total": int32(j.parallelism), strings.ToLower(vertexStatus(j.state)): int32(j.parallelism)}
}

// slotResources is a made-up profile of a number of slots.
func slotResources(of int) flink.ResourceProfileInfo {
	return flink.ResourceProfileInfo{
		CPUCores: float64(of), TaskHeapMemory: int32(of * 384), TaskOffHeapMemory: 0,
		ManagedMemory: int32(of * 512), NetworkMemory: int32(of * 128),
	}
}

// requireManualCheckpoints refuses the checkpoint trigger endpoints on
// versions before 1.17, which lack them: Flink's REST API gained
// CheckpointTriggerHeaders (POST /jobs/{jobid}/checkpoints) and
// CheckpointStatusHeaders in 1.17 (flink-reference rest/1.17 has them,
// rest/1.16 does not).
func (c *cluster) requireManualCheckpoints(p string) error {
	if v, err := flink.ParseVersion(c.obs.Version); err == nil && !v.AtLeast(1, 17) {
		return errorf(http.StatusNotFound, "Not found: %s (Flink %s has no checkpoint trigger endpoint; it came in 1.17)", p, c.obs.Version)
	}
	return nil
}

package flink

// Request and response bodies of the Flink JobManager REST API, named after
// the schemas in the official OpenAPI description (rest_v1_dispatcher.yml).
// JSON names follow the schema exactly; it mixes kebab-case, camelCase and
// snake_case, and getting one wrong silently drops a field.

// JobStatus is the schema's JobStatus enum.
type JobStatus string

const (
	JobInitializing JobStatus = "INITIALIZING"
	JobCreated      JobStatus = "CREATED"
	JobRunning      JobStatus = "RUNNING"
	JobFailing      JobStatus = "FAILING"
	JobFailed       JobStatus = "FAILED"
	JobCancelling   JobStatus = "CANCELLING"
	JobCanceled     JobStatus = "CANCELED"
	JobFinished     JobStatus = "FINISHED"
	JobRestarting   JobStatus = "RESTARTING"
	JobSuspended    JobStatus = "SUSPENDED"
	JobReconciling  JobStatus = "RECONCILING"
)

// Terminal reports whether the job can no longer change state (Flink's
// globally terminal states).
func (s JobStatus) Terminal() bool {
	return s == JobFailed || s == JobCanceled || s == JobFinished
}

// ClusterOverview is ClusterOverviewWithVersion (GET /overview).
type ClusterOverview struct {
	FlinkVersion        string `json:"flink-version"`
	FlinkCommit         string `json:"flink-commit"`
	TaskManagers        int32  `json:"taskmanagers"`
	TaskManagersBlocked int32  `json:"taskmanagers-blocked"`
	SlotsTotal          int32  `json:"slots-total"`
	SlotsAvailable      int32  `json:"slots-available"`
	SlotsFreeAndBlocked int32  `json:"slots-free-and-blocked"`
	JobsRunning         int32  `json:"jobs-running"`
	JobsFinished        int32  `json:"jobs-finished"`
	JobsCancelled       int32  `json:"jobs-cancelled"`
	JobsFailed          int32  `json:"jobs-failed"`
}

// DashboardConfiguration is GET /config: the web UI's view of the cluster,
// which is where the REST API reports the Flink version without a job.
type DashboardConfiguration struct {
	RefreshInterval int64    `json:"refresh-interval"`
	TimezoneName    string   `json:"timezone-name"`
	TimezoneOffset  int32    `json:"timezone-offset"`
	FlinkVersion    string   `json:"flink-version"`
	FlinkRevision   string   `json:"flink-revision"`
	Features        Features `json:"features"`
}

// Features is the schema's Features.
type Features struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// JobIDsWithStatusOverview is GET /jobs.
type JobIDsWithStatusOverview struct {
	Jobs []JobIDWithStatus `json:"jobs"`
}

// JobIDWithStatus is the schema's JobIdWithStatus.
type JobIDWithStatus struct {
	ID     string    `json:"id"`
	Status JobStatus `json:"status"`
}

// MultipleJobsDetails is GET /jobs/overview.
type MultipleJobsDetails struct {
	Jobs []JobDetails `json:"jobs"`
}

// JobDetails is one entry of MultipleJobsDetails.
type JobDetails struct {
	JID              string           `json:"jid"`
	Name             string           `json:"name"`
	State            JobStatus        `json:"state"`
	StartTime        int64            `json:"start-time"`
	EndTime          int64            `json:"end-time"`
	Duration         int64            `json:"duration"`
	LastModification int64            `json:"last-modification"`
	Tasks            map[string]int32 `json:"tasks,omitempty"`
}

// JobDetailsInfo is GET /jobs/{jobid}.
type JobDetailsInfo struct {
	JID            string             `json:"jid"`
	Name           string             `json:"name"`
	IsStoppable    bool               `json:"isStoppable"`
	State          JobStatus          `json:"state"`
	StartTime      int64              `json:"start-time"`
	EndTime        int64              `json:"end-time"`
	Duration       int64              `json:"duration"`
	MaxParallelism int64              `json:"maxParallelism"`
	Now            int64              `json:"now"`
	Timestamps     map[string]int64   `json:"timestamps,omitempty"`
	Vertices       []JobDetailsVertex `json:"vertices,omitempty"`
	StatusCounts   map[string]int32   `json:"status-counts,omitempty"`
	Plan           map[string]any     `json:"plan,omitempty"`
}

// JobDetailsVertex is the schema's JobDetailsVertexInfo.
type JobDetailsVertex struct {
	ID             string           `json:"id"`
	Name           string           `json:"name"`
	MaxParallelism int32            `json:"maxParallelism"`
	Parallelism    int32            `json:"parallelism"`
	Status         string           `json:"status"`
	StartTime      int64            `json:"start-time"`
	EndTime        int64            `json:"end-time"`
	Duration       int64            `json:"duration"`
	Tasks          map[string]int32 `json:"tasks,omitempty"`
}

// CheckpointingStatistics is GET /jobs/{jobid}/checkpoints.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"`
}

// CheckpointCounts is the schema's Counts.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int32 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// LatestCheckpoints is the schema's LatestCheckpoints. Restored says what
// the job's current run was restored from; nil when it started empty.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics         `json:"completed,omitempty"`
	Savepoint *CheckpointStatistics         `json:"savepoint,omitempty"`
	Failed    *CheckpointStatistics         `json:"failed,omitempty"`
	Restored  *RestoredCheckpointStatistics `json:"restored,omitempty"`
}

// CheckpointStatistics covers the schema's CheckpointStatistics and its
// completed, failed and in_progress variants, told apart by ClassName.
type CheckpointStatistics struct {
	ClassName              string `json:"className"`
	ID                     int64  `json:"id"`
	Status                 string `json:"status"`
	IsSavepoint            bool   `json:"is_savepoint"`
	SavepointFormat        string `json:"savepointFormat,omitempty"`
	CheckpointType         string `json:"checkpoint_type"`
	TriggerTimestamp       int64  `json:"trigger_timestamp"`
	LatestAckTimestamp     int64  `json:"latest_ack_timestamp"`
	CheckpointedSize       int64  `json:"checkpointed_size"`
	StateSize              int64  `json:"state_size"`
	EndToEndDuration       int64  `json:"end_to_end_duration"`
	AlignmentBuffered      int64  `json:"alignment_buffered"`
	ProcessedData          int64  `json:"processed_data"`
	PersistedData          int64  `json:"persisted_data"`
	NumSubtasks            int32  `json:"num_subtasks"`
	NumAcknowledgedSubtask int32  `json:"num_acknowledged_subtasks"`
	// Completed only.
	ExternalPath string `json:"external_path,omitempty"`
	Discarded    bool   `json:"discarded,omitempty"`
	// Failed only.
	FailureTimestamp int64  `json:"failure_timestamp,omitempty"`
	FailureMessage   string `json:"failure_message,omitempty"`
}

// Checkpoint statistics class names (the schema's discriminator values).
const (
	CheckpointClassCompleted  = "completed"
	CheckpointClassFailed     = "failed"
	CheckpointClassInProgress = "in_progress"
)

// JobExceptions is the schema's JobExceptionsInfoWithHistory, the part of
// it every supported minor has (2.0 dropped root-exception).
type JobExceptions struct {
	ExceptionHistory JobExceptionHistory `json:"exceptionHistory"`
}

// JobExceptionHistory is the schema's JobExceptionHistory.
type JobExceptionHistory struct {
	Entries   []RootExceptionInfo `json:"entries"`
	Truncated bool                `json:"truncated"`
}

// RootExceptionInfo is the schema's RootExceptionInfo, newest first.
type RootExceptionInfo struct {
	ExceptionName string `json:"exceptionName"`
	Stacktrace    string `json:"stacktrace"`
	Timestamp     int64  `json:"timestamp"`
}

// RestoredCheckpointStatistics is the schema's RestoredCheckpointStatistics.
type RestoredCheckpointStatistics struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// CheckpointTriggerRequest is the schema's CheckpointTriggerRequestBody.
// CheckpointType is CONFIGURED, FULL or INCREMENTAL.
type CheckpointTriggerRequest struct {
	CheckpointType string `json:"checkpointType,omitempty"`
	TriggerID      string `json:"triggerId,omitempty"`
}

// SavepointFormatType is the schema's SavepointFormatType.
type SavepointFormatType string

const (
	SavepointFormatCanonical SavepointFormatType = "CANONICAL"
	SavepointFormatNative    SavepointFormatType = "NATIVE"
)

// SavepointTriggerRequest is the schema's SavepointTriggerRequestBody.
// TriggerID, when set, makes the trigger idempotent on the Flink side: a
// repeated request with the same ID joins the first operation.
type SavepointTriggerRequest struct {
	TargetDirectory string              `json:"target-directory,omitempty"`
	CancelJob       bool                `json:"cancel-job"`
	FormatType      SavepointFormatType `json:"formatType,omitempty"`
	TriggerID       string              `json:"triggerId,omitempty"`
}

// StopWithSavepointRequest is the schema's StopWithSavepointRequestBody.
// Note targetDirectory is camelCase here but kebab-case on /savepoints.
type StopWithSavepointRequest struct {
	TargetDirectory string              `json:"targetDirectory,omitempty"`
	Drain           bool                `json:"drain"`
	FormatType      SavepointFormatType `json:"formatType,omitempty"`
	TriggerID       string              `json:"triggerId,omitempty"`
}

// TriggerResponse is the schema's TriggerResponse.
type TriggerResponse struct {
	RequestID string `json:"request-id"`
}

// QueueStatus is the schema's QueueStatus; ID is IN_PROGRESS or COMPLETED.
type QueueStatus struct {
	ID string `json:"id"`
}

// Asynchronous operation states.
const (
	OperationInProgress = "IN_PROGRESS"
	OperationCompleted  = "COMPLETED"
)

// SerializedThrowable is how Flink reports a failure cause. The schema names
// only serialized-throwable; Flink also writes the class and stack trace,
// which are the readable parts.
type SerializedThrowable struct {
	Class               string `json:"class,omitempty"`
	StackTrace          string `json:"stack-trace,omitempty"`
	SerializedThrowable string `json:"serialized-throwable,omitempty"`
}

// Message is the most readable description of the failure.
func (t *SerializedThrowable) Message() string {
	if t == nil {
		return ""
	}
	if t.StackTrace != "" {
		return t.StackTrace
	}
	if t.Class != "" {
		return t.Class
	}
	return "unknown failure"
}

// SavepointOperation is GET /jobs/{jobid}/savepoints/{triggerid}: an
// AsynchronousOperationResult whose operation is a SavepointInfo.
type SavepointOperation struct {
	Status    QueueStatus    `json:"status"`
	Operation *SavepointInfo `json:"operation,omitempty"`
}

// SavepointInfo is the schema's SavepointInfo.
type SavepointInfo struct {
	Location     string               `json:"location,omitempty"`
	FailureCause *SerializedThrowable `json:"failure-cause,omitempty"`
}

// CheckpointOperation is GET /jobs/{jobid}/checkpoints/{triggerid}: an
// AsynchronousOperationResult whose operation is a CheckpointInfo.
type CheckpointOperation struct {
	Status    QueueStatus     `json:"status"`
	Operation *CheckpointInfo `json:"operation,omitempty"`
}

// CheckpointInfo is the schema's CheckpointInfo (camelCase failureCause,
// unlike SavepointInfo).
type CheckpointInfo struct {
	CheckpointID int64                `json:"checkpointId,omitempty"`
	FailureCause *SerializedThrowable `json:"failureCause,omitempty"`
}

// JarUploadResponse is the schema's JarUploadResponseBody. Filename is the
// server-side path; its base name is the jar ID.
type JarUploadResponse struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
}

// RestoreMode is the schema's RestoreMode.
type RestoreMode string

const (
	RestoreClaim   RestoreMode = "CLAIM"
	RestoreNoClaim RestoreMode = "NO_CLAIM"
	RestoreLegacy  RestoreMode = "LEGACY"
)

// JarRunRequest is the schema's JarRunRequestBody.
type JarRunRequest struct {
	EntryClass      string   `json:"entryClass,omitempty"`
	ProgramArgsList []string `json:"programArgsList,omitempty"`
	// ProgramArgs is the deprecated space-separated form of ProgramArgsList.
	ProgramArgs           string `json:"programArgs,omitempty"`
	Parallelism           int32  `json:"parallelism,omitempty"`
	JobID                 string `json:"jobId,omitempty"`
	SavepointPath         string `json:"savepointPath,omitempty"`
	AllowNonRestoredState bool   `json:"allowNonRestoredState,omitempty"`
	// RestoreMode is the claim mode before 1.20; deprecated from 1.20.
	RestoreMode RestoreMode `json:"restoreMode,omitempty"`
	// ClaimMode is the claim mode from 1.20 (the schema has no such
	// property before, and a 1.19 JobManager refuses an unknown one).
	ClaimMode          RestoreMode       `json:"claimMode,omitempty"`
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
}

// WithClaimMode sets the claim mode in the field Flink v reads: from 1.20
// JarRunRequestBody#getRecoveryClaimMode takes claimMode and reads the
// deprecated restoreMode only without it; before 1.20 restoreMode is the
// only one. A request without either takes the configured mode.
func (r JarRunRequest) WithClaimMode(v Version, m RestoreMode) JarRunRequest {
	if v.AtLeast(1, 20) {
		r.ClaimMode, r.RestoreMode = m, ""
	} else {
		r.RestoreMode, r.ClaimMode = m, ""
	}
	return r
}

// JarRunResponse is the schema's JarRunResponseBody.
type JarRunResponse struct {
	JobID string `json:"jobid"`
}

// TaskManagersInfo is GET /taskmanagers.
type TaskManagersInfo struct {
	TaskManagers []TaskManagerInfo `json:"taskmanagers"`
}

// TaskManagerInfo is the schema's TaskManagerInfo.
type TaskManagerInfo struct {
	ID                     string              `json:"id"`
	Path                   string              `json:"path"`
	DataPort               int32               `json:"dataPort"`
	JMXPort                int32               `json:"jmxPort"`
	TimeSinceLastHeartbeat int64               `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int32               `json:"slotsNumber"`
	FreeSlots              int32               `json:"freeSlots"`
	TotalResource          ResourceProfileInfo `json:"totalResource"`
	FreeResource           ResourceProfileInfo `json:"freeResource"`
	Hardware               HardwareDescription `json:"hardware"`
	Blocked                bool                `json:"blocked"`
}

// ResourceProfileInfo is the schema's ResourceProfileInfo (memory in MiB).
type ResourceProfileInfo struct {
	CPUCores          float64 `json:"cpuCores"`
	TaskHeapMemory    int32   `json:"taskHeapMemory"`
	TaskOffHeapMemory int32   `json:"taskOffHeapMemory"`
	ManagedMemory     int32   `json:"managedMemory"`
	NetworkMemory     int32   `json:"networkMemory"`
}

// HardwareDescription is the schema's HardwareDescription.
type HardwareDescription struct {
	CPUCores       int32 `json:"cpuCores"`
	PhysicalMemory int64 `json:"physicalMemory"`
	FreeMemory     int64 `json:"freeMemory"`
	ManagedMemory  int64 `json:"managedMemory"`
}

// ErrorResponse is the body Flink sends with every non-2xx status.
type ErrorResponse struct {
	Errors []string `json:"errors"`
}

package flink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim/flinkschema"
)

const (
	jobID     = "0123456789abcdef0123456789abcdef"
	triggerID = "fedcba9876543210fedcba9876543210"
	vertexID  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tmID      = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// Fully populated samples of every body the client decodes. Marshalled,
// each must validate against the schema's response for its operation; and
// the client must decode it back to the same value.
var completed = flink.CheckpointStatistics{
	ClassName: flink.CheckpointClassCompleted, ID: 7, Status: "COMPLETED", CheckpointType: "CHECKPOINT",
	TriggerTimestamp: 1700000000000, LatestAckTimestamp: 1700000000100, CheckpointedSize: 10, StateSize: 10,
	EndToEndDuration: 100, NumSubtasks: 4, NumAcknowledgedSubtask: 4, ExternalPath: "file:///cp/chk-7",
}

var samples = map[string]any{
	"getClusterOverview": &flink.ClusterOverview{
		FlinkVersion: "1.18.1", FlinkCommit: "a1b2c3d", TaskManagers: 2, SlotsTotal: 8, SlotsAvailable: 4,
		JobsRunning: 1, JobsFinished: 2, JobsCancelled: 1, JobsFailed: 1,
	},
	"getDashboardConfiguration": &flink.DashboardConfiguration{
		RefreshInterval: 3000, TimezoneName: "UTC", FlinkVersion: "1.18.1", FlinkRevision: "a1b2c3d",
		Features: flink.Features{WebSubmit: true, WebCancel: true},
	},
	"getJobIdsWithStatusesOverview": &flink.JobIDsWithStatusOverview{Jobs: []flink.JobIDWithStatus{{ID: jobID, Status: flink.JobRunning}}},
	"getJobsOverview": &flink.MultipleJobsDetails{Jobs: []flink.JobDetails{{
		JID: jobID, Name: "wordcount", State: flink.JobRunning, StartTime: 1, EndTime: -1, Duration: 5, LastModification: 3,
		Tasks: map[string]int32{"running": 4, "total": 4},
	}}},
	"getJobDetails": &flink.JobDetailsInfo{
		JID: jobID, Name: "wordcount", IsStoppable: false, State: flink.JobRunning, StartTime: 1, EndTime: -1, Duration: 5,
		MaxParallelism: -1, Now: 6, Timestamps: map[string]int64{"RUNNING": 2, "CREATED": 1},
		Vertices: []flink.JobDetailsVertex{{
			ID: vertexID, Name: "Source", MaxParallelism: 128, Parallelism: 4, Status: "RUNNING",
			StartTime: 2, EndTime: -1, Duration: 4, Tasks: map[string]int32{"RUNNING": 4},
		}},
		StatusCounts: map[string]int32{"RUNNING": 1},
		Plan:         map[string]any{"jid": jobID, "name": "wordcount"},
	},
	"getCheckpointingStatistics": &flink.CheckpointingStatistics{
		Counts: flink.CheckpointCounts{Restored: 1, Total: 9, InProgress: 1, Completed: 7, Failed: 1},
		Latest: flink.LatestCheckpoints{
			Completed: &completed,
			Savepoint: &flink.CheckpointStatistics{ClassName: flink.CheckpointClassCompleted, ID: 6, Status: "COMPLETED", IsSavepoint: true, SavepointFormat: "CANONICAL", CheckpointType: "SAVEPOINT", ExternalPath: "file:///sp/savepoint-6"},
			Failed:    &flink.CheckpointStatistics{ClassName: flink.CheckpointClassFailed, ID: 5, Status: "FAILED", CheckpointType: "CHECKPOINT", FailureTimestamp: 3, FailureMessage: "Checkpoint expired"},
			Restored:  &flink.RestoredCheckpointStatistics{ID: 4, RestoreTimestamp: 2, IsSavepoint: true, ExternalPath: "file:///sp/savepoint-4"},
		},
		History: []flink.CheckpointStatistics{completed, {ClassName: flink.CheckpointClassInProgress, ID: 8, Status: "IN_PROGRESS", CheckpointType: "CHECKPOINT"}},
	},
	"triggerCheckpoint":        &flink.TriggerResponse{RequestID: triggerID},
	"triggerSavepoint":         &flink.TriggerResponse{RequestID: triggerID},
	"triggerStopWithSavepoint": &flink.TriggerResponse{RequestID: triggerID},
	"getCheckpointStatus": &flink.CheckpointOperation{
		Status: flink.QueueStatus{ID: flink.OperationCompleted}, Operation: &flink.CheckpointInfo{CheckpointID: 8},
	},
	"getSavepointStatus": &flink.SavepointOperation{
		Status: flink.QueueStatus{ID: flink.OperationCompleted},
		Operation: &flink.SavepointInfo{FailureCause: &flink.SerializedThrowable{
			Class: "java.io.IOException", StackTrace: "java.io.IOException: disk full", SerializedThrowable: "rO0ABQ==",
		}},
	},
	"uploadJar":        &flink.JarUploadResponse{Filename: "/tmp/flink-web-upload/3c4d_job.jar", Status: "success"},
	"submitJobFromJar": &flink.JarRunResponse{JobID: jobID},
	"getTaskManagers": &flink.TaskManagersInfo{TaskManagers: []flink.TaskManagerInfo{{
		ID: tmID, Path: "pekko.tcp://flink@10.0.0.7:6122/user/rpc/taskmanager_0", DataPort: 6121, JMXPort: -1,
		TimeSinceLastHeartbeat: 1700000000000, SlotsNumber: 4, FreeSlots: 2,
		TotalResource: flink.ResourceProfileInfo{CPUCores: 4, TaskHeapMemory: 512, ManagedMemory: 512, NetworkMemory: 128},
		FreeResource:  flink.ResourceProfileInfo{CPUCores: 2, TaskHeapMemory: 256, ManagedMemory: 256, NetworkMemory: 64},
		Hardware:      flink.HardwareDescription{CPUCores: 4, PhysicalMemory: 1 << 33, FreeMemory: 1 << 30, ManagedMemory: 1 << 29},
	}}},
	"cancelJob": nil,
}

// TestClientAgainstSchema drives every client method against a server that
// validates each request against the official schema of every supported
// minor and answers with the sample for the matched operation, itself
// validated against the schema.
func TestClientAgainstSchema(t *testing.T) {
	schemas, err := flinkschema.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range schemas {
		t.Run(schema.Minor, func(t *testing.T) { clientAgainstSchema(t, schema) })
	}
}

func clientAgainstSchema(t *testing.T, schema *flinkschema.Schema) {
	called := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := schema.ValidateRequest(r, body); err != nil {
			t.Errorf("request does not follow the schema: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, op, _, _ := schema.Operation(r.Method, r.URL.Path)
		sample, ok := samples[op.OperationID]
		if !ok {
			t.Errorf("no sample for %s", op.OperationID)
			http.Error(w, "no sample", http.StatusInternalServerError)
			return
		}
		called[op.OperationID] = true
		status := http.StatusOK
		if op.Responses.Value("200") == nil {
			status = http.StatusAccepted
		}
		out := []byte("{}")
		if sample != nil {
			out, _ = json.Marshal(sample)
		}
		if err := schema.ValidateResponse(r.Method, r.URL.Path, status, out); err != nil {
			t.Errorf("sample for %s does not follow the schema: %v", op.OperationID, err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	c := flink.NewClient(srv.URL, srv.Client())
	ctx := context.Background()

	check := func(opID string, got any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", opID, err)
			return
		}
		if want := samples[opID]; want != nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s decoded\n got %+v\nwant %+v", opID, got, want)
		}
	}
	ov, err := c.Overview(ctx)
	check("getClusterOverview", ov, err)
	dc, err := c.DashboardConfiguration(ctx)
	check("getDashboardConfiguration", dc, err)
	jobs, err := c.Jobs(ctx)
	check("getJobIdsWithStatusesOverview", jobs, err)
	jo, err := c.JobsOverview(ctx)
	check("getJobsOverview", jo, err)
	job, err := c.Job(ctx, jobID)
	check("getJobDetails", job, err)
	cps, err := c.Checkpoints(ctx, jobID)
	check("getCheckpointingStatistics", cps, err)
	id, err := c.TriggerCheckpoint(ctx, jobID, flink.CheckpointTriggerRequest{CheckpointType: "FULL", TriggerID: triggerID})
	check("triggerCheckpoint", &flink.TriggerResponse{RequestID: id}, err)
	cst, err := c.CheckpointStatus(ctx, jobID, triggerID)
	check("getCheckpointStatus", cst, err)
	id, err = c.TriggerSavepoint(ctx, jobID, flink.SavepointTriggerRequest{TargetDirectory: "file:///sp", CancelJob: false, FormatType: flink.SavepointFormatNative, TriggerID: triggerID})
	check("triggerSavepoint", &flink.TriggerResponse{RequestID: id}, err)
	sst, err := c.SavepointStatus(ctx, jobID, triggerID)
	check("getSavepointStatus", sst, err)
	id, err = c.StopWithSavepoint(ctx, jobID, flink.StopWithSavepointRequest{TargetDirectory: "file:///sp", Drain: true, FormatType: flink.SavepointFormatCanonical})
	check("triggerStopWithSavepoint", &flink.TriggerResponse{RequestID: id}, err)
	check("cancelJob", nil, c.CancelJob(ctx, jobID))
	up, jarID, err := c.UploadJar(ctx, "job.jar", bytes.NewReader([]byte("PK")))
	check("uploadJar", up, err)
	if jarID != "3c4d_job.jar" {
		t.Errorf("jar id = %q", jarID)
	}
	jid, err := c.RunJar(ctx, jarID, flink.JarRunRequest{
		EntryClass: "com.example.Main", ProgramArgsList: []string{"--in", "x"}, Parallelism: 2,
		JobID: jobID, SavepointPath: "file:///sp/savepoint-6", AllowNonRestoredState: true,
		RestoreMode: flink.RestoreNoClaim, FlinkConfiguration: map[string]string{"pipeline.name": "x"},
	})
	check("submitJobFromJar", &flink.JarRunResponse{JobID: jid}, err)
	tms, err := c.TaskManagers(ctx)
	check("getTaskManagers", tms, err)

	for opID := range samples {
		if !called[opID] {
			t.Errorf("operation %s has a sample but no client call reached it", opID)
		}
	}
}

// Request bodies, checked against their component schemas directly too: a
// misspelt JSON name is an unknown, hence ignored, property to the request
// check above, so also compare the field names with the schema's.
func TestRequestBodiesUseSchemaNames(t *testing.T) {
	schemas, err := flinkschema.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range schemas {
		t.Run(schema.Minor, func(t *testing.T) { requestBodiesUseSchemaNames(t, schema) })
	}
}

func requestBodiesUseSchemaNames(t *testing.T, schema *flinkschema.Schema) {
	for component, v := range map[string]any{
		"SavepointTriggerRequestBody":  flink.SavepointTriggerRequest{TargetDirectory: "d", CancelJob: true, FormatType: flink.SavepointFormatCanonical, TriggerID: triggerID},
		"StopWithSavepointRequestBody": flink.StopWithSavepointRequest{TargetDirectory: "d", Drain: true, FormatType: flink.SavepointFormatNative, TriggerID: triggerID},
		"CheckpointTriggerRequestBody": flink.CheckpointTriggerRequest{CheckpointType: "INCREMENTAL", TriggerID: triggerID},
		"JarRunRequestBody": flink.JarRunRequest{EntryClass: "c", ProgramArgsList: []string{"a"}, Parallelism: 1, JobID: jobID,
			SavepointPath: "p", AllowNonRestoredState: true, RestoreMode: flink.RestoreClaim, FlinkConfiguration: map[string]string{"k": "v"}},
	} {
		if err := schema.ValidateValue(component, v); err != nil {
			t.Error(err)
		}
		assertKnownNames(t, schema, component, v)
	}
	// Response types, for the same reason: a misspelt name would decode
	// nothing and pass every value check.
	for component, v := range map[string]any{
		"ClusterOverviewWithVersion":    samples["getClusterOverview"],
		"DashboardConfiguration":        samples["getDashboardConfiguration"],
		"JobDetailsInfo":                samples["getJobDetails"],
		"CheckpointingStatistics":       samples["getCheckpointingStatistics"],
		"CompletedCheckpointStatistics": &completed,
		"FailedCheckpointStatistics":    samples["getCheckpointingStatistics"].(*flink.CheckpointingStatistics).Latest.Failed,
		"RestoredCheckpointStatistics":  samples["getCheckpointingStatistics"].(*flink.CheckpointingStatistics).Latest.Restored,
		"TaskManagerInfo":               &samples["getTaskManagers"].(*flink.TaskManagersInfo).TaskManagers[0],
		"JobDetails":                    &samples["getJobsOverview"].(*flink.MultipleJobsDetails).Jobs[0],
		"JobDetailsVertexInfo":          &samples["getJobDetails"].(*flink.JobDetailsInfo).Vertices[0],
		"JarUploadResponseBody":         samples["uploadJar"],
		"JarRunResponseBody":            samples["submitJobFromJar"],
		"TriggerResponse":               samples["triggerSavepoint"],
		"SavepointInfo":                 &flink.SavepointInfo{Location: "l"},
		"CheckpointInfo":                &flink.CheckpointInfo{CheckpointID: 1, FailureCause: &flink.SerializedThrowable{SerializedThrowable: "x"}},
	} {
		assertKnownNames(t, schema, component, v)
	}
}

// TestClaimModeField: the run request carries the claim mode in the field
// each minor's JarRunRequestBody reads first (claimMode where the schema
// has it, else restoreMode), and in no field the minor lacks.
func TestClaimModeField(t *testing.T) {
	schemas, err := flinkschema.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range schemas {
		t.Run(schema.Minor, func(t *testing.T) {
			v, err := flink.ParseVersion(schema.Minor + ".0")
			if err != nil {
				t.Fatal(err)
			}
			req := flink.JarRunRequest{JobID: jobID, SavepointPath: "p"}.WithClaimMode(v, flink.RestoreNoClaim)
			if err := schema.ValidateValue("JarRunRequestBody", req); err != nil {
				t.Error(err)
			}
			assertKnownNames(t, schema, "JarRunRequestBody", req)
			want := flink.JarRunRequest{JobID: jobID, SavepointPath: "p", RestoreMode: flink.RestoreNoClaim}
			if schema.Properties("JarRunRequestBody")["claimMode"] {
				want = flink.JarRunRequest{JobID: jobID, SavepointPath: "p", ClaimMode: flink.RestoreNoClaim}
			}
			if !reflect.DeepEqual(req, want) {
				t.Errorf("request = %+v, want %+v", req, want)
			}
		})
	}
}

// extraNames are JSON names Flink sends that the schema does not list.
var extraNames = map[string]bool{
	"SerializedThrowable.class":       true,
	"SerializedThrowable.stack-trace": true,
}

func assertKnownNames(t *testing.T, schema *flinkschema.Schema, component string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", component, err)
	}
	props := schema.Properties(component)
	for k, val := range m {
		if !props[k] {
			t.Errorf("%s: JSON name %q is not in the schema", component, k)
		}
		if sub, ok := val.(map[string]any); ok && (k == "failure-cause" || k == "failureCause") {
			for sk := range sub {
				if !extraNames["SerializedThrowable."+sk] && !schema.Properties("SerializedThrowable")[sk] {
					t.Errorf("%s.%s: JSON name %q is not in the schema", component, k, sk)
				}
			}
		}
	}
	if len(m) == 0 || strings.TrimSpace(string(b)) == "{}" {
		t.Errorf("%s: sample marshals to nothing", component)
	}
}

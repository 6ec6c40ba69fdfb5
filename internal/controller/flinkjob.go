package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/resources"
)

// maxJarBytes bounds a job jar download; a bigger one is refused, not
// streamed into memory.
const maxJarBytes = 512 << 20

// decodeSpec reads a spec stored in status.
func decodeSpec(raw *runtime.RawExtension) *v1.FlinkClusterSpec {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	s := &v1.FlinkClusterSpec{}
	if err := json.Unmarshal(raw.Raw, s); err != nil {
		return nil
	}
	return s
}

func encodeSpec(s *v1.FlinkClusterSpec) *runtime.RawExtension {
	if s == nil {
		return nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("marshal spec: %v", err))
	}
	return &runtime.RawExtension{Raw: raw}
}

// rolledOut reports whether the children run the deployed spec and are
// all ready: a Deployment and StatefulSet carrying its spec hash, observed
// by their controllers, with every pod updated and ready.
func (r *Reconciler) rolledOut(ctx context.Context, fc *v1.FlinkCluster, deployed *v1.FlinkClusterSpec) bool {
	if deployed == nil {
		return false
	}
	want, err := resources.Build(withSpec(fc, deployed), r.Platform)
	if err != nil {
		return false
	}
	jm, tm := &appsv1.Deployment{}, &appsv1.StatefulSet{}
	if r.Client.Get(ctx, types.NamespacedName{Namespace: fc.Namespace, Name: *want.JobManager.Name}, jm) != nil ||
		r.Client.Get(ctx, types.NamespacedName{Namespace: fc.Namespace, Name: *want.TaskManager.Name}, tm) != nil {
		return false
	}
	return jm.Annotations[resources.AnnotationSpecHash] == specHash(want.JobManager.Annotations) &&
		tm.Annotations[resources.AnnotationSpecHash] == specHash(want.TaskManager.Annotations) &&
		jm.Status.ObservedGeneration >= jm.Generation && tm.Status.ObservedGeneration >= tm.Generation &&
		jm.Status.ReadyReplicas >= 1 && jm.Status.UpdatedReplicas == jm.Status.Replicas &&
		tm.Status.UpdateRevision == tm.Status.CurrentRevision &&
		tm.Status.ReadyReplicas == *want.TaskManager.Spec.Replicas && tm.Status.UpdatedReplicas == *want.TaskManager.Spec.Replicas
}

func withSpec(fc *v1.FlinkCluster, spec *v1.FlinkClusterSpec) *v1.FlinkCluster {
	c := fc.DeepCopy()
	c.Spec = *spec.DeepCopy()
	return c
}

func (r *Reconciler) flinkClient(fc *v1.FlinkCluster) *flink.Client {
	c := flink.NewClient(r.Resolver.BaseURL(fc.Namespace, fc.Name), r.HTTPClient)
	c.RequestTimeout = 5 * time.Second
	return c
}

// observeFlink reads what the lifecycle decision needs from the REST API.
// Reads only; an unreachable API is an observation, not an error.
func (r *Reconciler) observeFlink(ctx context.Context, fc *v1.FlinkCluster, jmReady bool) lifecycle.Flink {
	var obs lifecycle.Flink
	if !jmReady {
		return obs
	}
	c := r.flinkClient(fc)
	if _, err := c.Overview(ctx); err != nil {
		return obs
	}
	obs.Reachable = true
	job := fc.Status.Job
	if job == nil || job.ID == "" {
		return obs
	}
	detail, err := c.Job(ctx, job.ID)
	switch {
	case flink.IsNotFound(err):
	case err != nil:
		obs.Reachable = false
		return obs
	default:
		obs.JobFound = true
		obs.JobState = detail.State
		if cps, err := c.Checkpoints(ctx, job.ID); err == nil {
			obs.CheckpointsCompleted = cps.Counts.Completed
			if cps.Latest.Completed != nil {
				obs.LatestCheckpointPath = cps.Latest.Completed.ExternalPath
			}
		}
	}
	if sp := job.PendingSavepoint; sp != nil {
		obs.Pending = r.observeOperation(ctx, c, sp, obs.LatestCheckpointPath)
	}
	return obs
}

func (r *Reconciler) observeOperation(ctx context.Context, c *flink.Client, sp *v1.SavepointInfo, latestCheckpoint string) *lifecycle.Operation {
	if sp.Checkpoint {
		op, err := c.CheckpointStatus(ctx, sp.JobID, sp.TriggerID)
		switch {
		case flink.IsNotFound(err):
			return &lifecycle.Operation{Unknown: true}
		case err != nil:
			return nil
		case op.Status.ID != flink.OperationCompleted:
			return &lifecycle.Operation{}
		case op.Operation != nil && op.Operation.FailureCause != nil:
			return &lifecycle.Operation{Done: true, Failure: op.Operation.FailureCause.Message()}
		}
		return &lifecycle.Operation{Done: true, Path: latestCheckpoint, Failure: "the checkpoint has no external path"}
	}
	op, err := c.SavepointStatus(ctx, sp.JobID, sp.TriggerID)
	switch {
	case flink.IsNotFound(err):
		return &lifecycle.Operation{Unknown: true}
	case err != nil:
		return nil
	case op.Status.ID != flink.OperationCompleted:
		return &lifecycle.Operation{}
	case op.Operation == nil:
		return &lifecycle.Operation{Done: true, Failure: "Flink reported no result"}
	case op.Operation.FailureCause != nil:
		return &lifecycle.Operation{Done: true, Failure: op.Operation.FailureCause.Message()}
	}
	return &lifecycle.Operation{Done: true, Path: op.Operation.Location}
}

// act performs the plan's side effect. The plan's status, which names the
// trigger or job ID, is already written.
func (r *Reconciler) act(ctx context.Context, fc *v1.FlinkCluster, plan lifecycle.Plan) error {
	c := r.flinkClient(fc)
	job := plan.Status.Job
	switch plan.Action {
	case lifecycle.ActTrigger:
		sp := job.PendingSavepoint
		var err error
		switch {
		case sp.Checkpoint:
			_, err = c.TriggerCheckpoint(ctx, sp.JobID, flink.CheckpointTriggerRequest{TriggerID: sp.TriggerID})
		case sp.Stop:
			_, err = c.StopWithSavepoint(ctx, sp.JobID, flink.StopWithSavepointRequest{
				TargetDirectory: resources.SavepointsDir(fc, r.Platform), TriggerID: sp.TriggerID, FormatType: flink.SavepointFormatCanonical})
		default:
			_, err = c.TriggerSavepoint(ctx, sp.JobID, flink.SavepointTriggerRequest{
				TargetDirectory: resources.SavepointsDir(fc, r.Platform), TriggerID: sp.TriggerID, FormatType: flink.SavepointFormatCanonical})
		}
		if err != nil {
			r.Metrics.Savepoints.WithLabelValues(string(sp.Reason), "trigger_error").Inc()
			return fmt.Errorf("trigger %s savepoint %s: %w", sp.Reason, sp.TriggerID, err)
		}
		r.Metrics.Savepoints.WithLabelValues(string(sp.Reason), "triggered").Inc()
	case lifecycle.ActCancel:
		if err := c.CancelJob(ctx, job.ID); err != nil && !flink.IsNotFound(err) {
			return fmt.Errorf("cancel job %s: %w", job.ID, err)
		}
	case lifecycle.ActSubmit:
		return r.submit(ctx, c, fc, job.ID, plan.RestorePath)
	}
	return nil
}

// submit uploads the job's jar and runs it under the recorded job ID.
func (r *Reconciler) submit(ctx context.Context, c *flink.Client, fc *v1.FlinkCluster, jobID, restorePath string) error {
	spec := fc.Spec.Job
	jar, err := r.fetchJar(ctx, spec.JarURI)
	if err != nil {
		return err
	}
	_, jarID, err := c.UploadJar(ctx, path.Base(spec.JarURI), jar)
	if err != nil {
		return fmt.Errorf("upload jar: %w", err)
	}
	_, err = c.RunJar(ctx, jarID, flink.JarRunRequest{
		EntryClass:            spec.EntryClass,
		ProgramArgsList:       spec.Args,
		Parallelism:           spec.Parallelism,
		JobID:                 jobID,
		SavepointPath:         restorePath,
		AllowNonRestoredState: spec.AllowNonRestoredState,
	})
	if err != nil {
		// A lost response or a restart may have submitted it already: the
		// job ID is ours, so Flink knowing it means the submission landed.
		if _, getErr := c.Job(ctx, jobID); getErr == nil {
			return nil
		}
		return fmt.Errorf("run job %s: %w", jobID, err)
	}
	r.Metrics.Submissions.Inc()
	return nil
}

func (r *Reconciler) fetchJar(ctx context.Context, uri string) (io.Reader, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("jar %s: %w", uri, err)
	}
	resp, err := r.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jar %s: %w", uri, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jar %s: HTTP %d", uri, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJarBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch jar %s: %w", uri, err)
	}
	if len(raw) > maxJarBytes {
		return nil, fmt.Errorf("jar %s is larger than %d MiB", uri, maxJarBytes>>20)
	}
	return bytes.NewReader(raw), nil
}

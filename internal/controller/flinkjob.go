package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

// unreadableStatus is a status field that does not decode. The cluster
// fails closed on it: Degraded, and nothing upgraded or applied.
type unreadableStatus struct {
	field string
	err   error
}

func (u *unreadableStatus) Error() string {
	return fmt.Sprintf("%s does not decode (%v); the operator changes nothing until it is repaired or removed", u.field, u.err)
}

// decodeSpec reads a spec stored in status; absent is nil, not an error.
func decodeSpec(raw *runtime.RawExtension, field string) (*v1.FlinkClusterSpec, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	s := &v1.FlinkClusterSpec{}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return nil, &unreadableStatus{field: field, err: err}
	}
	if s.Version == "" {
		return nil, &unreadableStatus{field: field, err: fmt.Errorf("it names no Flink version")}
	}
	return s, nil
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

// keepEncoding is the recorded encoding of s when it decodes to s, else a
// new one. The API server returns the recorded spec with its keys sorted,
// which encoding/json does not write: comparing bytes would find every
// status changed and write it on every reconcile.
func keepEncoding(recorded *runtime.RawExtension, s *v1.FlinkClusterSpec) *runtime.RawExtension {
	if s != nil && recorded != nil {
		if old, err := decodeSpec(recorded, ""); err == nil && equality.Semantic.DeepEqual(old, s) {
			return recorded
		}
	}
	return encodeSpec(s)
}

// rolledOutTo reports whether the observed children run want and are all
// ready: the JobManager's workload and the TaskManagers' StatefulSet
// carrying its spec hash, observed by their controllers, with every pod
// updated and ready (counted by readiness: the workloads' status, or the
// current pods where they show it first; observed likewise), one
// JobManager ready, and each StatefulSet's revisions agreeing. The last is
// what keeps the two sources consistent: the pods (their own cache) may be
// ahead of the workload's status, and a status still counting the old
// pod ready beside a new pod the pods show created but not ready would
// otherwise read as rolled out. With HA a standby that never turns ready
// holds the rollout, and JobManagerStuck says so.
func rolledOutTo(want *resources.Desired, obs observed) bool {
	jm, tm := obs.jobManager, obs.taskManager
	if !jm.Exists() || jm.Terminating() || tm == nil {
		return false
	}
	return jm.Annotations()[resources.AnnotationSpecHash] == specHash(wantedJobManager(want, jm)) &&
		jm.RevisionsAgree() &&
		tm.Annotations[resources.AnnotationSpecHash] == specHash(want.TaskManager.Annotations) &&
		obs.jmPods.Observed && obs.tmPods.Observed &&
		obs.jobManagerReady() && obs.jmPods.Updated == obs.jmPods.Replicas &&
		tm.Status.UpdateRevision == tm.Status.CurrentRevision &&
		obs.tmPods.Ready == *want.TaskManager.Spec.Replicas && obs.tmPods.Updated == *want.TaskManager.Spec.Replicas
}

// renderingDrift reports whether the JobManager or TaskManagers run a pod
// template other than the one built for the same spec: the operator (or a
// platform setting) changed how it renders, and applying that rolls the
// pods. Replica counts are not drift. Objects written before the
// template hash was recorded are compared by their whole spec hash when
// the replica counts agree, which errs on the side of saving state.
func renderingDrift(want *resources.Desired, obs observed) bool {
	jm, tm := obs.jobManager, obs.taskManager
	// A JobManager being replaced runs no rendering the next one keeps.
	if !jm.Exists() || jm.Terminating() || tm == nil {
		return false
	}
	differs := func(have map[string]string, wantMeta map[string]string, sameReplicas bool) bool {
		if h, ok := have[resources.AnnotationTemplateHash]; ok {
			return h != wantMeta[resources.AnnotationTemplateHash]
		}
		return sameReplicas && have[resources.AnnotationSpecHash] != wantMeta[resources.AnnotationSpecHash]
	}
	return differs(jm.Annotations(), wantedJobManager(want, jm), !replicasDiffer(jm.Replicas(), *want.JobManager.Spec.Replicas)) ||
		differs(tm.Annotations, want.TaskManager.Annotations, !replicasDiffer(tm.Spec.Replicas, *want.TaskManager.Spec.Replicas))
}

// wantedJobManager is the annotations of the JobManager wanted in the kind
// observed: an older cluster's Deployment is compared with the Deployment
// it would be applied as (resources.LegacyJobManager), which shares the
// StatefulSet's template hash.
func wantedJobManager(want *resources.Desired, jm workload.JobManager) map[string]string {
	if jm.Deployment != nil {
		return want.LegacyJobManager().Annotations
	}
	return want.JobManager.Annotations
}

// rollsPods: applying a changed child of this kind restarts Flink
// processes (the ConfigMap, through the config hash of the templates).
func rollsPods(kind string) bool {
	return kind == "Deployment" || kind == "StatefulSet" || kind == "ConfigMap"
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
		obs.Vertices = detail.Vertices
		for _, v := range detail.Vertices {
			obs.Parallelism = max(obs.Parallelism, v.Parallelism)
		}
		if ts := detail.Timestamps[string(flink.JobRunning)]; ts > 0 {
			obs.RunningSince = time.UnixMilli(ts)
		}
		if detail.State.Terminal() && detail.EndTime > 0 {
			obs.EndedAt = time.UnixMilli(detail.EndTime)
		}
		switch cps, err := c.Checkpoints(ctx, job.ID); {
		case err == nil:
			readCheckpoints(&obs, cps)
		case flink.IsHistoryAbsent(err) && detail.Name == flink.ResultOnlyJobName && len(detail.Vertices) == 0:
			// Flink shows the job only by its result
			// (lifecycle.Flink.HistoryGone).
			obs.HistoryGone = true
		case flink.IsHistoryAbsent(err):
			// A job with a real graph and no statistics: a BATCH job,
			// whose dynamic graph sets no checkpointing up
			// (DefaultExecutionGraphBuilder), so it has none.
		case detail.State == flink.JobInitializing:
			// From 1.18 Flink asks the job's JobMaster, which it does not
			// have yet (Dispatcher#requestCheckpointStats fails, a 500);
			// before, it answered the empty statistics of the sparse
			// graph. A run still initializing has completed nothing.
		default:
			// The history is unknown (or the job went between the two
			// reads), and a restore point is not read from it.
			obs.HistoryUnread = true
		}
		if detail.State == flink.JobFailed {
			obs.FailureCause = r.failureCause(ctx, c, job.ID)
		}
	}
	if sp := job.PendingSavepoint; sp != nil {
		obs.Pending = r.observeOperation(ctx, c, sp, obs.LatestCheckpoint)
	}
	return obs
}

// readCheckpoints takes the latest completed checkpoint and the completed
// savepoints of the job's checkpoint history (Flink keeps the last
// web.checkpoints.history entries), which settle a forgotten trigger.
func readCheckpoints(obs *lifecycle.Flink, cps *flink.CheckpointingStatistics) {
	obs.CheckpointsCompleted = cps.Counts.Completed
	if cp := cps.Latest.Completed; cp != nil && cp.ExternalPath != "" {
		obs.LatestCheckpoint = &lifecycle.Checkpoint{ID: cp.ID, Path: cp.ExternalPath, TriggeredAt: time.UnixMilli(cp.TriggerTimestamp)}
	}
	if r := cps.Latest.Restored; r != nil && r.ExternalPath != "" {
		obs.Restored = &lifecycle.Checkpoint{ID: r.ID, Path: r.ExternalPath}
		obs.RestoredSavepoint = r.IsSavepoint
	}
	for _, h := range cps.History {
		if h.IsSavepoint && h.ClassName == flink.CheckpointClassCompleted && h.ExternalPath != "" {
			obs.Savepoints = append(obs.Savepoints, lifecycle.Checkpoint{ID: h.ID, Path: h.ExternalPath, TriggeredAt: time.UnixMilli(h.TriggerTimestamp)})
		}
	}
}

// failureCause is the first line of the job's newest root exception.
func (r *Reconciler) failureCause(ctx context.Context, c *flink.Client, jobID string) string {
	ex, err := c.JobExceptions(ctx, jobID)
	if err != nil || len(ex.ExceptionHistory.Entries) == 0 {
		return ""
	}
	e := ex.ExceptionHistory.Entries[0]
	first, _, _ := strings.Cut(e.Stacktrace, "\n")
	if first == "" {
		first = e.ExceptionName
	}
	return strings.TrimSpace(first)
}

func (r *Reconciler) observeOperation(ctx context.Context, c *flink.Client, sp *v1.SavepointInfo, latest *lifecycle.Checkpoint) *lifecycle.Operation {
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
		case latest == nil:
			return &lifecycle.Operation{Done: true, Failure: "the checkpoint has no external path"}
		}
		return &lifecycle.Operation{Done: true, Path: latest.Path}
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

// request sends the step's Flink request. The step's status, which names
// the trigger or job ID in job, is already written. submitTo is the
// JobManager pod a submission's jar goes to.
func (r *Reconciler) request(ctx context.Context, fc *v1.FlinkCluster, job *v1.JobStatus, deploy *v1.FlinkClusterSpec, a lifecycle.Action, submitTo *corev1.Pod) error {
	c := r.flinkClient(fc)
	if job == nil {
		return nil
	}
	switch a.Kind {
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
	case lifecycle.ActRescale:
		var vertices []v1.VertexParallelism
		if deploy != nil && deploy.Job != nil {
			vertices = deploy.Job.VertexParallelism
		}
		return r.rescaleInPlace(ctx, c, job.ID, a.Parallelism, vertices)
	case lifecycle.ActCancel:
		if err := c.CancelJob(ctx, job.ID); err != nil && !flink.IsNotFound(err) {
			return fmt.Errorf("cancel job %s: %w", job.ID, err)
		}
	case lifecycle.ActSubmit:
		spec, version := fc.Spec.Job, fc.Spec.Version
		if deploy != nil && deploy.Job != nil {
			spec, version = deploy.Job, deploy.Version // the last stable job in a rollback
		}
		if jarRefused(fc.Status.Conditions, fc.Generation, spec.JarURI) {
			// Refused once, refused again: nothing is fetched until the
			// spec changes (JobSubmitted says why).
			return nil
		}
		pod := submitTo
		if pod == nil {
			// Not read before the record (reconcile reads it for every
			// submission); nothing is sent without it.
			return fmt.Errorf("no JobManager pod of %s was read to take the job's jar", klog.KObj(fc))
		}
		jm := flink.NewClient(r.Resolver.JobManagerURL(fc.Namespace, fc.Name, pod.Name, string(pod.UID), pod.Status.PodIP), r.HTTPClient)
		jm.RequestTimeout = c.RequestTimeout
		v, err := flink.ParseVersion(version)
		if err != nil {
			return err
		}
		if spec.SQL != nil {
			return r.submitSQL(ctx, fc, spec, v, job.ID, a.RestorePath)
		}
		return r.submit(ctx, jm, fc, spec, v, job.ID, a.RestorePath)
	}
	return nil
}

// jobManagerPod is a Ready JobManager pod, the first by name, read around
// the cache (pods are not cached: there are many, and only a submission
// needs one).
func (r *Reconciler) jobManagerPod(ctx context.Context, fc *v1.FlinkCluster) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(fc.Namespace),
		client.MatchingLabels(resources.SelectorLabels(fc.Name, resources.ComponentJobManager))); err != nil {
		return nil, fmt.Errorf("list JobManager pods of %s: %w", klog.KObj(fc), err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && readiness.PodReady(p) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no JobManager pod of %s is ready to take the job's jar", klog.KObj(fc))
}

// jobManagerSince is when the youngest ready JobManager pod turned ready,
// read around the cache; zero when none is or the read fails, which the
// lifecycle waits out (JobManagerUnconfirmed).
func (r *Reconciler) jobManagerSince(ctx context.Context, fc *v1.FlinkCluster) time.Time {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(fc.Namespace),
		client.MatchingLabels(resources.SelectorLabels(fc.Name, resources.ComponentJobManager))); err != nil {
		// Unknown: the lifecycle holds (JobManagerUnconfirmed) and asks again.
		log.FromContext(ctx).Error(err, "Read the JobManager pods", "flinkcluster", klog.KObj(fc))
		return time.Time{}
	}
	slim := make([]readiness.Pod, 0, len(pods.Items))
	for i := range pods.Items {
		slim = append(slim, *readiness.Slim(&pods.Items[i]))
	}
	return readiness.YoungestReady(slim, resources.ComponentJobManager)
}

// JobEndedUnseenError is Flink refusing to run a job ID again that it
// does not show: its job result store records the job as globally
// terminal (Dispatcher#submitJob), so the job ran and ended, and Flink
// forgot it since (a JobManager failover with high availability, or
// jobstore.expiration-time), all unseen by the operator. Its state is
// what the job last completed, which only the checkpoint storage knows.
// Flink refuses an ID it is still persisting with the same exception
// (submittedAndWaitingTerminationJobIDs), unseen yet too: a resend racing
// its first send reads as this until Flink shows the job, which ends it
// (expireJobSubmittedCondition).
type JobEndedUnseenError struct{ JobID string }

func (e *JobEndedUnseenError) Error() string {
	return fmt.Sprintf("Flink refused to run job %s again: it already ran and ended (its job result store records it), unseen by the operator", e.JobID)
}

// submit uploads the jar of the job being deployed (the last stable one
// in a rollback), runs it under the recorded job ID, and deletes the jar:
// Flink keeps every upload in the JobManager's web.upload.dir otherwise.
// The claim mode is always NO_CLAIM, sent in the field the version reads:
// Flink then never deletes the snapshot the job restores from, which the
// operator recorded and a rollback may restore again (with CLAIM,
// CheckpointCoordinator#restoreSavepoint makes it one of the job's
// checkpoints, deleted once subsumed). Sent, it does not depend on the
// configured default.
func (r *Reconciler) submit(ctx context.Context, c *flink.Client, fc *v1.FlinkCluster, spec *v1.JobSpec, v flink.Version, jobID, restorePath string) error {
	// The jar streams from its URI to the JobManager under its own
	// deadline (a fat jar outlasts a REST request timeout), never held.
	upload, cancel := context.WithTimeout(ctx, r.Jars.timeout())
	defer cancel()
	jar, err := r.Jars.openJar(upload, spec.JarURI)
	if err != nil {
		return err
	}
	defer jar.Close()
	_, jarID, err := c.UploadJar(upload, path.Base(spec.JarURI), jar)
	if err != nil {
		if refused := (*JarRefusedError)(nil); errors.As(err, &refused) {
			return refused
		}
		return fmt.Errorf("upload jar: %w", err)
	}
	defer func() {
		if err := c.DeleteJar(ctx, jarID); err != nil && !flink.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "Delete uploaded jar", "flinkcluster", klog.KObj(fc), "jar", jarID)
		}
	}()
	req := flink.JarRunRequest{
		EntryClass:            spec.EntryClass,
		ProgramArgsList:       spec.Args,
		Parallelism:           spec.Parallelism,
		JobID:                 jobID,
		SavepointPath:         restorePath,
		AllowNonRestoredState: spec.AllowNonRestoredState,
	}
	if len(spec.VertexParallelism) > 0 && v.ReadsRequestOverrides() {
		// The job's own configuration, which the Dispatcher reads the
		// overrides from (1.18.1+; admission refuses them by hand below,
		// and the autopilot sizes such a job as a whole).
		req.FlinkConfiguration = map[string]string{flink.ParallelismOverridesKey: overridesFor(spec.VertexParallelism)}
	}
	_, err = c.RunJar(ctx, jarID, req.WithClaimMode(v, flink.RestoreNoClaim))
	if err != nil {
		// A lost response or a restart may have submitted it already: the
		// job ID is new and ours, so Flink knowing it means it landed.
		_, getErr := c.Job(ctx, jobID)
		switch {
		case getErr == nil:
			return nil
		case flink.IsDuplicateSubmission(err) && flink.IsNotFound(getErr):
			return &JobEndedUnseenError{JobID: jobID}
		}
		return fmt.Errorf("run job %s: %w", jobID, err)
	}
	r.Metrics.Submissions.Inc()
	return nil
}

package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/autopilot"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/policy"
	"github.com/datapilot/datapilot/internal/resources"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=list

// healInterval is how often restarts are read for a cluster with
// spec.healing but no autoscaler.
const healInterval = 30 * time.Second

// autopilotMemory holds each cluster's metric history, in memory: an
// operator restart starts a new window (the decisions, blocks and
// pending scale-downs are in status and survive it).
type autopilotMemory struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*clusterMemory
}

type clusterMemory struct {
	samples  []autopilot.Sample
	restarts []autopilot.Restarts
	last     time.Time
	jobID    string
	sampler  autopilot.Sampler
}

func (a *autopilotMemory) get(key types.NamespacedName) *clusterMemory {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[types.NamespacedName]*clusterMemory{}
	}
	c, ok := a.m[key]
	if !ok {
		c = &clusterMemory{}
		a.m[key] = c
	}
	return c
}

func (a *autopilotMemory) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, key)
}

// forgetAutopilot drops a deleted cluster's history and gauge.
func (r *Reconciler) forgetAutopilot(key types.NamespacedName) {
	r.autopilot.forget(key)
	r.Metrics.Autopilot.Parallelism.DeleteLabelValues(key.Namespace, key.Name)
}

// autopilotMetrics are the autopilot's Prometheus metrics.
type autopilotMetrics struct {
	Decisions    *prometheus.CounterVec
	Parallelism  *prometheus.GaugeVec
	RESTRequests prometheus.Counter
	Restores     prometheus.Counter
	Detections   *prometheus.CounterVec
}

func newAutopilotMetrics(reg prometheus.Registerer) *autopilotMetrics {
	m := &autopilotMetrics{
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_autoscaler_decisions_total",
			Help: "Autopilot decisions recorded in status, by reason (ScaleUp, ScaleDown, Unschedulable, Ineffective, ...) and result (Applied, Recommended, Refused, Succeeded, Failed).",
		}, []string{"reason", "result"}),
		Parallelism: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "datapilot_autoscaler_parallelism",
			Help: "The job parallelism the autopilot set (or recommends, in recommend mode), by cluster.",
		}, []string{"namespace", "name"}),
		RESTRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "datapilot_autoscaler_rest_requests_total",
			Help: "Flink REST requests the autopilot sent to read metrics (the lifecycle's own are not counted).",
		}),
		Restores: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "datapilot_job_restores_total",
			Help: "Jobs restored from their latest state by healing (a FAILED job, a restart loop, stalled checkpoints).",
		}),
		Detections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_job_problems_detected_total",
			Help: "Restart loops and stalled checkpoints detected, by condition.",
		}, []string{"condition"}),
	}
	reg.MustRegister(m.Decisions, m.Parallelism, m.RESTRequests, m.Restores, m.Detections)
	// Both series exist at zero before the first detection.
	for _, c := range []string{v1.ConditionRestartLoop, v1.ConditionCheckpointsStalled} {
		m.Detections.WithLabelValues(c)
	}
	return m
}

// autoscalerOf is spec.autoscaler resolved; nil without it. The downtime
// the last rescales recorded in st cost is what the next one is expected
// to.
func autoscalerOf(spec *v1.FlinkClusterSpec, st *v1.AutoscalerStatus) *autopilot.Policy {
	if p, ok := autopilot.PolicyFor(spec); ok {
		if st != nil {
			p.RestartTime = autopilot.RestartEstimate(st.Decisions, p.DefaultRestartTime())
		}
		return &p
	}
	return nil
}

// proposal is the autopilot's rescale for the lifecycle, from its status:
// its parallelism and TaskManagers in apply mode, and its rescale in
// flight; nil without an autoscaler.
func proposal(p *autopilot.Policy, st *v1.AutoscalerStatus) *lifecycle.Rescale {
	if p == nil || st == nil {
		return nil
	}
	r := &lifecycle.Rescale{}
	if p.Mode == v1.AutoscalerApply && st.Parallelism > 0 {
		r.Parallelism, r.TaskManagers = st.Parallelism, p.TaskManagers(st.Parallelism)
		// Each vertex at its own (the run request's overrides, or its
		// resource requirements in place); the job's parallelism, the
		// highest, is what the TaskManagers' slots follow: one
		// slot-sharing group holds a subtask of every vertex per slot.
		for _, v := range st.Vertices {
			r.Vertices = append(r.Vertices, v1.VertexParallelism{ID: v.ID, Parallelism: v.Parallelism})
		}
	}
	if st.Pending != nil {
		r.Pending = st.Pending.To
	}
	return r
}

// desiredTaskManagers is the TaskManager count the cluster should run.
func desiredTaskManagers(spec *v1.FlinkClusterSpec, st *v1.AutoscalerStatus) int32 {
	if r := proposal(autoscalerOf(spec, st), st); r != nil && r.Parallelism > 0 {
		return r.TaskManagers
	}
	return spec.TaskManager.Replicas
}

// autopilotSeen is what the autopilot observed this reconcile: the job's
// restarts (sampled when due), the recommendation of its metric history,
// and, before a scale-up that adds TaskManagers, the capacity for them.
type autopilotSeen struct {
	restarts []autopilot.Restarts
	rec      autopilot.Recommendation
	capacity *autopilot.Capacity
	running  bool
	requeue  time.Duration
}

// autopilotResult is what the autopilot decided this reconcile.
type autopilotResult struct {
	// scaler is spec.autoscaler resolved; nil without it.
	scaler   *autopilot.Policy
	status   *v1.AutoscalerStatus
	verdicts autopilotVerdicts
	events   []autopilot.Event
	heal     string
	requeue  time.Duration
	// decision is the one recorded in status.autoscaler.decisions, if any;
	// detected the conditions that turned True.
	decision *v1.AutoscalerDecision
	detected []string
	// parallelism is what the autopilot set or recommends, for its gauge.
	parallelism int32
}

// autopilotVerdicts are the autopilot's verdicts on its conditions; a nil
// one leaves its condition as recorded.
type autopilotVerdicts struct {
	autoscaling, restartLoop, checkpointsStalled *verdict
}

// observeAutopilot samples the job's metrics when due (bounded) and reads
// the capacity a scale-up would need.
func (r *Reconciler) observeAutopilot(ctx context.Context, fc *v1.FlinkCluster, hp policy.Healing, scaler *autopilot.Policy, obs lifecycle.Flink, now time.Time) autopilotSeen {
	var seen autopilotSeen
	job := fc.Status.Job
	if fc.Spec.Job == nil || (scaler == nil && fc.Spec.Healing == nil) {
		return seen
	}
	interval := healInterval
	if scaler != nil {
		interval = scaler.Interval
	}
	mem := r.autopilot.get(client.ObjectKeyFromObject(fc))
	seen.running = obs.JobFound && obs.JobState == flink.JobRunning && job != nil && job.ID != ""
	if seen.running && now.Sub(mem.last) >= interval {
		c := r.flinkClient(fc)
		if mem.jobID != job.ID {
			*mem = clusterMemory{jobID: job.ID}
		}
		mem.last = now
		took := r.sampleRestarts(ctx, c, job.ID, mem, now, hp.LoopWindow)
		if scaler != nil {
			s, n, err := mem.sampler.Sample(ctx, c, job.ID, obs.Vertices, now)
			took += n
			switch {
			case err != nil:
				log.FromContext(ctx).V(1).Info("Metrics unavailable", "flinkcluster", klog.KObj(fc), "error", err.Error())
			case len(s.Vertices) > 0:
				mem.samples = autopilot.Append(mem.samples, s, scaler.HistoryKeep())
			}
		}
		r.Metrics.Autopilot.RESTRequests.Add(float64(took))
	}
	if seen.running {
		seen.requeue = max(interval-now.Sub(mem.last), time.Second)
	}
	seen.restarts = mem.restarts
	if scaler == nil {
		return seen
	}
	seen.rec = autopilot.Evaluate(mem.samples, *scaler, scaler.MetricsFrom(obs.RunningSince), now)
	if !seen.running {
		seen.rec = autopilot.Recommendation{Kind: autopilot.Collecting, Message: "The job is not running"}
	}
	rec := seen.rec
	if rec.Kind == autopilot.Up && (fc.Status.Autoscaler == nil || fc.Status.Autoscaler.Pending == nil) && paused(fc, seen.running) == "" &&
		scaler.TaskManagers(rec.To) > max(scaler.TaskManagers(rec.From), fc.Status.TaskManager.Replicas) {
		capacity, err := r.taskManagerCapacity(ctx, fc)
		if err != nil {
			log.FromContext(ctx).Error(err, "Capacity check failed", "flinkcluster", klog.KObj(fc))
		} else {
			seen.capacity = capacity
		}
	}
	return seen
}

// decideAutopilot is the autopilot's decision on what it observed, and its
// status; it performs nothing.
func decideAutopilot(fc *v1.FlinkCluster, pol policy.Policy, scaler *autopilot.Policy, seen autopilotSeen, obs lifecycle.Flink, now time.Time) autopilotResult {
	res := autopilotResult{requeue: seen.requeue, scaler: scaler}
	if scaler != nil {
		res.status = fc.Status.Autoscaler.DeepCopy()
	}
	if fc.Spec.Job == nil || (scaler == nil && fc.Spec.Healing == nil) {
		return res
	}
	detect(fc, pol, obs, seen.restarts, now, &res)
	if scaler == nil {
		return res
	}
	if res.status == nil {
		res.status = &v1.AutoscalerStatus{}
	}
	out := autopilot.Decide(autopilot.Input{Policy: *scaler, Now: now, Rec: seen.rec, Status: *res.status, Paused: paused(fc, seen.running), Capacity: seen.capacity})
	if out.Recorded {
		res.decision = &out.Status.Decisions[0]
	}
	res.status = &out.Status
	if p := out.Status.Parallelism; p > 0 {
		res.parallelism = p
	} else if len(out.Status.Decisions) > 0 && out.Status.Decisions[0].Result == autopilot.ResultRecommended {
		res.parallelism = out.Status.Decisions[0].To
	}
	res.events = append(res.events, out.Events...)
	res.verdicts.autoscaling = &verdict{out.Condition.Status, out.Condition.Reason, out.Condition.Message}
	return res
}

// paused names what forbids a rescale now.
func paused(fc *v1.FlinkCluster, running bool) string {
	st := fc.Status
	switch {
	case st.Upgrade != nil && !lifecycle.IsRescale(st.Upgrade.Kind):
		return fmt.Sprintf("an upgrade (%s) is in flight", st.Upgrade.Kind)
	case meta.IsStatusConditionTrue(st.Conditions, v1.ConditionRollingBack):
		return "a rollback is in flight"
	case meta.IsStatusConditionTrue(st.Conditions, v1.ConditionDegraded):
		return "the cluster is Degraded"
	case st.LastFailedGeneration != 0 && st.LastFailedGeneration == fc.Generation:
		return fmt.Sprintf("generation %d failed its gate; change the spec to go on", fc.Generation)
	case !running:
		return "the job is not running"
	}
	return ""
}

// detect gives the RestartLoop and CheckpointsStalled verdicts and asks
// for a restore where the policy says so.
func detect(fc *v1.FlinkCluster, pol policy.Policy, obs lifecycle.Flink, restarts []autopilot.Restarts, now time.Time, res *autopilotResult) {
	hp := pol.Healing
	loop, isLoop := autopilot.RestartLoop(restarts, hp)
	var last time.Time
	if cp := obs.LatestCheckpoint; cp != nil {
		last = cp.TriggeredAt
	}
	running := obs.JobFound && obs.JobState == flink.JobRunning
	stall, isStalled := "", false
	if running {
		stall, isStalled = autopilot.CheckpointsStalled(now, last, obs.RunningSince, pol.CheckpointInterval, hp)
	}
	for _, d := range []struct {
		cond   string
		hit    bool
		msg    string
		action v1.HealingAction
		out    **verdict
	}{
		{v1.ConditionRestartLoop, isLoop, loop, hp.OnLoop, &res.verdicts.restartLoop},
		{v1.ConditionCheckpointsStalled, isStalled, stall, hp.OnStalled, &res.verdicts.checkpointsStalled},
	} {
		was := meta.IsStatusConditionTrue(fc.Status.Conditions, d.cond)
		if !d.hit {
			if was || meta.FindStatusCondition(fc.Status.Conditions, d.cond) == nil {
				*d.out = &verdict{metav1.ConditionFalse, "NotDetected", "Not detected"}
			}
			continue
		}
		*d.out = &verdict{metav1.ConditionTrue, d.cond, d.msg}
		if !was {
			res.detected = append(res.detected, d.cond)
			res.events = append(res.events, autopilot.Event{Warning: true, Reason: d.cond, Message: d.msg + "; policy: " + string(d.action)})
		}
		if d.action == v1.HealRestore && res.heal == "" {
			res.heal = strings.ToLower(d.msg[:1]) + d.msg[1:]
		}
	}
}

// sampleRestarts reads the job's numRestarts: one request.
func (r *Reconciler) sampleRestarts(ctx context.Context, c *flink.Client, jobID string, mem *clusterMemory, now time.Time, window time.Duration) int {
	ms, err := c.JobMetrics(ctx, jobID, flink.MetricNumRestarts)
	if err != nil {
		return 1
	}
	for _, m := range ms {
		if v, ok := m.Float(); ok && m.ID == flink.MetricNumRestarts {
			mem.restarts = autopilot.AppendRestarts(mem.restarts, autopilot.Restarts{Time: now, JobID: jobID, Count: int64(v)}, window)
		}
	}
	return 1
}

// taskManagerCapacity counts the TaskManager pods the nodes can take
// beyond the current ones. It lists nodes and pods around the cache, and
// runs only before a scale-up that adds TaskManagers.
func (r *Reconciler) taskManagerCapacity(ctx context.Context, fc *v1.FlinkCluster) (*autopilot.Capacity, error) {
	d, err := resources.Build(fc, r.Platform)
	if err != nil {
		return nil, err
	}
	needs := autopilot.PodNeeds{}
	if t := d.TaskManager.Spec.Template; t != nil && t.Spec != nil {
		needs.NodeSelector = t.Spec.NodeSelector
		for _, tol := range t.Spec.Tolerations {
			x := corev1.Toleration{}
			if tol.Key != nil {
				x.Key = *tol.Key
			}
			if tol.Operator != nil {
				x.Operator = *tol.Operator
			}
			if tol.Value != nil {
				x.Value = *tol.Value
			}
			if tol.Effect != nil {
				x.Effect = *tol.Effect
			}
			needs.Tolerations = append(needs.Tolerations, x)
		}
		needs.Requests = corev1.ResourceList{}
		for _, c := range t.Spec.Containers {
			if c.Resources != nil && c.Resources.Requests != nil {
				for k, q := range *c.Resources.Requests {
					cur := needs.Requests[k]
					cur.Add(q)
					needs.Requests[k] = cur
				}
			}
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.APIReader.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	c := autopilot.Fit(nodes.Items, pods.Items, needs)
	return &c, nil
}

// settleAutopilot applies the step's settlement of the autopilot's rescale
// to the autopilot's status, and folds that status into the step, so it is
// written with it, once.
func settleAutopilot(res *autopilotResult, step *lifecycle.Step, obs lifecycle.Flink, now time.Time) {
	if st := res.status; st != nil {
		set := step.Rescale
		running := autopilot.Running{}
		if obs.JobFound && obs.JobState == flink.JobRunning {
			running = autopilot.Running{Parallelism: obs.Parallelism, Vertices: map[string]int32{}, Since: obs.RunningSince}
			for _, v := range obs.Vertices {
				running.Vertices[v.ID] = v.Parallelism
			}
		}
		if e := autopilot.Settle(st, *res.scaler, now, running, !set.Done, set.Failed, set.Why, set.RevertTo); e != nil {
			res.events = append(res.events, *e)
		}
		// A rescale in flight is what Autoscaling says, whatever the
		// decision before it settled.
		if p := st.Pending; p != nil && (res.verdicts.autoscaling == nil || res.verdicts.autoscaling.status != metav1.ConditionTrue) {
			res.verdicts.autoscaling = &verdict{metav1.ConditionTrue, autopilot.ReasonInFlight, fmt.Sprintf("Rescaling from %d to %d: %s", p.From, p.To, p.Message)}
		}
	}
	step.Status.Autoscaler = res.status
}

// recordAutopilot emits the autopilot's events and metrics, and counts
// the step's restores.
func (r *Reconciler) recordAutopilot(ctx context.Context, fc *v1.FlinkCluster, res autopilotResult, step lifecycle.Step) {
	for _, e := range res.events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(fc, nil, typ, e.Reason, "Autopilot", "%s", e.Message)
	}
	for _, c := range res.detected {
		r.Metrics.Autopilot.Detections.WithLabelValues(c).Inc()
	}
	if d := res.decision; d != nil {
		r.Metrics.Autopilot.Decisions.WithLabelValues(d.Reason, d.Result).Inc()
		log.FromContext(ctx).Info("Autopilot decision", "flinkcluster", klog.KObj(fc), "reason", d.Reason, "result", d.Result, "from", d.From, "to", d.To, "message", d.Message)
	}
	if res.parallelism > 0 {
		r.Metrics.Autopilot.Parallelism.WithLabelValues(fc.Namespace, fc.Name).Set(float64(res.parallelism))
	}
	for _, t := range step.Transitions {
		if t.Kind == lifecycle.JobRestored {
			r.Metrics.Autopilot.Restores.Inc()
		}
	}
}

// inPlace: the spec's Flink rescales a running job in place, through the
// AdaptiveScheduler's resource requirements (REST from 1.18).
func inPlace(spec *v1.FlinkClusterSpec) bool {
	v, err := flink.ParseVersion(spec.Version)
	return err == nil && v.AtLeast(1, 18) && strings.EqualFold(string(spec.FlinkConfiguration["jobmanager.scheduler"]), "adaptive")
}

// rescaleInPlace sets every vertex's upper bound to its own target (the
// job's parallelism for a vertex without one), keeping its lower bound
// (JobResourceRequirements#validate wants 1 <= lower <= upper), with one
// GET and one PUT.
func (r *Reconciler) rescaleInPlace(ctx context.Context, c *flink.Client, jobID string, parallelism int32, vertices []v1.VertexParallelism) error {
	reqs, err := c.ResourceRequirements(ctx, jobID)
	if err != nil {
		return fmt.Errorf("read resource requirements of job %s: %w", jobID, err)
	}
	own := map[string]int32{}
	for _, v := range vertices {
		own[v.ID] = v.Parallelism
	}
	for id, v := range reqs {
		upper := parallelism
		if p, ok := own[strings.ToLower(id)]; ok {
			upper = p
		}
		v.Parallelism.UpperBound = upper
		v.Parallelism.LowerBound = min(max(v.Parallelism.LowerBound, 1), upper)
		reqs[id] = v
	}
	if err := c.SetResourceRequirements(ctx, jobID, reqs); err != nil {
		return fmt.Errorf("rescale job %s to %d in place: %w", jobID, parallelism, err)
	}
	return nil
}

// overridesFor is pipeline.jobvertex-parallelism-overrides for a job's
// per-vertex parallelism: "id:n,id:n", the Map format Flink's
// Configuration reads (Dispatcher#applyParallelismOverrides applies it).
func overridesFor(vertices []v1.VertexParallelism) string {
	parts := make([]string, 0, len(vertices))
	for _, v := range vertices {
		parts = append(parts, fmt.Sprintf("%s:%d", v.ID, v.Parallelism))
	}
	return strings.Join(parts, ",")
}

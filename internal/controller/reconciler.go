// Package controller reconciles FlinkClusters. A reconcile gets the
// cluster (a deleted one runs its finalizer instead), then runs its phases
// over one scope: observe (every read, once), decide (pure: the autopilot,
// the lifecycle step, conditions, the children's rendering), record (the
// step's intent, before a side effect that needs it), act (apply the
// children, send the step's Flink request), and one deferred status write.
package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/autopilot"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/health"
	"github.com/datapilot/datapilot/internal/lifecycle"
	"github.com/datapilot/datapilot/internal/policy"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/workload"
)

// FieldManager owns every field Datapilot applies.
const FieldManager = "datapilot"

// Finalizer guards what owner references do not cover: the job's final
// savepoint, Flink's HA ConfigMaps and the TaskManagers' volume claims. A
// session cluster without Kubernetes HA or claims never gets it, so it
// costs no write and its deletion waits for nothing.
const Finalizer = "data.example.com/cleanup"

// The rights the reconciler uses, and no more (the chart-install e2e test
// fails on a right no request used). Reads of children go through the
// label-filtered cache (list and watch; no get), writes are server-side
// apply patches (create is checked when a patch creates the object; no
// update); only the JobManagers are deleted by the operator, before Flink's
// HA ConfigMaps, and an older cluster's JobManager Deployment when a
// StatefulSet replaces it; owner references remove the rest.
// +kubebuilder:rbac:groups=data.example.com,resources=flinkclusters,verbs=list;watch;patch
// +kubebuilder:rbac:groups=data.example.com,resources=flinkclusters/status,verbs=patch
// +kubebuilder:rbac:groups=data.example.com,resources=flinkclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;deletecollection
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles FlinkClusters.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache, for the rare reads the cache does
	// not hold (the TaskManagers' claims at deletion, a ConfigMap's data
	// when its resourceVersion moved).
	APIReader client.Reader
	// Pods are the Flink pods as the readiness counts read them; the
	// controller watches them (setup.go). Nil counts the workloads'
	// status alone.
	Pods     *readiness.Cache
	Recorder recorder.EventRecorder
	Metrics  *Metrics
	// Resolver says where each cluster's Flink REST API is.
	Resolver flink.Resolver
	// HTTPClient reaches Flink REST.
	HTTPClient *http.Client
	// Jars says what job jars may be fetched from, how big and how long.
	Jars JarPolicy
	// Health holds the health poller's verdicts; nil disables them (and
	// with them a session cluster's budget, which waits for the verdict
	// to count a job: budgetDue). The operator always sets it.
	Health *health.Tracker
	// Prober probes one cluster at once, so a JobManager that just became
	// ready gets its health conditions in the same status write as
	// Available instead of one poll interval later.
	Prober interface {
		ProbeOnce(ctx context.Context, fc *v1.FlinkCluster) health.Verdict
		// RestStarting: the cluster's REST API has not answered since its
		// JobManager first turned ready, moments ago (health.RestStartGrace).
		RestStarting(fc *v1.FlinkCluster) bool
	}
	// ProgressDelay is how long mere progress of the children may wait
	// for a reconcile; DefaultProgressDelay when zero.
	ProgressDelay time.Duration
	// Pacer, when set, is told each reconcile's duration: the Flink
	// polling interval follows their p95.
	Pacer interface{ Observe(time.Duration) }
	// Platform is what the platform team set for every cluster (the
	// default shared storage).
	Platform resources.Platform
	// Shards, when set, is this replica's share of the clusters
	// (internal/sharding): only those are reconciled (sharding.go).
	Shards Shards
	// haReviews holds the last review of each user-named HA account.
	haReviews haReviews
	// autopilot holds each cluster's metric history.
	autopilot autopilotMemory
	// freshness remembers the versions our status writes superseded.
	freshness freshness
	// configChecks remembers the ConfigMap versions whose data was read.
	configChecks configChecks
	// sqlPlans remembers what the SQL Gateway said of each new script.
	sqlPlans sqlPlanMemory
	// creations remembers the children created that the cache does not
	// show yet.
	creations creations
}

// scope is what one reconcile works on, filled phase by phase: observe
// reads the cluster's world once into obs; decide turns it into the step
// and the status to record, with no I/O; record writes that intent before
// the side effects that need it; act applies the children and sends the
// step's Flink request; the deferred status write closes the reconcile.
type scope struct {
	fc  *v1.FlinkCluster
	now time.Time
	// policy is the cluster's upgrade and healing policy, resolved once:
	// the lifecycle and the autopilot read it; scaler is spec.autoscaler
	// resolved, nil without it.
	policy policy.Policy
	scaler *autopilot.Policy
	obs    observed
	// step is the lifecycle's decision (zero for a cluster without a job),
	// auto the autopilot's that the step carried.
	step lifecycle.Step
	auto autopilotResult
	// next is the status the step records; nil when there is no step.
	next *v1.FlinkClusterStatus
	// desired is built from desiredFor, the spec the children should run.
	desired    *resources.Desired
	desiredFor *v1.FlinkClusterSpec
	// hold keeps the running pods' rendering while the job's state is
	// being saved: only missing children are created.
	hold bool
	// created are the children act created, for one event.
	created []string
	// configDrift is how the live ConfigMap's data differs from the
	// rendering, when its spec hash is current.
	configDrift configDrift
	// haReviewAfter is when the HA account's rights are reviewed again.
	haReviewAfter time.Duration
	// unrecorded: record's write failed; nothing more is written or
	// done, and the next reconcile decides afresh.
	unrecorded bool
	// statusWait: the deferred status write waited (comingUp), or wrote a
	// status that makes the missing budget due (budgetDue), or a
	// JobManager pod's progress deadline falls due (jmStuckIn); the
	// reconcile is looked at again this soon.
	statusWait time.Duration
	// submitTo is the JobManager pod a submission goes to, read around the
	// cache before the submission is recorded.
	submitTo *corev1.Pod
	// held: the JobManager's REST API is still starting (restStarting),
	// or a submission found no JobManager pod ready to take it; nothing
	// was decided, done or written.
	held bool
	// creationWait: a child created earlier is not in the cache yet
	// (creations), or a creation was deferred (deferRetry); the reconcile
	// looks again by then at the latest.
	creationWait time.Duration
	// budgetMissing: the TaskManagers' budget is not there and was not
	// due (budgetDue).
	budgetMissing bool
}

// restStarting probes the REST API of a JobManager that turned ready
// moments ago, before anything reads Flink, and says whether it is still
// starting (health.ReasonRestStarting).
func (r *Reconciler) restStarting(ctx context.Context, s *scope) bool {
	if r.Prober == nil || !s.obs.jobManagerReady() || !r.Prober.RestStarting(s.fc) {
		return false
	}
	v := r.Prober.ProbeOnce(ctx, s.fc)
	return restStarting(&v)
}

// RestStartRetry is how soon a reconcile held by a starting REST API
// (restStarting) looks again; the health poller bounds the start
// (health.RestStartGrace), after which an unreachable API is a failure.
const RestStartRetry = 250 * time.Millisecond

// restStarting: the health verdict says the JobManager turned ready moments
// ago and its REST API does not answer yet.
func restStarting(v *health.Verdict) bool {
	return v != nil && v.Levels[health.LevelRest].Reason == health.ReasonRestStarting
}

// reconcile moves one FlinkCluster towards its spec (Reconcile): observe,
// decide, record, act, then one deferred status write.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	ctx, owned := r.shardContext(ctx, req.NamespacedName)
	if ctx == nil {
		return ctrl.Result{}, nil
	}
	defer owned()
	logger := log.FromContext(ctx)
	if r.Pacer != nil {
		start := time.Now()
		defer func() { r.Pacer.Observe(time.Since(start)) }()
	}

	fc := &v1.FlinkCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.NamespacedName)
			r.haReviews.forget(req.NamespacedName)
			r.forgetAutopilot(req.NamespacedName)
			r.freshness.forget(req.NamespacedName)
			r.configChecks.forget(req.NamespacedName)
			r.creations.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get FlinkCluster %s: %w", req.NamespacedName, err)
	}

	// The cache may not yet hold this reconcile's predecessor's status
	// write; deciding from it would repeat what that reconcile did (a
	// deletion's too: its settled final savepoint is in status).
	if r.freshness.stale(fc) {
		logger.V(1).Info("Cache behind our last status write; waiting for it", "flinkcluster", klog.KObj(fc), "resourceVersion", fc.ResourceVersion)
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	// Deletion runs the finalizer's cleanup.
	if !fc.DeletionTimestamp.IsZero() {
		requeue, err := r.finalize(ctx, fc)
		return ctrl.Result{RequeueAfter: requeue}, err
	}
	if err := r.ensureFinalizer(ctx, fc); err != nil {
		return ctrl.Result{}, err
	}

	s := &scope{fc: fc, now: time.Now(), policy: policy.For(&fc.Spec), scaler: autoscalerOf(&fc.Spec, fc.Status.Autoscaler)}
	defer func() {
		err = errors.Join(err, r.closeReconcile(ctx, s))
		res.RequeueAfter = soonest(res.RequeueAfter, s.statusWait)
	}()
	r.observe(ctx, s)
	switch {
	case s.obs.storage.blocked():
		// State that must outlive a pod but would be on its disk: deploy
		// nothing that would lose it (children already running stay as
		// they are), and say why.
		if meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionSharedStorage) == nil ||
			meta.IsStatusConditionTrue(fc.Status.Conditions, v1.ConditionSharedStorage) {
			v := s.obs.storage.blockedVerdict()
			r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, v.reason, "Deploy", "%s", v.message)
		}
		return ctrl.Result{}, nil
	case s.obs.statusErr != nil:
		// Fail closed: an upgrade decided from a status we cannot read
		// could skip its savepoint. Nothing is applied until it is fixed.
		return ctrl.Result{}, nil
	case s.held:
		// The JobManager turned ready moments ago and its REST API does
		// not answer yet: a job sent now would fail, a first deploy would
		// wait for Flink, and a status written now would change again as
		// soon as it answers. Nothing is decided, done or written; the
		// reconcile looks again shortly.
		return ctrl.Result{RequeueAfter: RestStartRetry}, nil
	}
	if err := r.decide(s); err != nil {
		// Admission validates the spec; an object that still fails to
		// build bypassed it. Say so instead of retrying forever.
		r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, "InvalidSpec", "Build", "Cannot build the cluster: %v", err)
		s.obs.applyErr = err
		return ctrl.Result{}, nil
	}
	if s.step.Action.Kind == lifecycle.ActSubmit {
		// A submission is recorded only while the API server shows a
		// JobManager pod ready to take it (the cache may still show one
		// that is not, or no longer). A submission recorded and never
		// sent would read, once a JobManager is ready after it, as one a
		// restarted JobManager lost (lifecycle's neverGot), and not be
		// sent again. Nothing is decided, done or written; the reconcile
		// looks again shortly. act sends it to this pod.
		var err error
		if s.submitTo, err = r.jobManagerPod(ctx, fc); err != nil {
			log.FromContext(ctx).V(1).Info("Submission waits for a ready JobManager pod", "flinkcluster", klog.KObj(fc), "reason", err.Error())
			s.held = true
			return ctrl.Result{RequeueAfter: deferRetry}, nil
		}
	}
	if err := r.record(ctx, s); err != nil {
		s.unrecorded = true
		return ctrl.Result{}, err
	}
	r.act(ctx, s)
	if namespaceTerminating(s.obs.applyErr) {
		// Its namespace is going, and the cluster with it: nothing can be
		// created there again, and retrying only loads the API server.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: soonest(soonest(s.step.RequeueAfter, s.haReviewAfter), s.creationWait)}, s.obs.applyErr
}

// namespaceTerminating: the API server refused a create because the
// namespace is being deleted (the NamespaceLifecycle admission plugin).
func namespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// observe reads, once, what the decisions depend on: the workloads from
// the cache, where state lives, the specs recorded in status and whether
// the deployed one is rolled out, Flink's REST API, the autopilot's
// samples and capacity, and the rights of the HA account. The health
// verdict is read in record, for the job the step records.
func (r *Reconciler) observe(ctx context.Context, s *scope) {
	fc := s.fc
	s.obs = r.observeWorkloads(ctx, fc, s.now)
	// The StatefulSet's own status never says its rollout is stuck: the
	// reconcile looks again when the deadline of its unready pod is due.
	s.statusWait = soonest(s.statusWait, s.obs.jmStuckIn)
	s.obs.storage = observeStorage(fc, r.Platform)
	if s.obs.storage.blocked() {
		return
	}
	if s.held = r.restStarting(ctx, s); s.held {
		return
	}
	var err error
	if s.obs.deployed, err = decodeSpec(fc.Status.DeployedSpec, "status.deployedSpec"); err != nil {
		s.obs.statusErr = err
		return
	}
	deployed := s.obs.deployed
	// A session cluster has no job of the operator's to protect. A
	// removed spec.job goes through the lifecycle, which stops its job
	// with a savepoint before the pods roll.
	s.obs.job = fc.Spec.Job != nil || deployed != nil && deployed.Job != nil || fc.Status.Upgrade != nil
	if s.obs.job {
		if s.obs.stable, err = decodeSpec(fc.Status.LastStableSpec, "status.lastStableSpec"); err != nil {
			s.obs.statusErr = err
			return
		}
		if deployed != nil {
			if s.desired, err = resources.Build(withSpec(fc, deployed), r.Platform); err == nil {
				s.desiredFor = deployed
				s.obs.rolledOut = rolledOutTo(s.desired, s.obs)
				s.obs.drift = renderingDrift(s.desired, s.obs)
				s.obs.retention = s.desired.Config.Settings[flink.LastStateRetentionKey]
			}
		}
		s.obs.flink = r.observeFlink(ctx, fc, s.obs.jobManagerReady())
		if job := fc.Status.Job; s.obs.flink.Reachable && !s.obs.flink.JobFound && job != nil && job.SubmittedAt != nil && job.State == "" {
			// A job Flink never showed and does not know: whether the
			// JobManager that answered is older than the submission
			// decides a resend (lifecycle's neverGot). Read around the
			// cache, which may still show a pod the answer outlived.
			s.obs.jmSince = r.jobManagerSince(ctx, fc)
		}
		s.obs.sqlSpec, s.obs.sqlPlanned = r.sqlGate(ctx, fc, &fc.Spec, deployed)
		s.obs.autopilot = r.observeAutopilot(ctx, fc, s.policy.Healing, s.scaler, s.obs.flink, s.now)
	}
	s.obs.haPermissions, s.haReviewAfter = r.checkHAPermissions(ctx, fc)
}

// decide makes the reconcile's decisions from the observation alone: the
// autopilot's, the lifecycle's step, the step's conditions and the status
// it records, and the children to apply. Its error is a spec that does not
// build.
func (r *Reconciler) decide(s *scope) error {
	fc := s.fc
	deploy := &fc.Spec
	if s.obs.job {
		// The autopilot proposes; the lifecycle rolls its rescale out,
		// holds or settles it, and the autopilot's status is written with
		// the step.
		s.auto = decideAutopilot(fc, s.policy, s.scaler, s.obs.autopilot, s.obs.flink, s.now)
		spec, auto := s.obs.sqlSpec, proposal(s.scaler, s.auto.status)
		rolledOut := s.obs.rolledOut
		if s.obs.deployed == nil {
			// A first deploy: its pods may be ready before any status
			// was written, and its job then goes in the same step
			// (lifecycle's first), when they run exactly what it deploys.
			first := lifecycle.Target(spec, auto)
			if d, err := resources.Build(withSpec(fc, first), r.Platform); err == nil {
				s.desired, s.desiredFor = d, first
				rolledOut = rolledOutTo(d, s.obs)
			}
		}
		step := lifecycle.Decide(lifecycle.Input{
			Generation:      fc.Generation,
			UID:             string(fc.UID),
			Spec:            spec,
			Status:          &fc.Status,
			Deployed:        s.obs.deployed,
			LastStable:      s.obs.stable,
			RolledOut:       rolledOut,
			Drift:           s.obs.drift,
			Flink:           s.obs.flink,
			Now:             s.now,
			Policy:          s.policy,
			Autopilot:       auto,
			InPlace:         inPlace(spec),
			Heal:            s.auto.heal,
			Retention:       s.obs.retention,
			JobManagerSince: s.obs.jmSince,
			EndedUnseen:     fc.Status.Job != nil && fc.Status.Job.State == "" && jobEndedUnseen(fc.Status.Conditions, fc.Status.Job.ID),
		})
		settleAutopilot(&s.auto, &step, s.obs.flink, s.now)
		setStepConditions(&step.Status, fc.Generation, s.now, step.Facts, s.auto.verdicts)
		setSQLScriptCondition(&step.Status, fc.Generation, s.now, s.obs.sqlPlanned)
		step.RequeueAfter = soonest(step.RequeueAfter, s.auto.requeue)
		next := step.Status
		next.DeployedSpec = keepEncoding(fc.Status.DeployedSpec, step.Deploy)
		if step.MarkStable {
			next.LastStableSpec = keepEncoding(fc.Status.LastStableSpec, step.Deploy)
		}
		s.step, s.next, deploy = step, &next, step.Deploy
		// While state is saved the pods keep what they run, even where
		// this operator would render them differently (Input.Drift).
		s.hold = step.Hold || next.Upgrade != nil && next.Upgrade.Phase == v1.UpgradeSavingState
	}
	// The children's desired state (pure, no client), unless observe
	// already built it for the same spec.
	if s.desired == nil || !equality.Semantic.DeepEqual(deploy, s.desiredFor) {
		d, err := resources.Build(withSpec(fc, deploy), r.Platform)
		if err != nil {
			return err
		}
		s.desired, s.desiredFor = d, deploy
	}
	s.obs.configHash = s.desired.Config.Hash
	return nil
}

// record writes the step's intent before the side effects that need it: a
// step that sends Flink a request (naming its trigger or job ID) or rolls
// the children to another spec is written first, so a restart between the
// two repeats the same step instead of starting another. Any other rides
// on the deferred write: one write, not two. The first deploy rides too: no
// job runs before it is recorded, so a restart only deploys it again. The
// health verdict is read here: it judges the job the step records.
func (r *Reconciler) record(ctx context.Context, s *scope) error {
	fc := s.fc
	s.obs.health = r.healthVerdict(ctx, fc, s.base(), s.obs)
	if s.next == nil {
		return nil
	}
	// fc.Status is still the status read: its upgrade times the one the step ends.
	r.Metrics.count(fc.Status.Upgrade, s.step.Transitions, s.now)
	newSpec := fc.Status.DeployedSpec != nil && s.next.DeployedSpec != fc.Status.DeployedSpec
	if s.step.Action.Kind == lifecycle.ActNone && !newSpec {
		return nil
	}
	if err := r.writeStatus(ctx, s, false); err != nil {
		return fmt.Errorf("record lifecycle step of %s: %w", klog.KObj(fc), err)
	}
	return nil
}

// act performs the step's side effects, whose intent record wrote: the
// children are applied, then the step's Flink request is sent.
func (r *Reconciler) act(ctx context.Context, s *scope) {
	fc := s.fc
	switch s.obs.applyErr = r.applyChildren(ctx, s); {
	case namespaceTerminating(s.obs.applyErr):
		// No event either: none can be created in the namespace.
		log.FromContext(ctx).V(1).Info("Children not applied: the namespace is being deleted", "flinkcluster", klog.KObj(fc))
	case s.obs.applyErr != nil:
		log.FromContext(ctx).Error(s.obs.applyErr, "Apply failed", "flinkcluster", klog.KObj(fc))
		r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, "ApplyFailed", "Apply", "%v", s.obs.applyErr)
	}
	if len(s.created) > 0 && observedBefore(fc) {
		// A first creation is what Progressing=True (Creating) says; a child
		// created again went missing, which the user should hear about (the
		// budget apart, which is first created after the first status).
		r.Recorder.Eventf(fc, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s", strings.Join(s.created, ", "))
	}
	if s.next == nil {
		return
	}
	err := r.request(ctx, fc, s.next.Job, s.step.Deploy, s.step.Action, s.submitTo)
	if refused := (*JarRefusedError)(nil); errors.As(err, &refused) {
		// Said once, in the deferred status write (JobSubmitted=False,
		// JarRefused) and an event; the jar is not fetched again for this
		// generation.
		log.FromContext(ctx).Info("Job jar refused", "flinkcluster", klog.KObj(fc), "reason", refused.Reason)
		r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, v1.ReasonJarRefused, "Submit", "%v", refused)
		setJobSubmittedCondition(s.next, fc.Generation, s.now, v1.ReasonJarRefused, refused)
		return
	}
	if ended := (*JobEndedUnseenError)(nil); errors.As(err, &ended) {
		// Recorded for the lifecycle, which holds the job with the reason
		// (NewestStateUnknown) from the next reconcile, the one this status
		// write wakes.
		log.FromContext(ctx).Info("Job ended unseen", "flinkcluster", klog.KObj(fc), "job", ended.JobID)
		r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, v1.ReasonJobEndedUnseen, "Submit", "%v", ended)
		setJobSubmittedCondition(s.next, fc.Generation, s.now, v1.ReasonJobEndedUnseen, ended)
		return
	}
	if err != nil {
		r.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, "FlinkRequestFailed", "Lifecycle", "%v", err)
		// The step is recorded; the next reconcile repeats it.
		log.FromContext(ctx).Error(err, "Flink request failed", "flinkcluster", klog.KObj(fc))
		s.step.RequeueAfter = soonest(s.step.RequeueAfter, lifecycle.Poll)
	}
}

// closeReconcile is the reconcile's deferred status write; then the events
// of the step and the autopilot, once their status is written.
func (r *Reconciler) closeReconcile(ctx context.Context, s *scope) error {
	if s.unrecorded || s.held {
		return nil
	}
	if err := r.writeStatus(ctx, s, true); err != nil {
		return err
	}
	if s.budgetMissing && budgetDue(s.fc, s.obs.health) {
		// The status just written makes it due, and wakes nothing itself.
		s.statusWait = soonest(s.statusWait, budgetFollowUp)
	}
	if s.next != nil {
		r.recordEvents(s.fc, s.step.Events)
		r.recordAutopilot(ctx, s.fc, s.auto, s.step)
	}
	return nil
}

// base is the status this reconcile starts the written one from: the
// step's, or the one read.
func (s *scope) base() *v1.FlinkClusterStatus {
	if s.next != nil {
		return s.next
	}
	return &s.fc.Status
}

// recordEvents emits a step's events.
func (r *Reconciler) recordEvents(fc *v1.FlinkCluster, events []lifecycle.Event) {
	for _, e := range events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(fc, nil, typ, e.Reason, "Lifecycle", "%s", e.Message)
	}
}

// healthVerdict is the poller's latest verdict, probed at once when it lags
// behind what this reconcile saw: a JobManager that turned ready, a job
// just recorded for submission, or a job the lifecycle just saw RUNNING
// (after a submission or an upgrade).
func (r *Reconciler) healthVerdict(ctx context.Context, fc *v1.FlinkCluster, st *v1.FlinkClusterStatus, obs observed) *health.Verdict {
	if r.Health == nil {
		return nil
	}
	v, ok := r.Health.GetFor(client.ObjectKeyFromObject(fc), fc.UID)
	jmReady := obs.jobManagerReady()
	jobRunning := st.Job != nil && st.Job.State == "RUNNING" && st.Upgrade == nil
	// A verdict from before this reconcile recorded the job's submission
	// would be written now and corrected a poll later: two writes.
	justSubmitted := st.Job != nil && st.Job.ID != "" && v.Levels[health.LevelJobs].Reason == health.ReasonJobNotSubmitted
	stale := !ok || v.Levels[health.LevelJobManager].Status != metav1.ConditionTrue || restStarting(&v) ||
		jobRunning && v.Levels[health.LevelJobs].Status != metav1.ConditionTrue || justSubmitted
	if r.Prober != nil && jmReady && stale {
		probed := fc.DeepCopy()
		probed.Status = *st
		v, ok = r.Prober.ProbeOnce(ctx, probed), true
	}
	if !ok {
		return nil
	}
	return &v
}

// child pairs a desired apply configuration with the cached object it
// becomes, for the diff.
type child struct {
	kind    string
	name    string
	hash    string
	cached  client.Object
	desired runtime.ApplyConfiguration
	// drifted reports a field others may change that the hash cannot see.
	drifted func(cached client.Object) bool
	// late: created only once due (budgetDue), after the cluster's first
	// status, so its creation is no news.
	late bool
	// replace: the cached object cannot become the desired one in place;
	// a change is made by deleting it (actionReplace), and its successor
	// is created once it is gone.
	replace bool
	// deferCreate: not to be created now (jobManagerChild); looked at
	// again after deferRetry.
	deferCreate bool
}

// deferRetry is how soon a reconcile that deferred a child's creation
// looks again: what it waits for (an earlier JobManager's pods going)
// wakes nothing.
const deferRetry = time.Second

// jobManagerChild is the JobManager's child: its StatefulSet, or an older
// cluster's Deployment while one exists (internal/workload). Such a
// Deployment is kept, as it was built (resources.LegacyJobManager), until
// its pod template changes. Then, where the Deployment's Recreate would
// have replaced its pods, under the same lifecycle gate (hold) and after
// the ConfigMap, it is deleted instead, in the foreground: it stays, and
// no StatefulSet is created, until its pods are gone. One being deleted
// is waited for.
//
// The StatefulSet is created only while no JobManager pod is left (a
// Deployment gone is not proof: deleted in the background or orphaning,
// its pods outlive it) and the JobManager could be read: never two
// JobManagers behind one Service.
func jobManagerChild(s *scope) child {
	want := s.desired.JobManager
	if dep := s.obs.jobManager.Deployment; dep != nil {
		legacy := s.desired.LegacyJobManager()
		c := child{kind: "Deployment", name: *legacy.Name, hash: specHash(legacy.Annotations), cached: dep, desired: legacy,
			drifted: func(o client.Object) bool {
				return replicasDiffer(o.(*appsv1.Deployment).Spec.Replicas, *legacy.Spec.Replicas)
			},
			replace: templateHash(dep.Annotations) != templateHash(legacy.Annotations)}
		if dep.DeletionTimestamp != nil {
			c.hash, c.drifted, c.replace = specHash(dep.Annotations), nil, false
		}
		return c
	}
	sts := &appsv1.StatefulSet{}
	if s.obs.jobManager.StatefulSet != nil {
		sts = s.obs.jobManager.StatefulSet
	}
	return child{kind: "StatefulSet", name: *want.Name, hash: specHash(want.Annotations), cached: sts, desired: want,
		drifted: func(o client.Object) bool {
			return replicasDiffer(o.(*appsv1.StatefulSet).Spec.Replicas, *want.Spec.Replicas) ||
				templateHash(o.GetAnnotations()) != templateHash(want.Annotations)
		},
		deferCreate: s.obs.jmErr != nil || s.obs.jmPodsLeft}
}

// budgetDue says whether the TaskManagers' PodDisruptionBudget may be
// created: once something runs on the TaskManagers for it to protect.
//
// A job cluster runs its job: due once its status (as read, or as this
// reconcile wrote it) has said a TaskManager is ready, or the cluster
// Available. Its job is submitted after the status write that says
// Available, and the disruption controller writes a budget's status as
// its pods turn ready: created with them it was written 6.8 times a
// cluster (docs/performance-shape.md), created over ready pods about once.
//
// A session cluster runs what users send it, which only Flink knows: due
// once the health probe's GET /overview counted a job on it (v, the
// health verdict: RunsJobs). One that runs nothing has nothing for a
// budget to protect, and a budget costs the disruption controller at
// every event of every pod in its namespace (it matches each pod against
// every budget there: GetPodPodDisruptionBudgets), which at N = 1000
// was the largest share the operator's phase cost kube-controller-manager
// beyond the Spotify operator's.
//
// A budget that exists is kept applied whatever this says.
func budgetDue(fc *v1.FlinkCluster, v *health.Verdict) bool {
	if fc.Spec.Job == nil {
		return v != nil && v.RunsJobs
	}
	st := &fc.Status
	return st.TaskManager.ReadyReplicas > 0 || meta.IsStatusConditionTrue(st.Conditions, v1.ConditionAvailable)
}

// budgetFollowUp is how soon a reconcile whose status write made the
// missing budget due looks again to create it: its own status write wakes
// nothing (setup.go), and the next must find it in the cache.
const budgetFollowUp = staleRetry

func (r *Reconciler) applyChildren(ctx context.Context, s *scope) error {
	d := s.desired
	// The JobManager and TaskManagers were read once, for the lifecycle.
	jm := jobManagerChild(s)
	tm := &appsv1.StatefulSet{}
	if s.obs.taskManager != nil {
		tm = s.obs.taskManager
	}
	// The ConfigMap's data is not in the cache: its drift is read, and
	// kept for the repair and its event.
	var configErr error
	children := []child{
		{kind: "ConfigMap", name: *d.ConfigMap.Name, hash: specHash(d.ConfigMap.Annotations), cached: metadataOnly("v1", "ConfigMap"), desired: d.ConfigMap,
			drifted: func(o client.Object) bool {
				s.configDrift, configErr = r.readConfigDrift(ctx, client.ObjectKeyFromObject(s.fc), o, d.ConfigMap.Data)
				return s.configDrift.drifted()
			}},
		{kind: "Service", name: *d.JobManagerService.Name, hash: specHash(d.JobManagerService.Annotations), cached: metadataOnly("v1", "Service"), desired: d.JobManagerService},
		jm,
		{kind: "PodDisruptionBudget", name: *d.TaskManagerBudget.Name, hash: specHash(d.TaskManagerBudget.Annotations), cached: metadataOnly("policy/v1", "PodDisruptionBudget"), desired: d.TaskManagerBudget,
			late: true},
		{kind: "StatefulSet", name: *d.TaskManager.Name, hash: specHash(d.TaskManager.Annotations), cached: tm, desired: d.TaskManager,
			drifted: func(o client.Object) bool {
				return replicasDiffer(o.(*appsv1.StatefulSet).Spec.Replicas, *d.TaskManager.Spec.Replicas) ||
					templateHash(o.GetAnnotations()) != templateHash(d.TaskManager.Annotations)
			}},
	}
	children = append(children, r.haChildren(ctx, s)...)
	children = append(children, r.sqlChildren(s)...)
	// The children are independent objects: read them from the cache, then
	// apply the ones that differ in parallel, so a new cluster costs one
	// round trip of latency instead of five.
	key := client.ObjectKeyFromObject(s.fc)
	actions := make([]action, len(children))
	errs := make([]error, len(children))
	for i, c := range children {
		var err error
		if isZero(c.cached) {
			err = r.Client.Get(ctx, types.NamespacedName{Namespace: s.fc.Namespace, Name: c.name}, c.cached)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs[i] = fmt.Errorf("read %s %s: %w", c.kind, c.name, err)
			continue
		}
		if wait := r.creations.awaited(key, s.fc.UID, c.kind, c.name, err == nil, s.now); wait > 0 {
			// Created here moments ago, not in the cache yet: it holds
			// what was sent. Its watch event wakes the cluster.
			s.creationWait = soonest(s.creationWait, wait)
			continue
		}
		if err != nil && c.late && !budgetDue(s.fc, s.obs.health) {
			s.budgetMissing = true
			continue
		}
		actions[i] = decide(err == nil, c.hash, c.cached, c.drifted)
		if c.replace && actions[i] != actionNone {
			actions[i] = actionReplace
		}
		if c.deferCreate && actions[i] == actionCreate {
			actions[i] = actionNone
			s.creationWait = soonest(s.creationWait, deferRetry)
		}
		if i == 0 && configErr != nil {
			errs[0] = configErr
		}
		if s.hold && actions[i] != actionCreate && rollsPods(c.kind) {
			actions[i] = actionNone
		}
	}
	apply := func(i int) {
		c := children[i]
		created, err := r.write(ctx, c, actions[i])
		if err != nil {
			errs[i] = fmt.Errorf("%s %s %s: %w", actions[i], c.kind, c.name, err)
			return
		}
		if created != "" {
			r.creations.created(key, s.fc.UID, c.kind, c.name, s.now)
		}
		if i == 0 && created != "" {
			// The ConfigMap just created holds the rendering: its data
			// need not be read back on the next reconcile, which, for
			// a new cluster, is the one that says it is Available.
			r.configChecks.remember(client.ObjectKeyFromObject(s.fc), created)
		}
		if i == 0 && actions[0] == actionRepair && len(s.configDrift.extra) > 0 {
			errs[0] = r.removeFiles(ctx, s.fc.Namespace, c.name, s.configDrift.extra)
		}
	}
	// A changed configuration goes first: the pods a new template rolls
	// must start on it. Applied beside them, a ConfigMap patch that failed
	// would leave pods on the old configuration under the new hash, never
	// rolled again. The workloads wait for the next reconcile instead.
	if actions[0] == actionUpdate {
		if apply(0); errs[0] != nil {
			for i, c := range children {
				if rollsPods(c.kind) && (actions[i] == actionUpdate || actions[i] == actionReplace) {
					actions[i] = actionNone
				}
			}
		}
	}
	var wg sync.WaitGroup
	for i := range children {
		if actions[i] == actionNone || errs[i] != nil || i == 0 && actions[0] == actionUpdate {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			apply(i)
		}()
	}
	wg.Wait()
	for i, c := range children {
		if actions[i] == actionNone || errs[i] != nil {
			continue
		}
		r.Metrics.Applies.WithLabelValues(c.kind, string(actions[i])).Inc()
		if actions[i] == actionCreate && !c.late {
			// A late child's creation is no news; one a user deleted is
			// created again without the event too (the two look alike).
			s.created = append(s.created, c.kind+" "+c.name)
		} else if actions[i] != actionCreate {
			r.recordChange(s, c, actions[i])
		}
	}
	if sts, ok := jm.cached.(*appsv1.StatefulSet); ok && !isZero(sts) {
		s.obs.jobManager = workload.JobManager{StatefulSet: sts}
	}
	if !isZero(tm) {
		s.obs.taskManager = tm
	}
	if err := s.obs.jmErr; err != nil {
		errs = append(errs, fmt.Errorf("read the JobManager %s: %w", jm.name, err))
	}
	return errors.Join(append(errs, r.pruneHAAccess(ctx, s))...)
}

// recordChange emits one event per kind of change, named for what the user did.
func (r *Reconciler) recordChange(s *scope, c child, a action) {
	switch {
	case a == actionReplace:
		r.Recorder.Eventf(s.fc, nil, corev1.EventTypeNormal, "RollingUpdate", "Replace",
			"Replacing the JobManager Deployment %s: its pod template changes, and the JobManager is now a StatefulSet, created once the Deployment's pods are gone", c.name)
	case c.desired == runtime.ApplyConfiguration(s.desired.TaskManager):
		old := c.cached.(*appsv1.StatefulSet)
		want := s.desired.TaskManager
		if old.Spec.Template.Annotations[resources.AnnotationConfigHash] != s.desired.Config.Hash ||
			old.Spec.Template.Spec.Containers[0].Image != *want.Spec.Template.Spec.Containers[0].Image {
			r.Recorder.Eventf(s.fc, nil, corev1.EventTypeNormal, "RollingUpdate", "Update", "Rolling the TaskManagers to configuration %s", s.desired.Config.Hash)
		}
		if old.Spec.Replicas != nil && *old.Spec.Replicas != *want.Spec.Replicas {
			r.Recorder.Eventf(s.fc, nil, corev1.EventTypeNormal, "Scaled", "Scale", "Scaled TaskManagers from %d to %d", *old.Spec.Replicas, *want.Spec.Replicas)
		}
	case c.kind == "ConfigMap":
		if a == actionRepair {
			r.Recorder.Eventf(s.fc, nil, corev1.EventTypeWarning, "ConfigRepaired", "Repair",
				"ConfigMap %s was changed outside the operator (%s); restored the rendered Flink configuration %s", c.name, s.configDrift, s.desired.Config.Hash)
			return
		}
		r.Recorder.Eventf(s.fc, nil, corev1.EventTypeNormal, "ConfigUpdated", "Update", "Rendered Flink configuration %s", s.desired.Config.Hash)
	}
}

func isZero(o client.Object) bool { return o.GetUID() == "" }

// metadataOnly is a child the diff reads only the metadata of (its spec
// hash annotation): the cache holds these kinds as metadata, so a
// ConfigMap's rendered Flink configuration is not held in memory twice.
func metadataOnly(apiVersion, kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}}
}

// NeedsFinalizer: the cluster leaves something behind that owner
// references do not cover: a job whose state must be saved before the
// pods go (deletion.go), Flink's Kubernetes HA ConfigMaps, or the
// TaskManagers' volume claims, which the StatefulSet keeps on deletion
// (resources.TaskManagers retains them so a returning TaskManager finds
// its state).
func NeedsFinalizer(fc *v1.FlinkCluster) bool {
	return fc.Spec.TaskManager.Storage != nil || fc.Spec.Job != nil || resources.KubernetesHA(fc)
}

// observedBefore: the operator has written this cluster's status, so its
// children were created once already.
func observedBefore(fc *v1.FlinkCluster) bool { return fc.Status.ObservedGeneration > 0 }

// observeWorkloads reads the JobManager and TaskManagers from the cache,
// once per reconcile.
func (r *Reconciler) observeWorkloads(ctx context.Context, fc *v1.FlinkCluster, now time.Time) observed {
	var obs observed
	obs.jobManager, obs.jmErr = workload.Read(ctx, r.Client, fc)
	tm := &appsv1.StatefulSet{}
	if r.Client.Get(ctx, types.NamespacedName{Namespace: fc.Namespace, Name: resources.TaskManagerName(fc)}, tm) == nil {
		obs.taskManager = tm
	}
	// The pods say a cluster is ready before the workloads' status does.
	pods := r.Pods.Pods(fc.Namespace, fc.Name)
	obs.countReady(pods)
	obs.jmPodsLeft = !obs.jobManager.Exists() && readiness.Any(pods, resources.ComponentJobManager)
	obs.jmStuck, obs.jmStuckIn = readiness.JobManagerStuck(obs.jobManager, pods, now, readiness.DefaultProgressDeadline)
	obs.configHash = fc.Status.ConfigHash
	return obs
}

// countReady counts the workloads' ready pods (readiness), once: every
// verdict on readiness reads these.
func (o *observed) countReady(pods []readiness.Pod) {
	o.jmPods, o.tmPods = readiness.JobManagers(o.jobManager, pods), readiness.TaskManagers(o.taskManager, pods)
}

// jobManagerReady: a JobManager pod is Ready. The one definition of it.
func (o observed) jobManagerReady() bool { return o.jmPods.Ready >= 1 }

func specHash(annotations map[string]string) string { return annotations[resources.AnnotationSpecHash] }

// templateHash is the pod template hash recorded in annotations.
func templateHash(annotations map[string]string) string {
	return annotations[resources.AnnotationTemplateHash]
}

func replicasDiffer(actual *int32, want int32) bool { return actual == nil || *actual != want }

// writeStatus writes the status computed from the scope when, and only
// when, it differs from the one last read or written; the reconcile's
// deferred write (closing) also waits when it would only say Creating.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, closing bool) error {
	fc := s.fc
	st := computeStatus(fc, s.base(), s.obs, metav1.NewTime(s.now.Truncate(time.Second)))
	r.Metrics.observe(fc, &st)
	if equality.Semantic.DeepEqual(st, fc.Status) || lifecycle.FlinkProgressOnly(&fc.Status, &st, s.policy.CheckpointsRetained) {
		return nil
	}
	if wait := comingUp(s, &st); closing && wait > 0 {
		s.statusWait = soonest(s.statusWait, wait)
		return nil
	}
	if err := r.applyStatus(ctx, fc, st); err != nil {
		return fmt.Errorf("write status of %s: %w", klog.KObj(fc), err)
	}
	r.Metrics.StatusWrites.Inc()
	return nil
}

// CreatingWait is how long a first status that would say only that the
// cluster is coming up waits (comingUp): pods that start at once (images
// cached, a simulated node) are ready by then, and a slower start is said
// as WaitingForPods a second or two late.
const CreatingWait = time.Second

// comingUp says how much longer the cluster's first status waits: it would
// say only that the cluster is coming up (Progressing: its children being
// created, observed, scaled from nothing, their pods starting; not
// Available, no failure, no step of the lifecycle) and its workloads are
// younger than CreatingWait. It is not written: the reconcile that
// follows, when the wait is over or at once when the pods turn ready,
// writes what it finds: pods still pending, or
// the cluster Available (with its job's ID, before the job is submitted).
// Nothing durable waits: nothing runs yet (the first deploy is decided
// again, from the spec as it is then), and the HA identity is derived the
// same way until the first write records it. The workloads' age is read
// from their creation time, which the API server keeps in whole seconds:
// a second is added, so the wait is never shorter than CreatingWait.
func comingUp(s *scope, st *v1.FlinkClusterStatus) time.Duration {
	if s.fc.Status.ObservedGeneration != 0 || s.step.Action.Kind != lifecycle.ActNone ||
		meta.IsStatusConditionTrue(st.Conditions, v1.ConditionAvailable) {
		return 0
	}
	if !meta.IsStatusConditionTrue(st.Conditions, v1.ConditionProgressing) || !meta.IsStatusConditionFalse(st.Conditions, v1.ConditionDegraded) {
		return 0
	}
	if len(s.created) > 0 {
		return CreatingWait
	}
	jm, tm := s.obs.jobManager.Object(), s.obs.taskManager
	if jm == nil || tm == nil {
		return 0
	}
	youngest := jm.GetCreationTimestamp().Time
	if tm.CreationTimestamp.After(youngest) {
		youngest = tm.CreationTimestamp.Time
	}
	// Bounded: a clock behind the API server's would wait longer.
	return min(max(0, youngest.Add(time.Second+CreatingWait).Sub(s.now)), time.Second+CreatingWait)
}

// ensureFinalizer adds the finalizer, when the cluster has something for it
// to clean up, with an optimistic-lock patch, so a concurrent writer's
// finalizers are never dropped. Once added it stays until deletion: claims
// outlive a spec that no longer asks for them.
func (r *Reconciler) ensureFinalizer(ctx context.Context, fc *v1.FlinkCluster) error {
	if controllerutil.ContainsFinalizer(fc, Finalizer) || !NeedsFinalizer(fc) {
		return nil
	}
	base := fc.DeepCopy()
	controllerutil.AddFinalizer(fc, Finalizer)
	if err := r.Client.Patch(ctx, fc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("add finalizer to %s: %w", klog.KObj(fc), err)
	}
	return nil
}

// finalize stops the job with a savepoint (deletion.go), deletes Flink's
// HA ConfigMaps and the TaskManagers' claims, which owner references do
// not cover, then releases the object. Every step treats not-found as
// done, so a repeated or interrupted cleanup never leaves the object
// stuck; requeue is set while a step waits.
func (r *Reconciler) finalize(ctx context.Context, fc *v1.FlinkCluster) (time.Duration, error) {
	r.Metrics.forget(client.ObjectKeyFromObject(fc))
	if !controllerutil.ContainsFinalizer(fc, Finalizer) {
		return 0, nil
	}
	if done, requeue, err := r.finalSavepoint(ctx, fc); err != nil || !done {
		return requeue, err
	}
	if done, err := r.deleteHAConfigMaps(ctx, fc); err != nil || !done {
		return lifecycle.Poll, err
	}
	sel := client.MatchingLabels(resources.SelectorLabels(fc.Name, resources.ComponentTaskManager))
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, pvcs, client.InNamespace(fc.Namespace), sel); err != nil {
		return 0, fmt.Errorf("list claims of %s: %w", klog.KObj(fc), err)
	}
	if len(pvcs.Items) > 0 {
		err := r.Client.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(fc.Namespace), sel)
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete claims of %s: %w", klog.KObj(fc), err)
		}
		r.Recorder.Eventf(fc, nil, corev1.EventTypeNormal, "Cleanup", "Delete", "Deleted %d TaskManager volume claims", len(pvcs.Items))
	}
	base := fc.DeepCopy()
	controllerutil.RemoveFinalizer(fc, Finalizer)
	if err := r.Client.Patch(ctx, fc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("remove finalizer from %s: %w", klog.KObj(fc), err)
	}
	return 0, nil
}

package health

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/teardown"
	"github.com/datapilot/datapilot/internal/testenv"
)

// countingRecorder counts the Events handed to the real recorder, by
// cluster and reason. The count is exact and synchronous; what reaches the
// API server is checked separately.
type countingRecorder struct {
	recorder.EventRecorder
	mu sync.Mutex
	n  map[string]int
}

func (c *countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if o, ok := regarding.(client.Object); ok {
		c.mu.Lock()
		c.n[o.GetNamespace()+"/"+o.GetName()+"/"+eventtype+"/"+reason]++
		c.mu.Unlock()
	}
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (c *countingRecorder) count(fc *v1.FlinkCluster, reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[fc.Namespace+"/"+fc.Name+"/"+corev1.EventTypeWarning+"/"+reason]
}

func (c *countingRecorder) total(fc *v1.FlinkCluster) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.n {
		if len(k) > len(fc.Namespace+"/"+fc.Name+"/") && k[:len(fc.Namespace+"/"+fc.Name+"/")] == fc.Namespace+"/"+fc.Name+"/" {
			n += v
		}
	}
	return n
}

// testClock drives the simulator's time: jobs restart on it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a real API server, the in-process Flink REST simulator and a
// Poller wired to both.
type harness struct {
	t       *testing.T
	ctx     context.Context
	k8s     client.Client
	scheme  *runtime.Scheme
	sim     *flinksim.Simulator
	clock   *testClock
	rec     *countingRecorder
	metrics *Metrics
	notify  chan event.GenericEvent
	poller  *Poller
	env     *envtest.Environment
	// jobManagers counts each cluster's JobManager pods; down is true
	// while its JobManager is not ready. One that comes back is a new pod,
	// as the Deployment replaces a failed one.
	jobManagers map[string]int
	down        map[string]bool
}

func newHarness(t *testing.T) *harness {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, cfg := testenv.Start(t)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The events.k8s.io/v1 recorder, as the manager's GetEventRecorder builds it.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	// The concrete recorder also implements AnnotatedEventf; controller-runtime
	// asserts the same.
	real, ok := b.NewRecorder(scheme, "datapilot-health").(recorder.EventRecorder)
	if !ok {
		t.Fatal("the events.k8s.io/v1 recorder does not annotate")
	}
	rec := &countingRecorder{EventRecorder: real, n: map[string]int{}}

	clock := &testClock{now: time.Unix(1700000000, 0)}
	sim, err := flinksim.New(nil, flinksim.Options{ListenAddr: "127.0.0.1:0", Engine: flinksim.EngineOptions{Clock: clock.Now}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("simulator: %v", err)
		}
	})

	h := &harness{t: t, ctx: ctx, k8s: k8s, scheme: scheme, sim: sim, clock: clock, rec: rec, env: env,
		jobManagers: map[string]int{}, down: map[string]bool{},
		metrics: NewMetrics(prometheus.NewRegistry()), notify: make(chan event.GenericEvent, 16)}
	h.poller = &Poller{
		Reader:       k8s,
		Resolver:     flink.Resolver{Override: sim.BaseURLTemplate()},
		Tracker:      NewTracker(),
		Recorder:     rec,
		Notify:       h.notify,
		Metrics:      h.metrics,
		ProbeTimeout: 2 * time.Second,
		Teardown:     &teardown.Checker{Reader: k8s},
	}
	return h
}

// cluster creates a namespace, a FlinkCluster and its JobManager
// Deployment (owned by it and labelled as the reconciler labels it), and
// tells the simulator the JobManager is up when ready.
func (h *harness) cluster(ns, name string, ready bool, mutate func(*v1.FlinkCluster)) *v1.FlinkCluster {
	t := h.t
	t.Helper()
	if err := h.k8s.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.FlinkClusterSpec{
			Version:     "1.18.1",
			JobManager:  v1.JobManagerSpec{Replicas: 1},
			TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 2},
		},
	}
	if mutate != nil {
		mutate(fc)
	}
	if err := h.k8s.Create(h.ctx, fc); err != nil {
		t.Fatal(err)
	}
	sel := resources.SelectorLabels(name, resources.ComponentJobManager)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resources.JobManagerName(fc), Labels: resources.Labels(fc, resources.ComponentJobManager)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "jobmanager", Image: "flink:1.18.1"}}},
			},
		},
	}
	if err := controllerutil.SetControllerReference(fc, dep, h.scheme); err != nil {
		t.Fatal(err)
	}
	if err := h.k8s.Create(h.ctx, dep); err != nil {
		t.Fatal(err)
	}
	h.setReady(fc, ready)
	return fc
}

func (h *harness) key(fc *v1.FlinkCluster) flinksim.ClusterKey {
	return flinksim.ClusterKey{Namespace: fc.Namespace, Name: resources.JobManagerName(fc)}
}

// setReady plays the Deployment controller and the kubelet: it writes the
// JobManager Deployment's readyReplicas through the status subresource and
// tells the simulator. A JobManager that becomes ready after it was not is
// a new pod; the simulated cluster runs Kubernetes HA on s3, so that pod
// recovers the jobs, as a real replacement would.
func (h *harness) setReady(fc *v1.FlinkCluster, ready bool) {
	t := h.t
	t.Helper()
	var dep appsv1.Deployment
	if err := h.k8s.Get(h.ctx, client.ObjectKey{Namespace: fc.Namespace, Name: resources.JobManagerName(fc)}, &dep); err != nil {
		t.Fatal(err)
	}
	dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 1, 0, 0
	if ready {
		dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 1, 1
	}
	if err := h.k8s.Status().Update(h.ctx, &dep); err != nil {
		t.Fatal(err)
	}
	k := fc.Namespace + "/" + fc.Name
	if ready && h.down[k] {
		h.jobManagers[k]++
	}
	h.down[k] = !ready
	h.sim.Observe(h.key(fc), flinksim.SimpleCluster{
		Version:      fc.Spec.Version,
		JobManager:   fmt.Sprintf("jm-%s-%s-%d", fc.Namespace, fc.Name, h.jobManagers[k]),
		TaskManagers: []string{"tm-" + fc.Namespace + "-" + fc.Name},
		NotReady:     !ready,
		Settings: map[string]string{
			"taskmanager.numberOfTaskSlots": "2",
			"high-availability.type":        "kubernetes", "kubernetes.cluster-id": fc.Name, "kubernetes.namespace": fc.Namespace,
			"high-availability.storageDir": "s3://health/ha",
		},
		Env: map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-presto-" + fc.Spec.Version + ".jar"},
	}.Observation())
}

// jobStarts is how long a submitted or recovered job takes to run.
const jobStarts = flinksim.DefaultInitializationDelay + flinksim.DefaultDeployDelay

// submit runs a job in the simulator and records its ID in status.job, as
// the reconciler does.
func (h *harness) submit(fc *v1.FlinkCluster) string {
	t := h.t
	t.Helper()
	up, err := h.sim.UploadJar(h.key(fc), "job.jar")
	if err != nil {
		t.Fatal(err)
	}
	run, err := h.sim.RunJar(h.key(fc), path.Base(up.Filename), flink.JarRunRequest{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(jobStarts)
	h.refresh(fc)
	fc.Status.Job = &v1.JobStatus{ID: run.JobID, State: string(flink.JobRunning), SubmittedAt: ptr.To(metav1.Now())}
	if err := h.k8s.Status().Update(h.ctx, fc); err != nil {
		t.Fatal(err)
	}
	return run.JobID
}

func (h *harness) refresh(fc *v1.FlinkCluster) {
	h.t.Helper()
	if err := h.k8s.Get(h.ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
		h.t.Fatal(err)
	}
}

// probe runs one round for fc, read fresh from the API server, and reports
// whether it was sent on Notify.
func (h *harness) probe(fc *v1.FlinkCluster) (Verdict, bool) {
	h.t.Helper()
	h.refresh(fc)
	v := h.poller.ProbeOnce(h.ctx, fc)
	notified := false
	for {
		select {
		case ev := <-h.notify:
			if ev.Object.GetName() != fc.Name || ev.Object.GetNamespace() != fc.Namespace {
				h.t.Fatalf("notified %s/%s while probing %s/%s", ev.Object.GetNamespace(), ev.Object.GetName(), fc.Namespace, fc.Name)
			}
			if notified {
				h.t.Fatalf("notified twice in one round")
			}
			notified = true
		default:
			return v, notified
		}
	}
}

// expectForgotten runs a round for fc, which must leave no verdict, wake
// no reconcile, count no probe and record no Event.
func (h *harness) expectForgotten(fc *v1.FlinkCluster, what string) {
	t := h.t
	t.Helper()
	before, events := h.probes(LevelJobManager), h.rec.total(fc)
	if v, notified := h.probe(fc); notified || v.Levels != nil {
		t.Errorf("%s: notified %v, verdict %+v", what, notified, v)
	}
	if _, ok := h.poller.Tracker.Get(client.ObjectKeyFromObject(fc)); ok {
		t.Errorf("verdict kept for %s", what)
	}
	if h.probes(LevelJobManager) != before {
		t.Errorf("a probe of %s was counted", what)
	}
	if n := h.rec.total(fc) - events; n != 0 {
		t.Errorf("%d Events recorded for %s", n, what)
	}
}

// warnings lists the Warning Events about fc with the reason, from the
// API server.
func (h *harness) warnings(fc *v1.FlinkCluster, reason string) []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.k8s.List(h.ctx, &list, client.InNamespace(fc.Namespace)); err != nil {
		h.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "FlinkCluster" && e.Regarding.Name == fc.Name && e.Regarding.UID == fc.UID &&
			e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// eventSeriesCount is how many occurrences the API server shows: client-go's
// events.k8s.io/v1 broadcaster writes the first occurrence as an Event and
// folds repeats into its series (count 2 is written at once, later counts
// when the series ends or is refreshed).
func eventSeriesCount(e eventsv1.Event) int {
	if e.Series == nil {
		return 1
	}
	return int(e.Series.Count)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func (h *harness) failures(l Level) float64 {
	return counterValue(h.t, h.metrics.Failures.WithLabelValues(string(l)))
}

func (h *harness) probes(l Level) float64 {
	return counterValue(h.t, h.metrics.Probes.WithLabelValues(string(l)))
}

func expectLevels(t *testing.T, round string, v Verdict, want ...metav1.ConditionStatus) {
	t.Helper()
	for i, l := range Levels {
		if got := v.Levels[l].Status; got != want[i] {
			t.Errorf("%s: %s = %s (%s: %s), want %s", round, l, got, v.Levels[l].Reason, v.Levels[l].Message, want[i])
		}
	}
}

// TestPollerAgainstAPIServer drives rounds with ProbeOnce against a real
// kube-apiserver (envtest) and the Flink REST simulator with injected faults.
func TestPollerAgainstAPIServer(t *testing.T) {
	h := newHarness(t)
	withJob := func(fc *v1.FlinkCluster) {
		fc.Spec.Job = &v1.JobSpec{JarURI: "https://example.com/job.jar"}
		fc.Spec.Checkpointing = &v1.CheckpointingSpec{Interval: "10s"}
	}

	t.Run("a REST API not answering as its JobManager turns ready is starting", func(t *testing.T) {
		h.t = t
		fc := h.cluster("rest-start", "demo", true, nil)
		failures := h.failures(LevelRest)
		h.sim.InjectUnavailable(h.key(fc), 1)
		v, _ := h.probe(fc)
		if r := v.Levels[LevelRest]; r.Status != metav1.ConditionUnknown || r.Reason != ReasonRestStarting || v.Degraded {
			t.Errorf("first round: Rest = %+v, degraded %v; want Unknown, RestStarting", r, v.Degraded)
		}
		if n := h.rec.total(fc); n != 0 || h.failures(LevelRest) != failures {
			t.Errorf("a starting REST API recorded %d Events, %v failures", n, h.failures(LevelRest)-failures)
		}
		v, _ = h.probe(fc)
		expectLevels(t, "once it answers", v, T, T, T)
		// Once it answered, not answering is a failure however soon.
		h.sim.InjectUnavailable(h.key(fc), 1)
		h.probe(fc)
		if h.failures(LevelRest) != failures+1 {
			t.Errorf("a 503 after the REST API answered counted %v failures, want 1", h.failures(LevelRest)-failures)
		}
	})

	// A session cluster's TaskManagers' budget waits for something to run
	// on them (the controller's budgetDue): the verdict says so from GET
	// /overview, wakes a reconcile when a job starts (no condition
	// changes), and keeps it while the REST API does not answer.
	t.Run("a session cluster runs jobs once Flink counts one", func(t *testing.T) {
		h.t = t
		fc := h.cluster("runs-jobs", "demo", true, nil)
		h.probe(fc)
		v, notified := h.probe(fc)
		if v.RunsJobs || notified {
			t.Fatalf("no job yet: RunsJobs %v, notified %v; want neither", v.RunsJobs, notified)
		}
		h.submit(fc)
		v, notified = h.probe(fc)
		if !v.RunsJobs || !notified {
			t.Fatalf("a job submitted: RunsJobs %v, notified %v; want both", v.RunsJobs, notified)
		}
		if v, notified = h.probe(fc); !v.RunsJobs || notified {
			t.Errorf("the job still running: RunsJobs %v, notified %v; want RunsJobs alone", v.RunsJobs, notified)
		}
		h.sim.InjectUnavailable(h.key(fc), 1)
		if v, _ = h.probe(fc); !v.RunsJobs {
			t.Errorf("REST answered 503: RunsJobs false, want it kept")
		}
		if err := h.sim.CancelJob(h.key(fc), fc.Status.Job.ID, ""); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(time.Minute)
		if v, notified = h.probe(fc); v.RunsJobs || notified {
			t.Errorf("the job cancelled: RunsJobs %v, notified %v; want neither", v.RunsJobs, notified)
		}
	})

	// A reconcile's probe and the round's overlap while a JobManager turns
	// ready. One that began while the REST API was starting and is answered
	// after the other saw the API answer takes a failure for a failure.
	t.Run("a probe the API was judged under does not take a failure for a start", func(t *testing.T) {
		h.t = t
		fc := h.cluster("rest-overlap", "demo", true, nil)
		h.refresh(fc)
		p := h.ownPoller(nil)
		first, release := h.held(p, fc) // begun as a start: nothing has judged the REST API
		failures := h.failures(LevelRest)
		if v := p.ProbeOnce(h.ctx, fc); v.Levels[LevelRest].Status != metav1.ConditionTrue {
			t.Fatalf("the second probe: Rest = %+v, want True", v.Levels[LevelRest])
		}
		h.sim.InjectUnavailable(h.key(fc), 1)
		release()
		if r := (<-first).Levels[LevelRest]; r.Status != metav1.ConditionTrue || r.ConsecutiveFailures != 1 {
			t.Errorf("the first probe, answered 503 after the second's answer: Rest = %+v, want True with one failure", r)
		}
		if n := h.rec.count(fc, ReasonRestUnavailable); n != 1 || h.failures(LevelRest) != failures+1 {
			t.Errorf("%d Warnings, %v failures counted; want 1 and 1", n, h.failures(LevelRest)-failures)
		}
	})

	// The grace is over when the answer comes, not when the probe began.
	t.Run("a probe answered after the grace takes a failure for a failure", func(t *testing.T) {
		h.t = t
		fc := h.cluster("rest-late", "demo", true, nil)
		h.refresh(fc)
		clock := &testClock{now: time.Now()}
		p := h.ownPoller(clock.Now)
		// A first round sees the JobManager ready, its REST API not yet.
		h.sim.InjectUnavailable(h.key(fc), 1)
		if r := p.ProbeOnce(h.ctx, fc).Levels[LevelRest]; r.Reason != ReasonRestStarting {
			t.Fatalf("the first round: Rest = %+v, want RestStarting", r)
		}
		// The next begins within the grace and is answered after it.
		failures := h.failures(LevelRest)
		clock.Advance(RestStartGrace - time.Second)
		held, release := h.held(p, fc)
		clock.Advance(2 * time.Second)
		h.sim.InjectUnavailable(h.key(fc), 1)
		release()
		if r := (<-held).Levels[LevelRest]; r.Reason == ReasonRestStarting || h.failures(LevelRest) != failures+1 {
			t.Errorf("answered %v after the JobManager turned ready: Rest = %+v, %v failures; want a counted failure",
				RestStartGrace+time.Second, r, h.failures(LevelRest)-failures)
		}
	})

	// The start is bounded: a REST API that never answers is failing once
	// RestStartGrace has passed since the JobManager turned ready, and the
	// reconciler's hold, which asks RestStarting, ends with it.
	t.Run("a REST API that never answers stops being a start after the grace", func(t *testing.T) {
		h.t = t
		fc := h.cluster("rest-never", "demo", true, nil)
		failures := h.failures(LevelRest)
		h.sim.InjectUnavailable(h.key(fc), 100)
		defer h.sim.InjectUnavailable(h.key(fc), 0)
		v, _ := h.probe(fc)
		if r := v.Levels[LevelRest]; r.Reason != ReasonRestStarting || !h.poller.RestStarting(fc) {
			t.Fatalf("first round: Rest = %+v, RestStarting %v; want RestStarting", r, h.poller.RestStarting(fc))
		}
		later := time.Now().Add(RestStartGrace + time.Second)
		h.poller.Now = func() time.Time { return later }
		defer func() { h.poller.Now = nil }()
		if h.poller.RestStarting(fc) {
			t.Errorf("RestStarting %v after the grace", RestStartGrace)
		}
		v, _ = h.probe(fc)
		if r := v.Levels[LevelRest]; r.Reason == ReasonRestStarting || h.failures(LevelRest) != failures+1 {
			t.Errorf("after the grace: Rest = %+v, %v failures; want a counted failure", r, h.failures(LevelRest)-failures)
		}
	})

	// An operator that restarts starts its Tracker afresh. The start is
	// timed from when the JobManager's pod turned ready, as the pod
	// records it, not from this process's first look: a crash loop
	// shorter than the grace would otherwise hold a cluster whose REST API
	// never answers (say its Service is missing) as starting for ever.
	t.Run("after a restart the start is timed from the pod", func(t *testing.T) {
		h.t = t
		fc := h.cluster("rest-restarted", "demo", true, nil)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: "demo-jobmanager-0", Labels: resources.Labels(fc, resources.ComponentJobManager)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "jobmanager", Image: "flink:1.18.1"}}},
		}
		if err := h.k8s.Create(h.ctx, pod); err != nil {
			t.Fatal(err)
		}
		readySince := metav1.NewTime(time.Now().Add(-2 * RestStartGrace))
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readySince}}
		if err := h.k8s.Status().Update(h.ctx, pod); err != nil {
			t.Fatal(err)
		}
		pods, err := readiness.NewCache(h.env.Config, nil, []string{fc.Namespace}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(h.ctx)
		defer stop()
		go func() { _ = pods.Start(ctx) }()
		eventually(t, "the pod cache holds the ready JobManager pod", func() bool {
			got := pods.Pods(fc.Namespace, fc.Name)
			return len(got) == 1 && got[0].Ready
		})
		h.sim.InjectUnavailable(h.key(fc), 100)
		defer h.sim.InjectUnavailable(h.key(fc), 0)

		// Without the pods, a fresh Tracker can only time the start from
		// now: the control that shows what the pods change.
		blind := &Poller{Reader: h.k8s, Resolver: h.poller.Resolver, Tracker: NewTracker(), ProbeTimeout: 2 * time.Second, Teardown: h.poller.Teardown}
		if v := blind.ProbeOnce(h.ctx, fc); v.Levels[LevelRest].Reason != ReasonRestStarting {
			t.Fatalf("fresh Tracker without pods: Rest = %+v, want RestStarting", v.Levels[LevelRest])
		}
		restarted := &Poller{Reader: h.k8s, Pods: pods, Resolver: h.poller.Resolver, Tracker: NewTracker(), ProbeTimeout: 2 * time.Second, Teardown: h.poller.Teardown}
		if restarted.RestStarting(fc) {
			t.Errorf("RestStarting with a JobManager pod ready for %v", 2*RestStartGrace)
		}
		if v := restarted.ProbeOnce(h.ctx, fc); v.Levels[LevelRest].Reason != ReasonRestUnavailable {
			t.Errorf("fresh Tracker with pods: Rest = %+v, want RestUnavailable", v.Levels[LevelRest])
		}
	})

	t.Run("one 503 changes nothing, three degrade, recovery clears", func(t *testing.T) {
		h.t = t
		fc := h.cluster("rest", "demo", true, withJob)
		jobID := h.submit(fc)

		v, notified := h.probe(fc)
		if !notified || v.Degraded {
			t.Fatalf("first round: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "first round", v, T, T, T)
		if j, ok := v.Job(jobID); !ok || j.State != flink.JobRunning {
			t.Errorf("job summary = %+v", v.Jobs)
		}
		if n := h.rec.total(fc); n != 0 {
			t.Errorf("%d Events for a healthy cluster", n)
		}

		// One 503: a Warning Event, the failure metric, and nothing else.
		failures := h.failures(LevelRest)
		h.sim.InjectUnavailable(h.key(fc), 1)
		v, notified = h.probe(fc)
		if notified || v.Degraded {
			t.Errorf("one 503: notified %v, degraded %v", notified, v.Degraded)
		}
		expectLevels(t, "one 503", v, T, T, T)
		if v.Levels[LevelRest].ConsecutiveFailures != 1 {
			t.Errorf("one 503: %d failures", v.Levels[LevelRest].ConsecutiveFailures)
		}
		if n := h.rec.count(fc, ReasonRestUnavailable); n != 1 {
			t.Errorf("one 503: %d RestUnavailable Events recorded, want 1", n)
		}
		if got := h.failures(LevelRest) - failures; got != 1 {
			t.Errorf("one 503: failure metric moved by %v", got)
		}
		eventually(t, "the RestUnavailable Warning Event in the API server", func() bool {
			return len(h.warnings(fc, ReasonRestUnavailable)) == 1
		})
		ev := h.warnings(fc, ReasonRestUnavailable)[0]
		if ev.Action != EventAction || ev.ReportingController != "datapilot-health" || ev.Note == "" || eventSeriesCount(ev) != 1 {
			t.Errorf("Event = %+v", ev)
		}

		v, notified = h.probe(fc)
		if notified || v.Degraded || v.Levels[LevelRest].ConsecutiveFailures != 0 {
			t.Errorf("after the 503: notified %v, verdict %+v", notified, v)
		}
		if n := h.rec.count(fc, ReasonRestUnavailable); n != 1 {
			t.Errorf("a passing round recorded an Event (%d)", n)
		}

		// Three 503s in a row: Degraded and a notification on the third.
		h.sim.InjectUnavailable(h.key(fc), 3)
		for i := 1; i <= 3; i++ {
			v, notified = h.probe(fc)
			if i < 3 && (notified || v.Degraded) {
				t.Errorf("503 #%d: notified %v, degraded %v", i, notified, v.Degraded)
			}
			if n := h.rec.count(fc, ReasonRestUnavailable); n != 1+i {
				t.Errorf("503 #%d: %d Events recorded, want %d", i, n, 1+i)
			}
		}
		if !notified || !v.Degraded || v.DegradedReason != ReasonRestUnavailable {
			t.Fatalf("third 503: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "third 503", v, T, F, U)
		if got, _ := h.poller.Tracker.Get(client.ObjectKeyFromObject(fc)); !got.Degraded {
			t.Error("the Tracker does not hold the Degraded verdict")
		}
		if got := h.failures(LevelRest) - failures; got != 4 {
			t.Errorf("failure metric moved by %v, want 4", got)
		}
		// One Event object: the repeats are its series.
		eventually(t, "the repeated Event as a series", func() bool {
			evs := h.warnings(fc, ReasonRestUnavailable)
			return len(evs) == 1 && eventSeriesCount(evs[0]) >= 2
		})

		// Recovery: a notification and Degraded cleared.
		v, notified = h.probe(fc)
		if !notified || v.Degraded {
			t.Errorf("recovery: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "recovery", v, T, T, T)
		if n := h.rec.count(fc, ReasonRestUnavailable); n != 4 {
			t.Errorf("recovery recorded an Event (%d)", n)
		}
	})

	t.Run("JobManager not ready: REST is not asked, levels 2 and 3 Unknown at the threshold", func(t *testing.T) {
		h.t = t
		fc := h.cluster("jm", "demo", true, withJob)
		h.submit(fc)
		if _, notified := h.probe(fc); !notified {
			t.Fatal("first round not notified")
		}
		view, _ := h.sim.View(h.key(fc))
		overviews := view.Requests["GET /overview"]

		h.setReady(fc, false)
		for i := 1; i <= 3; i++ {
			v, notified := h.probe(fc)
			if i < 3 {
				if notified || v.Degraded {
					t.Errorf("round %d: notified %v, degraded %v", i, notified, v.Degraded)
				}
				expectLevels(t, "below the threshold", v, T, T, T)
				continue
			}
			if !notified || !v.Degraded || v.DegradedReason != ReasonJobManagerNotReady {
				t.Errorf("round 3: notified %v, verdict %+v", notified, v)
			}
			expectLevels(t, "at the threshold", v, F, U, U)
			for _, l := range []Level{LevelRest, LevelJobs} {
				if v.Levels[l].Reason != ReasonJobManagerNotReady {
					t.Errorf("%s reason = %s, want %s", l, v.Levels[l].Reason, ReasonJobManagerNotReady)
				}
			}
		}
		if n := h.rec.count(fc, ReasonJobManagerNotReady); n != 3 {
			t.Errorf("%d JobManagerNotReady Events recorded, want 3", n)
		}
		view, _ = h.sim.View(h.key(fc))
		if got := view.Requests["GET /overview"]; got != overviews {
			t.Errorf("REST asked %d times while the JobManager was not ready", got-overviews)
		}
		eventually(t, "the JobManagerNotReady Warning Event", func() bool {
			return len(h.warnings(fc, ReasonJobManagerNotReady)) == 1
		})

		// The new JobManager recovers the job, which initializes first:
		// level 3 fails once, and since it had no condition to keep it is
		// Unknown with that reason.
		h.setReady(fc, true)
		v, notified := h.probe(fc)
		if !notified || v.Degraded {
			t.Errorf("JobManager back: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "JobManager back, job restarting", v, T, T, U)
		if v.Levels[LevelJobs].Reason != ReasonJobNotRunning {
			t.Errorf("jobs reason = %s", v.Levels[LevelJobs].Reason)
		}
		h.clock.Advance(jobStarts)
		v, notified = h.probe(fc)
		if !notified || v.Degraded {
			t.Errorf("job running again: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "job running again", v, T, T, T)
	})

	t.Run("a starting cluster counts no failures, records no Events and wakes no reconcile", func(t *testing.T) {
		h.t = t
		fc := h.cluster("starting", "demo", false, withJob)
		jm, rest, jobs := h.probes(LevelJobManager), h.probes(LevelRest), h.probes(LevelJobs)
		for i := range 5 {
			v, notified := h.probe(fc)
			if notified || v.Degraded {
				t.Errorf("round %d: notified %v, degraded %v", i, notified, v.Degraded)
			}
			expectLevels(t, "starting", v, U, U, U)
			if v.Levels[LevelJobManager].Reason != ReasonJobManagerStarting || v.Levels[LevelRest].Reason != ReasonJobManagerStarting {
				t.Errorf("round %d: reasons %+v", i, v.Levels)
			}
		}
		if n := h.rec.total(fc); n != 0 {
			t.Errorf("%d Events for a starting cluster", n)
		}
		if h.probes(LevelJobManager) != jm || h.probes(LevelRest) != rest || h.probes(LevelJobs) != jobs {
			t.Error("probes of a starting cluster were counted")
		}
		view, _ := h.sim.View(h.key(fc))
		if len(view.Requests) != 0 {
			t.Errorf("REST asked before the JobManager was ever ready: %v", view.Requests)
		}

		// Ready, but the job is not submitted yet: that is no failure either.
		h.setReady(fc, true)
		v, notified := h.probe(fc)
		if !notified || v.Degraded {
			t.Errorf("ready: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "ready, job not submitted", v, T, T, U)
		if v.Levels[LevelJobs].Reason != ReasonJobNotSubmitted {
			t.Errorf("jobs reason = %s", v.Levels[LevelJobs].Reason)
		}
		h.submit(fc)
		v, _ = h.probe(fc)
		expectLevels(t, "job submitted", v, T, T, T)
		if n := h.rec.total(fc); n != 0 {
			t.Errorf("%d Events while starting", n)
		}
	})

	t.Run("the declared job failing degrades with JobNotRunning", func(t *testing.T) {
		h.t = t
		fc := h.cluster("job", "demo", true, func(fc *v1.FlinkCluster) {
			withJob(fc)
			fc.Spec.Health = &v1.HealthPolicy{FailureThreshold: 2}
		})
		jobID := h.submit(fc)
		h.probe(fc)
		if err := h.sim.SetJobState(h.key(fc), jobID, flink.JobFailed); err != nil {
			t.Fatal(err)
		}
		v, notified := h.probe(fc)
		if notified || v.Degraded {
			t.Errorf("first failure: notified %v, degraded %v", notified, v.Degraded)
		}
		v, notified = h.probe(fc)
		if !notified || !v.Degraded || v.DegradedReason != ReasonJobNotRunning {
			t.Errorf("second failure, threshold 2: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "job failed", v, T, T, F)
		if j, _ := v.Job(jobID); j.State != flink.JobFailed {
			t.Errorf("job summary = %+v", v.Jobs)
		}
		if n := h.rec.count(fc, ReasonJobNotRunning); n != 2 {
			t.Errorf("%d JobNotRunning Events recorded, want 2", n)
		}
	})

	t.Run("a session cluster needs no jobs unless required", func(t *testing.T) {
		h.t = t
		fc := h.cluster("session", "demo", true, nil)
		v, _ := h.probe(fc)
		expectLevels(t, "session", v, T, T, T)
		if v.Levels[LevelJobs].Reason != ReasonNotRequired {
			t.Errorf("jobs reason = %s", v.Levels[LevelJobs].Reason)
		}
		view, _ := h.sim.View(h.key(fc))
		if view.Requests["GET /jobs/overview"] != 0 {
			t.Error("GET /jobs/overview asked although no job is required")
		}

		fc.Spec.Health = &v1.HealthPolicy{RequireRunningJobs: true}
		if err := h.k8s.Update(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		v, _ = h.probe(fc)
		expectLevels(t, "required, none running, first failure", v, T, T, T)
		if v.Levels[LevelJobs].ConsecutiveFailures != 1 || h.rec.count(fc, ReasonNoJobsRunning) != 1 {
			t.Errorf("NoJobsRunning not counted: %+v", v.Levels[LevelJobs])
		}
	})

	// A round lists the clusters once and probes them over half an
	// interval: each probe takes the cluster as it is when it begins.
	t.Run("a round probes each cluster as it is when its probe begins", func(t *testing.T) {
		h.t = t
		fc := h.cluster("current", "demo", true, nil)
		h.refresh(fc)
		listed := fc.DeepCopy()
		now := metav1.Now()
		fc.Status.Upgrade = &v1.UpgradeStatus{Phase: v1.UpgradeDeploying, Kind: "Upgrade", TargetGeneration: 2, StartedAt: now, PhaseStartedAt: now}
		if err := h.k8s.Status().Update(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		if cur := h.poller.current(h.ctx, listed); cur == nil || cur.Status.Upgrade == nil {
			t.Errorf("the cluster as listed before its upgrade began: %+v, want it with its upgrade", cur)
		}
		h.probe(fc) // tracked, so that its forgetting shows
		if err := h.k8s.Delete(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		if cur := h.poller.current(h.ctx, listed); cur != nil {
			t.Errorf("a cluster deleted since it was listed is probed as %+v", cur)
		}
		if _, ok := h.poller.Tracker.Get(client.ObjectKeyFromObject(fc)); ok {
			t.Error("a cluster deleted since it was listed is still tracked")
		}
	})

	t.Run("an upgrade in flight counts no failures", func(t *testing.T) {
		h.t = t
		fc := h.cluster("upgrade", "demo", true, withJob)
		h.submit(fc)
		h.probe(fc)
		h.refresh(fc)
		now := metav1.Now()
		fc.Status.Upgrade = &v1.UpgradeStatus{Phase: v1.UpgradeDeploying, Kind: "Upgrade", TargetGeneration: 2, StartedAt: now, PhaseStartedAt: now}
		if err := h.k8s.Status().Update(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		h.setReady(fc, false)
		for range 4 {
			v, _ := h.probe(fc)
			if v.Degraded || v.Levels[LevelJobManager].ConsecutiveFailures != 0 {
				t.Errorf("during an upgrade: %+v", v)
			}
		}
		if n := h.rec.total(fc); n != 0 {
			t.Errorf("%d Events during an upgrade", n)
		}
	})

	t.Run("a full Notify channel is retried on the next round", func(t *testing.T) {
		h.t = t
		fc := h.cluster("notify", "demo", true, nil)
		h.poller.Notify = make(chan event.GenericEvent) // nobody receives
		h.refresh(fc)
		h.poller.ProbeOnce(h.ctx, fc)
		h.poller.Notify = h.notify
		if _, notified := h.probe(fc); !notified {
			t.Error("the undelivered change was not sent on the next round")
		}
		if _, notified := h.probe(fc); notified {
			t.Error("sent again without a change")
		}
	})

	t.Run("a cluster being deleted is skipped and forgotten", func(t *testing.T) {
		h.t = t
		fc := h.cluster("deleting", "demo", true, func(fc *v1.FlinkCluster) {
			fc.Finalizers = []string{"test.example.com/hold"}
		})
		h.probe(fc)
		key := client.ObjectKeyFromObject(fc)
		if _, ok := h.poller.Tracker.Get(key); !ok {
			t.Fatal("no verdict")
		}
		if err := h.k8s.Delete(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		h.refresh(fc)
		h.expectForgotten(fc, "a cluster being deleted")
		fc.Finalizers = nil
		if err := h.k8s.Update(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a cluster in a namespace being deleted, its JobManager gone first, is forgotten, not reported", func(t *testing.T) {
		h.t = t
		fc := h.cluster("tearing-down", "demo", true, nil)
		h.probe(fc)
		key := client.ObjectKeyFromObject(fc)
		if _, ok := h.poller.Tracker.Get(key); !ok {
			t.Fatal("no verdict")
		}
		// The namespace controller deletes the children in no order: here
		// the JobManager Deployment before the FlinkCluster, which is not
		// yet marked for deletion (this API server runs no namespace
		// controller, so the namespace stays Terminating).
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: resources.JobManagerName(fc)}}
		if err := h.k8s.Delete(h.ctx, dep); err != nil {
			t.Fatal(err)
		}
		if err := h.k8s.Delete(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fc.Namespace}}); err != nil {
			t.Fatal(err)
		}
		h.refresh(fc)
		if fc.DeletionTimestamp != nil {
			t.Fatal("the FlinkCluster is marked for deletion; the case needs it unmarked")
		}
		h.expectForgotten(fc, "a cluster whose namespace is being deleted")
	})

	t.Run("a cluster recreated under the same name starts afresh", func(t *testing.T) {
		h.t = t
		fc := h.cluster("recreated", "demo", true, nil)
		if v, _ := h.probe(fc); v.Levels[LevelJobManager].Status != T {
			t.Fatalf("not ready: %+v", v)
		}
		if err := h.k8s.Delete(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		// envtest runs no garbage collector: the old JobManager Deployment,
		// ready and owned by the old FlinkCluster, stays behind and must be
		// ignored; and what the Tracker remembers of the old cluster (its
		// JobManager was ready) must not make the new one's start a failure.
		again := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: fc.Name}, Spec: fc.Spec}
		if err := h.k8s.Create(h.ctx, again); err != nil {
			t.Fatal(err)
		}
		before := h.rec.total(again)
		// Afresh: like a new cluster starting, it wakes no reconcile.
		v, notified := h.probe(again)
		if notified || v.Degraded {
			t.Errorf("recreated: notified %v, verdict %+v", notified, v)
		}
		expectLevels(t, "recreated", v, U, U, U)
		if v.Levels[LevelJobManager].Reason != ReasonJobManagerStarting || v.Levels[LevelJobManager].ConsecutiveFailures != 0 {
			t.Errorf("recreated: JobManager %+v", v.Levels[LevelJobManager])
		}
		if h.rec.total(again) != before {
			t.Error("Events for a recreated, starting cluster")
		}
	})

	t.Run("a round cut short by shutdown records nothing", func(t *testing.T) {
		h.t = t
		fc := h.cluster("shutdown", "demo", true, nil)
		first, _ := h.probe(fc)
		ctx, cancel := context.WithCancel(h.ctx)
		cancel()
		v := h.poller.ProbeOnce(ctx, fc)
		if v.ObservedAt != first.ObservedAt || v.Levels[LevelRest] != first.Levels[LevelRest] {
			t.Errorf("a cancelled round changed the verdict: %+v", v)
		}
		if n := h.rec.total(fc); n != 0 {
			t.Errorf("%d Events from a cancelled round", n)
		}
		select {
		case <-h.notify:
			t.Error("a cancelled round notified")
		default:
		}
	})

	// A replica sharing the clusters (internal/sharding) polls on every
	// replica, its own clusters only: after two rounds of its own, the
	// other replica's cluster has had no request and no verdict.
	t.Run("a sharded Poller probes only the clusters it owns", func(t *testing.T) {
		h.t = t
		mine := h.cluster("shard-mine", "demo", true, nil)
		theirs := h.cluster("shard-theirs", "demo", true, nil)
		c, err := cache.New(h.env.Config, cache.Options{Scheme: h.scheme})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(h.ctx)
		defer cancel()
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			t.Fatal("cache not synced")
		}
		own := client.ObjectKeyFromObject(mine)
		p := &Poller{
			Reader: c, Resolver: h.poller.Resolver, Tracker: NewTracker(),
			Interval: 100 * time.Millisecond, ProbeTimeout: time.Second,
			Owns: func(k types.NamespacedName) bool { return k == own },
		}
		if p.NeedLeaderElection() {
			t.Error("a sharded Poller must run on every replica")
		}
		go func() { _ = p.Start(ctx) }()
		var first time.Time
		eventually(t, "two rounds of the owned cluster", func() bool {
			v, ok := p.Tracker.Get(own)
			if ok && first.IsZero() {
				first = v.ObservedAt
			}
			return ok && v.ObservedAt.After(first)
		})
		if _, ok := p.Tracker.Get(client.ObjectKeyFromObject(theirs)); ok {
			t.Error("the other replica's cluster has a verdict")
		}
		view, err := h.sim.Engine.View(h.key(theirs))
		if err != nil {
			t.Fatal(err)
		}
		for endpoint, n := range view.Requests {
			t.Errorf("the other replica's cluster got %d %s", n, endpoint)
		}
	})

	// Last: Start probes every cluster in the API server.
	t.Run("Start polls through a label-filtered cache", func(t *testing.T) {
		h.t = t
		fc := h.cluster("start", "demo", true, nil)
		c, err := cache.New(h.env.Config, cache.Options{
			Scheme: h.scheme,
			ByObject: map[client.Object]cache.ByObject{
				&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(h.ctx)
		defer cancel()
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			t.Fatal("cache not synced")
		}
		notify := make(chan event.GenericEvent, 64)
		p := &Poller{
			Reader: c, Resolver: h.poller.Resolver, Tracker: NewTracker(), Notify: notify,
			Interval: 100 * time.Millisecond, ProbeTimeout: time.Second,
		}
		if !p.NeedLeaderElection() {
			t.Error("the Poller must run on the leader only")
		}
		done := make(chan error, 1)
		go func() { done <- p.Start(ctx) }()

		key := client.ObjectKeyFromObject(fc)
		waitFor := func(what string, cond func(Verdict) bool) {
			t.Helper()
			timeout := time.After(20 * time.Second)
			for {
				select {
				case ev := <-notify:
					if client.ObjectKeyFromObject(ev.Object) != key {
						continue
					}
					if v, ok := p.Tracker.Get(key); ok && cond(v) {
						return
					}
				case <-timeout:
					t.Fatalf("timed out waiting for %s", what)
				}
			}
		}
		waitFor("a first healthy verdict", func(v Verdict) bool { return v.Levels[LevelRest].Status == T })
		h.sim.InjectUnavailable(h.key(fc), -1)
		waitFor("Degraded", func(v Verdict) bool { return v.Degraded && v.DegradedReason == ReasonRestUnavailable })
		h.sim.ClearFaults(h.key(fc))
		waitFor("recovery", func(v Verdict) bool { return !v.Degraded && v.Levels[LevelRest].Status == T })

		if err := h.k8s.Delete(h.ctx, fc); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the deleted cluster forgotten", func() bool {
			_, ok := p.Tracker.Get(key)
			return !ok
		})
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Start did not return after its context ended")
		}
	})
}

// ownPoller is a Poller of the harness's with a Tracker of its own and,
// when set, its own clock.
func (h *harness) ownPoller(clock func() time.Time) *Poller {
	return &Poller{Reader: h.k8s, Resolver: h.poller.Resolver, Tracker: NewTracker(), Recorder: h.rec, Metrics: h.metrics,
		ProbeTimeout: 5 * time.Second, Teardown: h.poller.Teardown, Now: clock}
}

// held starts p.ProbeOnce of fc with its first REST request held until
// release is called, and returns once that request is under way.
func (h *harness) held(p *Poller, fc *v1.FlinkCluster) (verdict <-chan Verdict, release func()) {
	h.t.Helper()
	hold := &holdFirst{entered: make(chan struct{}), release: make(chan struct{})}
	p.HTTPClient = &http.Client{Transport: hold}
	out := make(chan Verdict, 1)
	go func() { out <- p.ProbeOnce(h.ctx, fc) }()
	h.t.Cleanup(hold.free)
	select {
	case <-hold.entered:
	case <-time.After(30 * time.Second):
		h.t.Fatal("the probe sent no REST request")
	}
	return out, hold.free
}

// holdFirst is a transport that holds the first request it is given until
// free is called (or the request is cancelled), having closed entered; the
// others go at once.
type holdFirst struct {
	once, freed      sync.Once
	entered, release chan struct{}
}

func (h *holdFirst) free() { h.freed.Do(func() { close(h.release) }) }

func (h *holdFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	first := false
	h.once.Do(func() { first = true })
	if first {
		close(h.entered)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

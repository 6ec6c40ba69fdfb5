package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/faults"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

const name = "faults"

// TestFaultSchedules runs each seed's schedule and judges the invariants;
// every failing seed is printed at the end with how to replay it.
func TestFaultSchedules(t *testing.T) {
	list := make([]int64, 0, *seeds)
	if *oneSeed != 0 {
		list = append(list, *oneSeed)
	} else {
		for i := range int64(*seeds) {
			list = append(list, *first+i)
		}
	}
	var (
		mu      sync.Mutex
		failing []string
		wg      sync.WaitGroup
	)
	work := make(chan int64)
	for range max(1, *parallel) {
		wg.Go(func() {
			for seed := range work {
				sch := faults.Generate(seed)
				if !t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runSchedule(t, sch) }) {
					mu.Lock()
					failing = append(failing, fmt.Sprint(seed))
					mu.Unlock()
				}
			}
		})
	}
	for _, s := range list {
		work <- s
	}
	close(work)
	wg.Wait()
	if len(failing) > 0 {
		slices.Sort(failing)
		t.Errorf("Failing seeds: %s\nReplay one: go test ./test/faults -run TestFaultSchedules -count=1 -args -faults.seed=%s",
			strings.Join(failing, " "), failing[0])
	}
}

// runSchedule starts the schedule's cluster, runs its steps, waits for the
// cluster to settle and judges what Flink recorded.
func runSchedule(t *testing.T, sch faults.Schedule) {
	r := &runner{t: t, sch: sch, key: flinksim.ClusterKey{Namespace: fmt.Sprintf("faults-%d", sch.Seed),
		// The simulator's key: the JobManager Service in front of the cluster.
		Name: resources.JobManagerName(&v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})}}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.key.Namespace}})
	})
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.key.Namespace}}); err != nil {
		t.Fatalf("%v (a replay needs a fresh platform per seed: one run, one seed once)", err)
	}
	r.spec = r.initialSpec()
	r.create()
	r.waitStable()
	if sch.SlowCleanup > 0 {
		sim.Engine.SetCleanupDelay(r.key, sch.SlowCleanup)
	}
	for _, st := range sch.Steps {
		time.Sleep(st.After) // the schedule's own timing, not a wait for state
		r.do(st)
	}
	r.faults.Wait()
	fc, view := r.settle()
	facts := faults.Facts{Record: view.Record, Rollbacks: r.rollbacks(), Created: r.created}
	violations := append(r.violations, faults.Check(facts)...)
	if fc != nil {
		violations = append(violations, faults.CheckSettled(fc, view)...)
	}
	if len(violations) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nViolated:\n", sch)
	for _, v := range violations {
		fmt.Fprintf(&b, "  - %s\n", v)
	}
	rec, _ := json.MarshalIndent(view.Record, "  ", "  ")
	fmt.Fprintf(&b, "Flink's record:\n  %s\n", rec)
	if fc != nil {
		fmt.Fprintf(&b, "Status: phase %s, job %+v, upgrade %+v\n", fc.Status.Phase, fc.Status.Job, fc.Status.Upgrade)
		for _, c := range fc.Status.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s (%s): %s\n", c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format("15:04:05"), c.Message)
		}
	}
	fmt.Fprintf(&b, "Events:\n%s", r.events())
	if l := r.operatorLog(); l != "" {
		fmt.Fprintf(&b, "Operator log (this cluster):\n%s\n", l)
	}
	fmt.Fprintf(&b, "Replay: go test ./test/faults -run TestFaultSchedules -count=1 -args -faults.seed=%d", sch.Seed)
	t.Error(b.String())
}

type runner struct {
	t   *testing.T
	sch faults.Schedule
	key flinksim.ClusterKey
	// spec is the spec as the schedule left it; job the spec.job a
	// removal keeps to declare again.
	spec *v1.FlinkClusterSpec
	job  *v1.JobSpec
	// created are the times the FlinkCluster was created.
	created    []time.Time
	violations []faults.Violation
	// faults are the timed faults still in force.
	faults      sync.WaitGroup
	mu          sync.Mutex
	outages     int
	savepointFx []flinksim.Fault
}

// initialSpec is a small cluster with a job, Flink's default checkpoint
// retention (one) and timers scaled as in the e2e tier.
func (r *runner) initialSpec() *v1.FlinkClusterSpec {
	s := &v1.FlinkClusterSpec{
		Version:     r.sch.Releases[0],
		JobManager:  v1.JobManagerSpec{Replicas: 1},
		TaskManager: v1.TaskManagerSpec{Replicas: faults.Slots / 2, Slots: 2},
		// The simulator checkpoints on its own clock; Flink would on this one.
		Checkpointing: &v1.CheckpointingSpec{Interval: "1s"},
		Job: &v1.JobSpec{JarURI: jarURL, EntryClass: "org.example.Faults", Parallelism: r.sch.Parallelism,
			State: v1.JobStateRunning, UpgradeMode: v1.UpgradeMode(r.sch.UpgradeMode), SavepointRetention: 5},
		UpgradePolicy: &v1.UpgradePolicy{StableCheckpoints: 2, StabilityTimeout: "20s", SavepointTimeout: "10s", AutoRollback: ptr.To(true)},
	}
	if r.sch.HighAvailability {
		s.HighAvailability = &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes}
	}
	if r.sch.Adaptive {
		s.FlinkConfiguration = v1.FlinkConfiguration{"jobmanager.scheduler": "adaptive"}
	}
	return s
}

func (r *runner) create() {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.key.Namespace, Name: name}, Spec: *r.spec.DeepCopy()}
	r.created = append(r.created, time.Now())
	if err := k8s.Create(context.Background(), fc); err != nil {
		r.t.Fatalf("create the FlinkCluster: %v", err)
	}
}

func (r *runner) get() (*v1.FlinkCluster, error) {
	fc := &v1.FlinkCluster{}
	return fc, k8s.Get(context.Background(), client.ObjectKey{Namespace: r.key.Namespace, Name: name}, fc)
}

// waitStable waits until the job runs and its spec is recorded as stable.
func (r *runner) waitStable() {
	r.t.Helper()
	testwait.Until(r.t, 2*time.Minute, func() error {
		fc, err := r.get()
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(fc.Status.Conditions, v1.ConditionAvailable) || fc.Status.Job == nil ||
			fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil {
			return fmt.Errorf("the first job is not running and stable yet: job %+v, phase %s", fc.Status.Job, fc.Status.Phase)
		}
		return nil
	})
}

// do runs one step.
func (r *runner) do(st faults.Step) {
	r.t.Logf("%s step %s", time.Now().UTC().Format("15:04:05.000"), st)
	e := sim.Engine
	switch st.Kind {
	case faults.Version:
		r.patch(func(s *v1.FlinkClusterSpec) { s.Version = st.Version })
	case faults.Config:
		r.patch(func(s *v1.FlinkClusterSpec) {
			if s.FlinkConfiguration == nil {
				s.FlinkConfiguration = v1.FlinkConfiguration{}
			}
			s.FlinkConfiguration[st.Key] = v1.ConfigValue(st.Value)
		})
	case faults.Parallelism:
		r.patch(func(s *v1.FlinkClusterSpec) {
			if s.Job != nil {
				s.Job.Parallelism = st.Parallelism
			} else {
				r.job.Parallelism = st.Parallelism
			}
		})
	case faults.RemoveJob:
		r.patch(func(s *v1.FlinkClusterSpec) { r.job, s.Job = s.Job, nil })
	case faults.AddJob:
		r.patch(func(s *v1.FlinkClusterSpec) { s.Job, r.job = r.job, nil })
	case faults.RESTOutage:
		r.timed(st.For, func() { r.outage(+1) }, func() { r.outage(-1) })
	case faults.SlowSavepoints, faults.FailingSavepoints:
		f := flinksim.FaultStall
		if st.Kind == faults.FailingSavepoints {
			f = flinksim.FaultFail
		}
		r.timed(st.For, func() { r.savepointFault(f, true) }, func() { r.savepointFault(f, false) })
	case faults.LoseJobManager:
		if err := e.LoseJobManager(r.key); err != nil {
			r.t.Logf("no JobManager to lose: %v", err)
		} else {
			r.containerRestarted()
		}
	case faults.RestartOperator:
		if err := op.restart(); err != nil {
			r.t.Fatalf("restart the operator: %v", err)
		}
	case faults.Recreate:
		r.recreate()
	case faults.LostAnswers:
		for _, endpoint := range faults.JobRequests {
			e.LoseAnswers(r.key, endpoint, 1)
		}
	}
}

// patch changes the spec the schedule holds and writes it.
func (r *runner) patch(mutate func(*v1.FlinkClusterSpec)) {
	mutate(r.spec)
	testwait.Until(r.t, 30*time.Second, func() error {
		fc, err := r.get()
		if err != nil {
			return err
		}
		base := fc.DeepCopy()
		fc.Spec = *r.spec.DeepCopy()
		return k8s.Patch(context.Background(), fc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
}

// timed applies a fault now and lifts it after d, in the background.
func (r *runner) timed(d time.Duration, on, off func()) {
	on()
	r.faults.Add(1)
	time.AfterFunc(d, func() {
		defer r.faults.Done()
		off()
	})
}

// outage counts overlapping REST outages: the API answers again when the
// last one ends.
func (r *runner) outage(delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outages += delta
	if r.outages > 0 {
		sim.Engine.InjectUnavailable(r.key, -1)
	} else {
		sim.Engine.InjectUnavailable(r.key, 0)
	}
}

// savepointFault keeps overlapping savepoint faults: the latest one in
// force wins, and savepoints work again when none is.
func (r *runner) savepointFault(f flinksim.Fault, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.savepointFx = append(r.savepointFx, f)
	} else if i := slices.Index(r.savepointFx, f); i >= 0 {
		r.savepointFx = slices.Delete(r.savepointFx, i, i+1)
	}
	now := flinksim.FaultNone
	if n := len(r.savepointFx); n > 0 {
		now = r.savepointFx[n-1]
	}
	sim.Engine.SetSavepointFault(r.key, now)
}

// recreate deletes the FlinkCluster, waits until it is gone (the
// operator's finalizer ran) and creates it again under the same name.
// containerRestarted shows the JobManager's crash in Kubernetes as the
// kubelet would: its container restarted in its pod (restartCount, a new
// start) and the pod Ready again only since now. kwok stands in for the
// kubelet and cannot see the simulator's process crash; the operator tells
// a JobManager that may have lost a job from one that never got it by
// when its pod last turned Ready.
func (r *runner) containerRestarted() {
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(r.key.Namespace),
		client.MatchingLabels(resources.SelectorLabels(name, resources.ComponentJobManager))); err != nil {
		r.t.Fatalf("list the JobManager pods: %v", err)
	}
	now := metav1.Now()
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		restarted := p.DeepCopy()
		for j := range restarted.Status.Conditions {
			if c := &restarted.Status.Conditions[j]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				c.LastTransitionTime = now
			}
		}
		for j := range restarted.Status.ContainerStatuses {
			c := &restarted.Status.ContainerStatuses[j]
			c.RestartCount++
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
		if err := k8s.Status().Patch(ctx, restarted, client.MergeFrom(p)); err != nil && !apierrors.IsNotFound(err) {
			r.t.Fatalf("show the JobManager's restart in pod %s: %v", p.Name, err)
		}
	}
}

func (r *runner) recreate() {
	fc, err := r.get()
	if err != nil {
		r.t.Fatalf("get the FlinkCluster: %v", err)
	}
	if err := k8s.Delete(context.Background(), fc); err != nil {
		r.t.Fatalf("delete the FlinkCluster: %v", err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := r.get()
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			r.violations = append(r.violations, faults.Violation{Invariant: faults.Settles, Detail: "the deleted FlinkCluster was still there after 90s"})
			return
		}
		time.Sleep(testwait.Interval)
	}
	r.create()
}

// settle waits until the cluster has been quiescent for a few seconds and
// returns it with the simulator's view; a cluster that does not settle is
// a violation of its own.
func (r *runner) settle() (*v1.FlinkCluster, flinksim.ClusterView) {
	const hold = 3 * time.Second
	deadline := time.Now().Add(2 * time.Minute)
	var since time.Time
	var why string
	for {
		fc, err := r.get()
		view, verr := sim.Engine.View(r.key)
		ok := false
		switch {
		case err != nil:
			why = err.Error()
		case verr != nil:
			why = verr.Error()
		default:
			ok, why = faults.Settled(fc, view)
		}
		switch {
		case !ok:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= hold:
			return fc, view
		}
		if time.Now().After(deadline) {
			r.violations = append(r.violations, faults.Violation{Invariant: faults.Settles, Detail: "not settled within 2m: " + why})
			if err != nil {
				fc = nil
			}
			return fc, view
		}
		time.Sleep(testwait.Interval)
	}
}

// rollbacks are the jobs the operator says it submitted to roll back: its
// RolledBack events ("Submitting job <id> restored from ...").
func (r *runner) rollbacks() map[string]bool {
	out := map[string]bool{}
	for _, e := range r.eventList() {
		if id, ok := strings.CutPrefix(e.Note, "Submitting job "); ok && e.Reason == "RolledBack" {
			out[strings.Fields(id)[0]] = true
		}
	}
	return out
}

func (r *runner) eventList() []eventsv1.Event {
	list := &eventsv1.EventList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(r.key.Namespace)); err != nil {
		r.t.Logf("list events: %v", err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Time.Compare(b.EventTime.Time) })
	return list.Items
}

func (r *runner) events() string {
	var b strings.Builder
	for _, e := range r.eventList() {
		if e.Regarding.Kind == "FlinkCluster" {
			fmt.Fprintf(&b, "  %s %s %s: %s\n", e.EventTime.UTC().Format("15:04:05.000"), e.Type, e.Reason, e.Note)
		}
	}
	return b.String()
}

func (r *runner) operatorLog() string {
	var out []string
	for _, l := range strings.Split(op.tail(4000), "\n") {
		if strings.Contains(l, r.key.Namespace+"/") || strings.Contains(l, `"namespace":"`+r.key.Namespace+`"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-40):], "\n")
}

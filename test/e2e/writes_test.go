package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/flink"
)

// TestJobClusterWrites pins what a job cluster costs from creation to its
// recorded stable spec: its five children, two or three status writes (a
// fourth when its pods are slower than controller.CreatingWait) and
// no event. The finalizer that stops the job with a savepoint when the
// cluster is deleted costs no write of the operator's: the operator's
// mutating webhook puts it into the cluster's own create. No status says
// only Creating: the first, when the pods are ready within
// controller.CreatingWait, is Available with the job's ID, before the job
// is submitted; then the job RUNNING; then its first checkpoint with the
// spec recorded stable (two checkpoints here; the two ride together when
// the job is first seen RUNNING with both). An operator started afresh, as a
// new leader is, writes nothing for it while the recorded restore point is
// one Flink still retains (here 100 checkpoints; with fewer, a checkpoint
// that would subsume it is written: lifecycle.FlinkProgressOnly).
func TestJobClusterWrites(t *testing.T) {
	alone(t)
	ns := newNamespace(t)
	fc := jobCluster(ns, "writes")
	fc.Spec.Checkpointing.Retention = 100
	// The webhook fails open: right after an operator restart its new CA
	// may not be trusted yet, and the controller patches the finalizer in
	// instead. This test is about the cluster, not that second.
	finalizerWebhookAnswers(t, fc)
	start := time.Now()
	key := startCluster(t, fc)
	if got := getFC(t, ns, "writes"); !slices.Contains(got.Finalizers, controller.Finalizer) {
		t.Errorf("finalizers %v", got.Finalizers)
	}
	waitBudget(t, ns, "writes")
	converged := auditFence(t, ns)
	// A converged cluster's children and status are final: the writes so
	// far are the whole bill.
	got := operatorWrites(t, ns, start, converged)
	t.Logf("writes until converged: %v", got)
	for _, tc := range []struct {
		resource string
		min, max int
	}{
		{"configmaps", 1, 1}, {"deployments", 0, 0}, {"statefulsets", 2, 2}, {"services", 1, 1}, {"poddisruptionbudgets", 1, 1},
		{"flinkclusters", 0, 0}, {"flinkclusters/status", 2, 4},
		{"events", 0, 0},
	} {
		if n := got["patch "+tc.resource] + got["create "+tc.resource] + got["update "+tc.resource]; n < tc.min || n > tc.max {
			t.Errorf("%s: %d writes, want %d to %d (all writes: %v)", tc.resource, n, tc.min, tc.max, got)
		}
	}
	// A fourth is WaitingForPods, when the workloads were slower than
	// CreatingWait (TestSessionClusterWrites).
	if got["patch flinkclusters/status"] == 4 {
		if err := secondStatusWriteJustified(auditWrites(t, ns), start, converged, controller.CreatingWait); err != nil {
			t.Error(err)
		}
	}

	// A fresh operator, with nothing in memory: its first reconcile reads
	// the job's checkpoints (an observable fence), and a second, woken by
	// an annotation, starts only after the first ended.
	jobID := getFC(t, ns, "writes").Status.Job.ID
	checkpoints := func() int {
		v, err := sim.Engine.View(key)
		if err != nil {
			t.Fatal(err)
		}
		return v.Requests["GET /jobs/{jobid}/checkpoints"]
	}
	fence := func(what string, before int) {
		eventually(t, time.Minute, what, func() error {
			if n := checkpoints(); n <= before {
				return fmt.Errorf("no checkpoints read since")
			}
			return nil
		})
	}
	op.stop()
	restarted, before := time.Now(), checkpoints()
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	fence("the restarted operator's first reconcile", before)
	fc = getFC(t, ns, "writes")
	base := fc.DeepCopy()
	fc.Annotations = map[string]string{"fence": "1"}
	before = checkpoints()
	if err := k8s.Patch(context.Background(), fc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	fence("a reconcile after the annotation", before)
	if j := simJob(t, key, jobID); j.State != flink.JobRunning || j.CheckpointsCompleted <= int(fc.Status.Job.CheckpointsCompleted) {
		t.Fatalf("the fence needs a job that checkpointed since the last write: %+v, recorded %d", j, fc.Status.Job.CheckpointsCompleted)
	}
	if got := operatorWrites(t, ns, restarted, auditFence(t, ns)); len(got) != 0 {
		t.Errorf("the restarted operator wrote %v for a converged job cluster, want nothing", got)
	}
	if c := getFC(t, ns, "writes"); c.Status.Job.State != string(flink.JobRunning) || c.Status.LastStableSpec == nil ||
		!condition(c, v1.ConditionAvailable, metav1.ConditionTrue) {
		t.Errorf("status after the restart: job %+v, conditions %+v", c.Status.Job, c.Status.Conditions)
	}
}

// finalizerWebhookAnswers waits until a dry-run create of fc comes back
// with the cleanup finalizer: the mutating webhook answers, with a CA the
// API server trusts.
func finalizerWebhookAnswers(t *testing.T, fc *v1.FlinkCluster) {
	t.Helper()
	eventually(t, time.Minute, "the finalizer webhook", func() error {
		probe := fc.DeepCopy()
		if err := k8s.Create(context.Background(), probe, client.DryRunAll); err != nil {
			return err
		}
		if !slices.Contains(probe.Finalizers, controller.Finalizer) {
			return fmt.Errorf("a dry-run create came back with finalizers %v", probe.Finalizers)
		}
		return nil
	})
}

// TestSessionClusterWrites pins what a session cluster costs until it is
// converged: its four children (no TaskManagers' budget while it runs
// nothing), no finalizer (it has nothing for one to clean up), no event,
// and one status write when its workloads are ready
// within controller.CreatingWait: a first status that would say only Creating is not
// written. Under a full run's load the workload controllers may say Ready
// later; then a second status write is the truth (WaitingForPods, then
// Available), and the audit log must show why: the first status write came
// no sooner than CreatingWait after the children were created, and a
// workload's status changed between the two writes. Then a user runs a job
// on it through Flink's REST API: the budget follows (the health probe's
// GET /overview counts the job), and is the one write more.
func TestSessionClusterWrites(t *testing.T) {
	alone(t)
	start := time.Now()
	ns := newNamespace(t)
	fc := jobCluster(ns, "session")
	fc.Spec.Job, fc.Spec.UpgradePolicy = nil, nil
	if err := k8s.Create(context.Background(), fc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, "session", v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	// The health rounds (every second here) that see the cluster
	// running nothing, and the reconciles they would wake, come and go.
	key := simKey(ns, "session")
	overviews := func() int {
		v, err := sim.Engine.View(key)
		if err != nil {
			t.Fatal(err)
		}
		return v.Requests["GET /overview"]
	}
	seen := overviews()
	eventually(t, time.Minute, "two health rounds after Available", func() error {
		if n := overviews(); n < seen+2 {
			return fmt.Errorf("%d GET /overview since Available", n-seen)
		}
		return nil
	})
	fence := auditFence(t, ns)
	got := operatorWrites(t, ns, start, fence)
	t.Logf("writes until converged: %v", got)
	for _, tc := range []struct {
		resource string
		min, max int
	}{
		{"configmaps", 1, 1}, {"deployments", 0, 0}, {"statefulsets", 2, 2}, {"services", 1, 1}, {"poddisruptionbudgets", 0, 0},
		{"flinkclusters", 0, 0}, {"flinkclusters/status", 1, 2},
		{"events", 0, 0},
	} {
		if n := got["patch "+tc.resource] + got["create "+tc.resource] + got["update "+tc.resource]; n < tc.min || n > tc.max {
			t.Errorf("%s: %d writes, want %d to %d (all writes: %v)", tc.resource, n, tc.min, tc.max, got)
		}
	}
	if err := secondStatusWriteJustified(auditWrites(t, ns), start, fence, controller.CreatingWait); err != nil {
		t.Error(err)
	}

	runUserJob(t, ns, "session")
	waitBudget(t, ns, "session")
	budget := &policyv1.PodDisruptionBudget{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "session-taskmanager"}, budget); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(budget); ref == nil || ref.Name != "session" {
		t.Errorf("budget has controller %v, want the FlinkCluster", ref)
	}
	if mu := budget.Spec.MaxUnavailable; mu == nil || mu.IntValue() != 1 {
		t.Errorf("budget spec %+v, want one TaskManager unavailable at most", budget.Spec)
	}
	after := operatorWrites(t, ns, fence, auditFence(t, ns))
	if want := map[string]int{"create poddisruptionbudgets": 1}; !maps.Equal(after, want) {
		t.Errorf("writes for the job's budget: %v, want %v", after, want)
	}
}

// secondStatusWriteJustified checks, from the audit log, that a
// cluster's extra status write before it converged was caused by slow
// pods, not by the operator: the first write came at least creatingWait
// after the operator's last child create and said the cluster was not
// Available yet, and the pods were in fact slower than that (a pod's or a
// workload's status changed later). Whether anything changed between the
// two writes cannot be told from the log: the operator's cache may see a
// change made before its first write only after it. One status write
// needs no justification.
func secondStatusWriteJustified(events []auditEvent, from, to time.Time, creatingWait time.Duration) error {
	var lastCreate, lastStatusChange time.Time
	var statusWrites []auditEvent
	for _, e := range events {
		at := e.StageTimestamp.Time
		if at.Before(from) || !at.Before(to) {
			continue
		}
		ours := strings.HasPrefix(e.UserAgent, "datapilot/")
		switch r := e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource; {
		case ours && e.Verb == "create" && (r == "deployments/" || r == "statefulsets/") && at.After(lastCreate):
			lastCreate = at
		case ours && r == "flinkclusters/status":
			statusWrites = append(statusWrites, e)
		case !ours && (r == "deployments/status" || r == "statefulsets/status" || r == "pods/status") && at.After(lastStatusChange):
			// Readiness reads the pods first (internal/readiness), the
			// workloads' status where the pods do not show it.
			lastStatusChange = at
		}
	}
	if len(statusWrites) < 2 {
		return nil
	}
	slices.SortFunc(statusWrites, func(a, b auditEvent) int { return a.StageTimestamp.Compare(b.StageTimestamp.Time) })
	first := statusWrites[0]
	if lastCreate.IsZero() {
		return fmt.Errorf("two status writes, and no create of the workloads in the audit log")
	}
	if waited := first.StageTimestamp.Sub(lastCreate); waited < creatingWait {
		return fmt.Errorf("the first status write came %v after the workloads were created, sooner than creatingWait %v: "+
			"a status saying only that the cluster is coming up was written", waited, creatingWait)
	}
	if first.RequestObject == nil {
		return fmt.Errorf("the first status write has no body in the audit log")
	}
	if c := meta.FindStatusCondition(first.RequestObject.Status.Conditions, v1.ConditionAvailable); c == nil || c.Status != metav1.ConditionFalse {
		return fmt.Errorf("the first status write said Available %+v and another followed before the cluster converged", c)
	}
	if !lastStatusChange.After(lastCreate.Add(creatingWait)) {
		return fmt.Errorf("the pods and workloads were done %v after the creates, within creatingWait %v, and two status writes followed",
			lastStatusChange.Sub(lastCreate), creatingWait)
	}
	return nil
}

func condition(fc *v1.FlinkCluster, typ string, want metav1.ConditionStatus) bool {
	for _, c := range fc.Status.Conditions {
		if c.Type == typ {
			return c.Status == want
		}
	}
	return false
}

// operatorWrites counts the operator's audited writes in ns between from
// and to, by verb and resource.
func operatorWrites(t *testing.T, ns string, from, to time.Time) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range auditWrites(t, ns) {
		if !strings.HasPrefix(e.UserAgent, "datapilot/") {
			continue
		}
		if at := e.StageTimestamp.Time; at.Before(from) || !at.Before(to) {
			continue
		}
		k := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			k += "/" + e.ObjectRef.Subresource
		}
		out[k]++
	}
	return out
}

// runUserJob runs a job on a session cluster as a user would, through
// Flink's REST API (the operator knows nothing of it).
func runUserJob(t *testing.T, ns, name string) {
	t.Helper()
	key := simKey(ns, name)
	up, err := sim.Engine.UploadJar(key, "job.jar")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Engine.RunJar(key, path.Base(up.Filename), flink.JarRunRequest{Parallelism: 1}); err != nil {
		t.Fatal(err)
	}
}

// waitBudget waits for the cluster's last child, the TaskManagers'
// PodDisruptionBudget, which the operator creates once something runs on
// them (controller's budgetDue): a job cluster's once its status has said
// a TaskManager is ready, a session cluster's once Flink counts a job.
func waitBudget(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, "the TaskManagers' budget", func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}, &policyv1.PodDisruptionBudget{})
	})
}

// auditFence creates a ConfigMap in ns and waits until the audit log holds
// that write, so every write answered before it is in the log too; it
// returns when that write was logged.
func auditFence(t *testing.T, ns string) time.Time {
	t.Helper()
	name := fmt.Sprintf("fence-%d", time.Now().UnixNano())
	if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	eventually(t, time.Minute, "the fence in the audit log", func() error {
		for _, e := range auditWrites(t, ns) {
			if e.Verb == "create" && e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Name == name {
				at = e.StageTimestamp.Time
				return nil
			}
		}
		return fmt.Errorf("not logged yet")
	})
	return at
}

type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
	// RequestObject is logged for status writes only (auditPolicy).
	RequestObject *struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	} `json:"requestObject"`
}

// auditWrites are the audited writes in ns (the policy logs only writes).
func auditWrites(t *testing.T, ns string) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ObjectRef == nil || e.ObjectRef.Namespace != ns {
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(fmt.Errorf("read audit log: %w", err))
	}
	return out
}

// TestSecondStatusWriteJustified: the audit check above tells a second
// status write caused by slow workloads from one the operator should not
// have made.
func TestSecondStatusWriteJustified(t *testing.T) {
	parallel(t)
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	ev := func(agent, verb, resource, sub string, at time.Time) auditEvent {
		e := auditEvent{Verb: verb, UserAgent: agent, StageTimestamp: metav1.NewMicroTime(at)}
		e.ObjectRef = &struct {
			Resource    string `json:"resource"`
			Subresource string `json:"subresource"`
			Namespace   string `json:"namespace"`
			Name        string `json:"name"`
		}{Resource: resource, Subresource: sub}
		return e
	}
	op, kcm, kwok := "datapilot/test", "kube-controller-manager/v1.34", "kwok/v0.8.0"
	status := func(at time.Time, available metav1.ConditionStatus) auditEvent {
		e := ev(op, "patch", "flinkclusters", "status", at)
		e.RequestObject = &struct {
			Status struct {
				Conditions []metav1.Condition `json:"conditions"`
			} `json:"status"`
		}{}
		e.RequestObject.Status.Conditions = []metav1.Condition{{Type: v1.ConditionAvailable, Status: available}}
		return e
	}
	no, yes := metav1.ConditionFalse, metav1.ConditionTrue
	created := []auditEvent{ev(op, "create", "deployments", "", ms(0)), ev(op, "create", "statefulsets", "", ms(10))}
	for _, tc := range []struct {
		name   string
		events []auditEvent
		ok     bool
	}{
		{"one status write", append(created, status(ms(300), yes)), true},
		{"slow workloads", append(created, status(ms(1100), no),
			ev(kcm, "update", "statefulsets", "status", ms(2000)), status(ms(2100), yes)), true},
		{"slow pods", append(created, status(ms(1100), no),
			ev(kwok, "patch", "pods", "status", ms(2000)), status(ms(2100), yes)), true},
		// The operator's cache saw the pods' change only after its first
		// write.
		{"slow pods, seen late", append(created, ev(kwok, "patch", "pods", "status", ms(1500)),
			status(ms(2500), no), status(ms(4000), yes)), true},
		{"coming up written at once", append(created, status(ms(200), no),
			ev(kcm, "update", "statefulsets", "status", ms(2000)), status(ms(2100), yes)), false},
		{"Available, then another write", append(created, ev(kcm, "update", "statefulsets", "status", ms(1500)),
			status(ms(1600), yes), status(ms(2100), yes)), false},
		{"pods ready within creatingWait", append(created, ev(kwok, "patch", "pods", "status", ms(800)),
			status(ms(1100), no), status(ms(2100), yes)), false},
		{"the operator's own workload write is no change", append(created, status(ms(1100), no),
			ev(op, "update", "statefulsets", "status", ms(2000)), status(ms(2100), yes)), false},
		{"no body", append(created, ev(op, "patch", "flinkclusters", "status", ms(1100)),
			ev(kcm, "update", "statefulsets", "status", ms(2000)), status(ms(2100), yes)), false},
		{"no create seen", []auditEvent{status(ms(1100), no),
			ev(kcm, "update", "statefulsets", "status", ms(2000)), status(ms(2100), yes)}, false},
	} {
		err := secondStatusWriteJustified(tc.events, t0, ms(10000), time.Second)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

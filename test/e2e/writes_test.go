package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/flink"
)

// TestJobClusterWrites pins what a job cluster costs from creation to its
// recorded stable spec: its five children, two or three status writes and
// no event. The finalizer that stops the job with a savepoint when the
// cluster is deleted costs no write of the operator's: the operator's
// mutating webhook puts it into the cluster's own create. The pods are ready within a second here, so no status says
// only Creating: the first is Available with the job's ID, before the job
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
	converged := auditFence(t, ns)
	// A converged cluster's children and status are final: the writes so
	// far are the whole bill.
	got := operatorWrites(t, ns, start, converged)
	t.Logf("writes until converged: %v", got)
	for _, tc := range []struct {
		resource string
		min, max int
	}{
		{"configmaps", 1, 1}, {"deployments", 1, 1}, {"statefulsets", 1, 1}, {"services", 1, 1}, {"poddisruptionbudgets", 1, 1},
		{"flinkclusters", 0, 0}, {"flinkclusters/status", 2, 3},
		{"events", 0, 0},
	} {
		if n := got["patch "+tc.resource] + got["create "+tc.resource] + got["update "+tc.resource]; n < tc.min || n > tc.max {
			t.Errorf("%s: %d writes, want %d to %d (all writes: %v)", tc.resource, n, tc.min, tc.max, got)
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
// Available: its five children and one status write, no finalizer (it has
// nothing for one to clean up) and no event. Its pods are ready within a
// second, so its first status says Available (no Creating before it).
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
	got := operatorWrites(t, ns, start, auditFence(t, ns))
	t.Logf("writes until Available: %v", got)
	for _, tc := range []struct {
		resource string
		min, max int
	}{
		{"configmaps", 1, 1}, {"deployments", 1, 1}, {"statefulsets", 1, 1}, {"services", 1, 1}, {"poddisruptionbudgets", 1, 1},
		{"flinkclusters", 0, 0}, {"flinkclusters/status", 1, 1},
		{"events", 0, 0},
	} {
		if n := got["patch "+tc.resource] + got["create "+tc.resource] + got["update "+tc.resource]; n < tc.min || n > tc.max {
			t.Errorf("%s: %d writes, want %d to %d (all writes: %v)", tc.resource, n, tc.min, tc.max, got)
		}
	}
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

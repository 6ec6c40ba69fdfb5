package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
)

// TestJobClusterWrites pins what a job cluster costs from creation to its
// recorded stable spec: its six children, the finalizer that stops the job
// with a savepoint when the cluster is deleted, at most four status writes
// (Creating; Available with the job's ID, before it is submitted; the job
// RUNNING; the spec stable) and no event. An operator started afresh, as a
// new leader is, writes nothing for it while the recorded restore point is
// one Flink still retains (here 100 checkpoints; with fewer, a checkpoint
// that would subsume it is written: lifecycle.FlinkProgressOnly).
func TestJobClusterWrites(t *testing.T) {
	alone(t)
	start := time.Now()
	ns := newNamespace(t)
	fc := jobCluster(ns, "writes")
	fc.Spec.Checkpointing.Retention = 100
	key := startCluster(t, fc)
	converged := time.Now()
	// A converged cluster's children and status are final: the writes so
	// far are the whole bill.
	got := operatorWrites(t, ns, start, converged)
	for _, tc := range []struct {
		resource string
		min, max int
	}{
		{"configmaps", 1, 1}, {"deployments", 1, 1}, {"statefulsets", 1, 1}, {"services", 2, 2}, {"poddisruptionbudgets", 1, 1},
		{"flinkclusters", 1, 1}, {"flinkclusters/status", 3, 4},
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
	if got := operatorWrites(t, ns, restarted, time.Now()); len(got) != 0 {
		t.Errorf("the restarted operator wrote %v for a converged job cluster, want nothing", got)
	}
	if c := getFC(t, ns, "writes"); c.Status.Job.State != string(flink.JobRunning) || c.Status.LastStableSpec == nil ||
		!condition(c, v1.ConditionAvailable, metav1.ConditionTrue) {
		t.Errorf("status after the restart: job %+v, conditions %+v", c.Status.Job, c.Status.Conditions)
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
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type event struct {
		Verb      string `json:"verb"`
		UserAgent string `json:"userAgent"`
		ObjectRef *struct {
			Resource    string `json:"resource"`
			Subresource string `json:"subresource"`
			Namespace   string `json:"namespace"`
		} `json:"objectRef"`
		StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
	}
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, "datapilot/") || e.ObjectRef == nil || e.ObjectRef.Namespace != ns {
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
	if err := sc.Err(); err != nil {
		t.Fatal(fmt.Errorf("read audit log: %w", err))
	}
	return out
}

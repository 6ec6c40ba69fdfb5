package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/flink"
)

// TestBudgetWhileFlinkIsUnreachable: a job cluster's TaskManagers' budget
// waits for a ready TaskManager, not for Flink (a session cluster's waits
// for Flink to count a job: TestSessionClusterWrites). A job cluster whose REST API answers
// 503 from the start gets its budget once its pods are ready, while no job
// reaches Flink (a decision that needs Flink's answer waits for it); once
// Flink answers, the job is submitted once and runs, under the budget.
func TestBudgetWhileFlinkIsUnreachable(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := simKey(ns, "dark")
	sim.Engine.InjectUnavailable(key, -1)
	t.Cleanup(func() { sim.Engine.ClearFaults(key) })
	if err := k8s.Create(ctx, jobCluster(ns, "dark")); err != nil {
		t.Fatal(err)
	}
	budget := client.ObjectKey{Namespace: ns, Name: "dark-taskmanager"}
	eventually(t, 2*time.Minute, "the budget, Flink unreachable", func() error {
		return k8s.Get(ctx, budget, &policyv1.PodDisruptionBudget{})
	})
	v, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	if v.Totals.JobsSubmitted != 0 {
		t.Fatalf("%d jobs reached Flink while it answered 503", v.Totals.JobsSubmitted)
	}

	sim.Engine.ClearFaults(key)
	eventually(t, 2*time.Minute, "the job running once Flink answers", func() error {
		fc := getFC(t, ns, "dark")
		if fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) {
			return fmt.Errorf("job %+v", fc.Status.Job)
		}
		return nil
	})
	if v, err = sim.Engine.View(key); err != nil {
		t.Fatal(err)
	}
	if v.Totals.JobsSubmitted != 1 {
		t.Errorf("%d jobs submitted, want the one", v.Totals.JobsSubmitted)
	}
	if err := k8s.Get(ctx, budget, &policyv1.PodDisruptionBudget{}); err != nil {
		t.Errorf("the budget after Flink answered: %v", err)
	}
}

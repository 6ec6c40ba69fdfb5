package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/flink"
)

// TestIgnoredNamespaceHoldsDeletion: a namespace ignored
// (--ignore-namespace) after Datapilot ran a job cluster there keeps the
// cluster's finalizer, so deleting the cluster stops nothing and loses
// nothing while no Datapilot watches the namespace: the job runs on, and
// the cluster waits. Once an operator watches the namespace again, the
// deletion takes the job's final savepoint, as every deletion does
// (docs/operations/settings.md).
func TestIgnoredNamespaceHoldsDeletion(t *testing.T) {
	alone(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := startCluster(t, jobCluster(ns, "held"))
	fc := getFC(t, ns, "held")
	jobID := fc.Status.Job.ID
	if !slices.Contains(fc.Finalizers, controller.Finalizer) {
		t.Fatalf("finalizers %v, want %s", fc.Finalizers, controller.Finalizer)
	}

	restart := func(args ...string) {
		op.stop()
		op.extraArgs = args
		if err := op.start(); err != nil {
			t.Fatal(err)
		}
	}
	restart("--ignore-namespace=" + ns)
	// The shared operator watches every namespace again for the next test,
	// whatever this one did.
	t.Cleanup(func() {
		if len(op.extraArgs) > 0 {
			restart()
		}
	})

	if err := k8s.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	// A fence, not a wait: a cluster created after the deletion, in a
	// namespace the operator watches, becomes Available. The operator's
	// one watch of FlinkClusters would have carried the deletion first,
	// had the API server not filtered it out.
	other := newNamespace(t)
	session := jobCluster(other, "fence")
	session.Spec.Job, session.Spec.UpgradePolicy = nil, nil
	if err := k8s.Create(ctx, session); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, other, "fence", v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	held := getFC(t, ns, "held")
	if held.DeletionTimestamp == nil || !slices.Contains(held.Finalizers, controller.Finalizer) {
		t.Fatalf("the deleted cluster in the ignored namespace: deletion %v, finalizers %v; want it held by the finalizer", held.DeletionTimestamp, held.Finalizers)
	}
	if j := simJob(t, key, jobID); j.State != flink.JobRunning || j.StopsTriggered != 0 {
		t.Fatalf("job %s after %d stops while its namespace is ignored, want RUNNING and untouched", j.State, j.StopsTriggered)
	}

	restart()
	eventually(t, 2*time.Minute, "the held cluster deleted once its namespace is watched", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &v1.FlinkCluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	if j := simJob(t, key, jobID); j.State != "FINISHED" || j.StopsTriggered != 1 {
		t.Fatalf("job %s after %d stops, want FINISHED by one stop-with-savepoint", j.State, j.StopsTriggered)
	}
}

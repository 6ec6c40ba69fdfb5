package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/resources"
)

// TestRenderingChangeSavesStateFirst: pods that run another rendering of
// the same spec (what an operator upgrade leaves behind) are not rolled
// under a running job. The operator stops the job with a savepoint, keeps
// the pods as they are until the savepoint is done, then applies its own
// rendering and restores the job from that savepoint.
func TestRenderingChangeSavesStateFirst(t *testing.T) {
	parallel(t)
	ns, key := startJobCluster(t, "rerender")
	ctx := context.Background()
	oldJob := getFC(t, ns, "rerender").Status.Job.ID
	tm := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rerender-taskmanager"}, tm); err != nil {
		t.Fatal(err)
	}
	ours := tm.Annotations[resources.AnnotationTemplateHash]
	// The StatefulSet as an earlier operator rendered it: another template
	// hash (the pods themselves are left alone, so nothing rolls yet).
	sim.Engine.SetSavepointFault(key, flinksim.FaultStall)
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"rendered-by-an-earlier-operator"}}}`, resources.AnnotationTemplateHash))
	if err := k8s.Patch(ctx, tm, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the stop-with-savepoint in flight", func() error {
		fc := getFC(t, ns, "rerender")
		if fc.Status.Upgrade == nil || fc.Status.Upgrade.Phase != v1.UpgradeSavingState || simJob(t, key, oldJob).StopsTriggered != 1 {
			return fmt.Errorf("upgrade %+v", fc.Status.Upgrade)
		}
		return nil
	})
	// Two more polls of the stalled savepoint are two more reconciles that
	// went past the children: none may have applied the new rendering.
	waitRequests(t, key, "GET /jobs/{jobid}/savepoints/{triggerid}", 2)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(tm), tm); err != nil {
		t.Fatal(err)
	}
	if got := tm.Annotations[resources.AnnotationTemplateHash]; got != "rendered-by-an-earlier-operator" {
		t.Fatalf("the TaskManagers were re-rendered (%s) before the savepoint completed", got)
	}
	sim.Engine.ClearFaults(key)
	fc := waitUpgradeResult(t, ns, "rerender", "UpgradeSucceeded", 2*time.Minute)
	if fc.Status.Upgrade != nil || fc.Status.Job.ID == oldJob {
		t.Fatalf("upgrade %+v, job %s", fc.Status.Upgrade, fc.Status.Job.ID)
	}
	old := simJob(t, key, oldJob)
	if n := savepointsTaken(old); n != 1 {
		t.Errorf("%d savepoints taken of job %s, want 1", n, oldJob)
	}
	nw := simJob(t, key, fc.Status.Job.ID)
	if nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != old.LatestSavepoint {
		t.Errorf("new job restored from %+v, want the stop's savepoint %s", nw.RestoredFrom, old.LatestSavepoint)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(tm), tm); err != nil {
		t.Fatal(err)
	}
	if got := tm.Annotations[resources.AnnotationTemplateHash]; got != ours {
		t.Errorf("template hash %s after the upgrade, want this operator's %s", got, ours)
	}
	// Events are written asynchronously.
	eventually(t, time.Minute, "a RenderingChanged event", func() error {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == "rerender" && e.Reason == "RenderingChanged" {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
}

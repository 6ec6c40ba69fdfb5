package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/testenv"
)

// TestLegacyJobManagerDeployment: a job cluster created before the
// JobManager became a StatefulSet runs its JobManager as a Deployment. The
// operator keeps that Deployment while its pod template stays (the job runs
// on it, no StatefulSet is created), and replaces it only where its
// Recreate would have replaced the JobManager anyway: in an upgrade, after
// the savepoint that stops the job. The garbage collector (foreground
// deletion) removes its pods before the StatefulSet exists, and the job is
// restored from that savepoint on the StatefulSet's JobManager.
func TestLegacyJobManagerDeployment(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "legacy"
	fc := jobClusterAt(ns, name, "1.17.2")
	// The Deployment an operator before 2026-12-07 created, in place
	// before the cluster exists.
	dep, err := testenv.CreateLegacyJobManager(ctx, k8s, fc, platform.StateStorageURI)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, name, v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	eventually(t, time.Minute, "job running and stable", func() error {
		got := getFC(t, ns, name)
		if got.Status.Job == nil || got.Status.Job.State != string(flink.JobRunning) || got.Status.LastStableSpec == nil {
			return fmt.Errorf("job %+v, stable spec recorded %v", got.Status.Job, got.Status.LastStableSpec != nil)
		}
		return nil
	})
	key := client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}
	kept := &appsv1.Deployment{}
	if err := k8s.Get(ctx, key, kept); err != nil {
		t.Fatal(err)
	}
	if kept.UID != dep.UID || kept.DeletionTimestamp != nil {
		t.Fatalf("the JobManager Deployment was replaced or is being deleted (UID %s, was %s; deleting %v)", kept.UID, dep.UID, kept.DeletionTimestamp)
	}
	if ref := metav1.GetControllerOf(kept); ref == nil || ref.UID != getFC(t, ns, name).UID {
		t.Errorf("the JobManager Deployment's controller is %+v, want the cluster", ref)
	}
	if err := k8s.Get(ctx, key, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a JobManager StatefulSet beside the Deployment: %v", err)
	}
	oldJob := getFC(t, ns, name).Status.Job.ID

	// An upgrade changes the pod template: the savepoint, then the
	// Deployment replaced by a StatefulSet, then the job restored.
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	done := waitUpgradeResult(t, ns, name, "UpgradeSucceeded", 3*time.Minute)
	sim := simKey(ns, name)
	old := simJob(t, sim, oldJob)
	if old.StopsTriggered != 1 || savepointsTaken(old) != 1 || old.State != flink.JobFinished {
		t.Errorf("old job: %d stop-with-savepoint, %d savepoints in all, state %s; want 1, 1, FINISHED", old.StopsTriggered, savepointsTaken(old), old.State)
	}
	sp := done.Status.Job.LastSavepoint
	if sp == nil || sp.Path != old.LatestSavepoint {
		t.Fatalf("last savepoint %+v, the simulator's %q", sp, old.LatestSavepoint)
	}
	nw := simJob(t, sim, done.Status.Job.ID)
	if nw.State != flink.JobRunning || nw.RestoredFrom == nil || nw.RestoredFrom.ExternalPath != sp.Path {
		t.Errorf("new job %s: state %s restored from %+v, want RUNNING from %s", nw.ID, nw.State, nw.RestoredFrom, sp.Path)
	}
	if err := k8s.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the JobManager Deployment after the upgrade: %v, want gone", err)
	}
	if img := jobManagerImage(t, ns, name); img != "flink:1.18.1" {
		t.Errorf("JobManager StatefulSet image %s", img)
	}
	// The replacement is announced.
	events := &corev1.EventList{}
	if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	announced := false
	for _, e := range events.Items {
		announced = announced || e.InvolvedObject.Name == name && strings.Contains(e.Message, "Replacing the JobManager Deployment")
	}
	if !announced {
		t.Errorf("no event announces the Deployment's replacement")
	}
}

package e2e

import (
	"context"
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
	"github.com/datapilot/datapilot/internal/flinksim"
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
// restored from that savepoint on the StatefulSet's JobManager. While
// Flink's REST API does not answer, or its stop-with-savepoint runs past
// savepointTimeout, the Deployment is neither deleted nor replaced and the
// job keeps running.
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
	waitJobStable(t, ns, name)
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
	fk := simKey(ns, name)
	// untouched: the Deployment the cluster started on, not being
	// deleted, no StatefulSet beside it, the old job running unstopped.
	untouched := func(when string) {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, key, d); err != nil || d.UID != dep.UID || d.DeletionTimestamp != nil {
			t.Fatalf("%s: the JobManager Deployment %v (UID %s, deleting %v), want the original", when, err, d.UID, d.DeletionTimestamp)
		}
		if err := k8s.Get(ctx, key, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: a JobManager StatefulSet: %v", when, err)
		}
		if j := simJob(t, fk, oldJob); j.State != flink.JobRunning || j.StopsTriggered > 1 {
			t.Fatalf("%s: old job %s after %d stops", when, j.State, j.StopsTriggered)
		}
	}

	// An upgrade changes the pod template. Flink does not answer: the
	// upgrade waits, holding, with nothing deleted.
	sim.Engine.InjectUnavailable(fk, -1)
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	waitStateHold(t, ns, name, "FlinkUnreachable", time.Minute)
	untouched("Flink unreachable")
	// Flink answers, but its stop-with-savepoint stalls past the timeout:
	// followed, not abandoned, and still nothing deleted.
	sim.Engine.SetSavepointFault(fk, flinksim.FaultStall)
	sim.Engine.InjectUnavailable(fk, 0)
	waitStateHold(t, ns, name, "StopInProgress", time.Minute)
	untouched("stop-with-savepoint past its timeout")
	// The savepoint completes: the Deployment is replaced by a
	// StatefulSet, and the job restored from exactly that savepoint.
	sim.Engine.ClearFaults(fk)
	done := waitUpgradeResult(t, ns, name, "UpgradeSucceeded", 3*time.Minute)
	checkRestoredFromUpgrade(t, fk, oldJob, done)
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

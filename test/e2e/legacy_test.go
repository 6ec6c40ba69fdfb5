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

	// An upgrade changes the pod template: the savepoint, then the
	// Deployment replaced by a StatefulSet, then the job restored.
	patchSpec(t, ns, name, func(fc *v1.FlinkCluster) { fc.Spec.Version = "1.18.1" })
	done := waitUpgradeResult(t, ns, name, "UpgradeSucceeded", 3*time.Minute)
	checkRestoredFromUpgrade(t, simKey(ns, name), oldJob, done)
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

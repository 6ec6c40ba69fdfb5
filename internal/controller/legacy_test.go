package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestLegacyJobManagerDeploymentIsKeptUntilItsTemplateChanges: an older
// cluster's JobManager Deployment is applied as it was built, never beside
// a StatefulSet; a change of its pod template deletes it in the
// foreground, and the StatefulSet is created only once it is gone (envtest
// runs no garbage collector: the test removes the foreground finalizer, as
// the collector does once the pods are gone).
func TestLegacyJobManagerDeploymentIsKeptUntilItsTemplateChanges(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: "older", Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{Version: "1.18.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 1}}
	dep, err := testenv.CreateLegacyJobManager(ctx, k8s, fc, itStateStorage)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "older-jobmanager"}
	// The operator's apply makes the Deployment the cluster's.
	testwait.Until(t, 15*time.Second, func() error {
		if err := k8s.Get(ctx, key, dep); err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(dep); ref == nil || ref.UID != fc.UID {
			return fmt.Errorf("the Deployment's controller is %+v", ref)
		}
		return nil
	})
	// Its readiness counts: the cluster turns Available on it.
	testwait.Until(t, 10*time.Second, func() error {
		if err := k8s.Get(ctx, key, dep); err != nil {
			return err
		}
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if err := k8s.Status().Update(ctx, dep); err != nil {
			return err
		}
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "older-taskmanager"}, s); err != nil {
			return err
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1,
			AvailableReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"}
		return k8s.Status().Update(ctx, s)
	})
	waitCondition(t, ns, "older", v1.ConditionAvailable, metav1.ConditionTrue)
	waitReconciled(t, time.Now())
	if err := k8s.Get(ctx, key, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a JobManager StatefulSet beside the Deployment: %v", err)
	}
	if err := k8s.Get(ctx, key, dep); err != nil || dep.DeletionTimestamp != nil {
		t.Fatalf("the Deployment, its template unchanged: %v, deleting %v", err, dep.DeletionTimestamp)
	}

	// A new image changes the pod template: the Deployment is deleted in
	// the foreground, and nothing replaces it while it stays.
	fc = getCluster(t, ns, "older")
	fc.Spec.Image = "registry.example.com/flink:1.18.1-patched"
	if err := k8s.Update(ctx, fc); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, func() error {
		if err := k8s.Get(ctx, key, dep); err != nil {
			return err
		}
		if dep.DeletionTimestamp == nil {
			return fmt.Errorf("the Deployment is not being deleted")
		}
		return nil
	})
	if !slices.Contains(dep.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Errorf("the Deployment's finalizers %v: not deleted in the foreground", dep.Finalizers)
	}
	waitReconciled(t, time.Now())
	if err := k8s.Get(ctx, key, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a JobManager StatefulSet while the Deployment is being deleted: %v", err)
	}

	// The garbage collector's part, once the pods are gone.
	dep.Finalizers = nil
	if err := k8s.Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	testwait.Until(t, 15*time.Second, func() error { return k8s.Get(ctx, key, sts) })
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != fc.Spec.Image {
		t.Errorf("the JobManager StatefulSet runs %s, want %s", img, fc.Spec.Image)
	}
	if ref := metav1.GetControllerOf(sts); ref == nil || ref.UID != fc.UID {
		t.Errorf("the StatefulSet's controller is %+v", ref)
	}
}

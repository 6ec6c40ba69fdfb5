package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestZeroComponentStatusIsAccepted: a status whose jobManager is the zero
// value, applied after the operator's own write set it, is accepted. Sent
// as {} the API server would store null and refuse it (the rare
// "status.jobManager: Invalid value: null" of a first reconcile).
func TestZeroComponentStatusIsAccepted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := referenceExample(t, ns)
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	// Gone before the next test: the status this test leaves differs from
	// what the operator computes, and its rewrite would count elsewhere.
	t.Cleanup(func() {
		if err := k8s.Delete(ctx, u); err != nil {
			t.Error(err)
		}
		testwait.Until(t, time.Minute, func() error {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(u), &v1.FlinkCluster{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s still there (%v)", u.GetName(), err)
		})
	})
	var fc *v1.FlinkCluster
	testwait.Until(t, time.Minute, func() error {
		fc = getCluster(t, ns, u.GetName())
		if fc.Status.JobManager.Ready == "" {
			return errors.New("no status.jobManager written yet")
		}
		return nil
	})
	zero := *fc.Status.DeepCopy()
	zero.JobManager, zero.TaskManager = v1.ComponentStatus{}, v1.ComponentStatus{}

	// The body as the converter gives it, {} for each zero component: the
	// API server's refusal is why statusApply leaves them out.
	raw, err := controller.StatusApply(fc, zero)
	if err != nil {
		t.Fatal(err)
	}
	naive := raw.DeepCopy()
	naive.Object["status"].(map[string]any)["jobManager"] = map[string]any{}
	naive.Object["status"].(map[string]any)["taskManager"] = map[string]any{}
	err = k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(naive), client.FieldOwner(controller.FieldManager), client.ForceOwnership)
	if err == nil || !strings.Contains(err.Error(), `Invalid value: "null"`) {
		t.Logf("the API server accepted {} for an emptied object (%v): statusApply's pruning may no longer be needed", err)
	}
	// The apply is conditional on the version read: retried while the
	// operator's own writes move the object on.
	testwait.Until(t, 30*time.Second, func() error {
		live := getCluster(t, ns, u.GetName())
		zero := *live.Status.DeepCopy()
		zero.JobManager, zero.TaskManager = v1.ComponentStatus{}, v1.ComponentStatus{}
		raw, err := controller.StatusApply(live, zero)
		if err != nil {
			t.Fatal(err)
		}
		err = k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(raw), client.FieldOwner(controller.FieldManager), client.ForceOwnership)
		if err != nil && !apierrors.IsConflict(err) {
			t.Fatalf("the zero component status was refused: %v", err)
		}
		return err
	})
}

// TestStatusIsNotAppliedOntoARecreatedCluster: a reconcile still holding a
// deleted FlinkCluster must not write its status onto the one re-created
// under the same name (it would hand the new cluster the old one's
// checkpoints to restore). The apply carries the UID it read; the API
// server refuses it with a conflict once the UID differs.
func TestStatusIsNotAppliedOntoARecreatedCluster(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := referenceExample(t, ns)
	if err := k8s.Create(ctx, u.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	old := getCluster(t, ns, u.GetName())
	gone := func() {
		t.Helper()
		if err := k8s.Delete(ctx, old.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		testwait.Until(t, time.Minute, func() error {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(u), &v1.FlinkCluster{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s still there (%v)", u.GetName(), err)
		})
	}
	gone()
	if err := k8s.Create(ctx, u.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		old = getCluster(t, ns, u.GetName())
		gone()
	})
	if fresh := getCluster(t, ns, u.GetName()); fresh.UID == old.UID {
		t.Fatalf("the re-created cluster kept UID %s", old.UID)
	}

	stale := *old.Status.DeepCopy()
	stale.Job = &v1.JobStatus{ID: "0123456789abcdef0123456789abcdef", RestoredFrom: "s3://bucket/checkpoints/old/chk-7"}
	body, err := controller.StatusApply(old, stale)
	if err != nil {
		t.Fatal(err)
	}
	err = k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(body), client.FieldOwner(controller.FieldManager), client.ForceOwnership)
	if !apierrors.IsConflict(err) {
		t.Fatalf("the deleted cluster's status was applied onto the re-created one: %v", err)
	}
	if got := getCluster(t, ns, u.GetName()); got.Status.Job != nil && got.Status.Job.ID == stale.Job.ID {
		t.Errorf("the re-created cluster holds the deleted one's job %+v", got.Status.Job)
	}

	// The same write computed from the live object is accepted (retried
	// while the operator's own writes move the object on).
	testwait.Until(t, 30*time.Second, func() error {
		live := getCluster(t, ns, u.GetName())
		body, err := controller.StatusApply(live, *live.Status.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(body), client.FieldOwner(controller.FieldManager), client.ForceOwnership)
	})
}

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
	if err := k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(raw), client.FieldOwner(controller.FieldManager), client.ForceOwnership); err != nil {
		t.Fatalf("the zero component status was refused: %v", err)
	}
}

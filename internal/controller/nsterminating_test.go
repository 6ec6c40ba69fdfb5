package controller_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/testwait"
)

// A child created in a namespace being deleted is refused by the API
// server (NamespaceLifecycle); the reconciler tells that refusal from
// every other, also wrapped and joined as applyChildren returns it. The
// envtest API server runs no namespace controller, so the namespace stays
// Terminating for the test.
func TestNamespaceTerminatingRefusal(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var refused error
	testwait.Until(t, 10*time.Second, func() error {
		refused = k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}})
		if refused == nil {
			return fmt.Errorf("created in a namespace being deleted")
		}
		return nil
	})
	wrapped := errors.Join(fmt.Errorf("apply ConfigMap child: %w", refused), errors.New("another child"))
	if !controller.NamespaceTerminating(refused) || !controller.NamespaceTerminating(wrapped) {
		t.Errorf("not recognised: %v", refused)
	}
	if controller.NamespaceTerminating(apierrors.NewForbidden(corev1.Resource("configmaps"), "child", errors.New("no"))) || controller.NamespaceTerminating(nil) {
		t.Error("another refusal taken for the namespace's deletion")
	}
}

package operator_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/testwait"
)

// testFinalizerAdmission: with the mutating webhook the operator keeps in
// self-signed mode, a cluster with a job is stored with the cleanup
// finalizer by its own create, in either served version, and the
// operator does not patch it in afterwards; a session cluster with
// nothing to clean up gets none. It runs in TestConversionWebhook's
// environment.
func testFinalizerAdmission(t *testing.T, ce *conversionEnv) {
	ctx := t.Context()
	c := ce.c
	ns := ce.namespace(t, "finalizer")

	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	testwait.Until(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: operator.MutatingWebhookName}, mwc); err != nil {
			return err
		}
		if len(mwc.Webhooks) != 1 || len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			return fmt.Errorf("webhook not injected: %+v", mwc.Webhooks)
		}
		return nil
	})
	job := func(name string) *v1.FlinkCluster {
		fc := memoryCluster(ns, name, "2Gi", nil)
		fc.Spec.Job = &v1.JobSpec{JarURI: "https://artifacts.example.com/job.jar", Parallelism: 1, State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint}
		fc.Spec.Checkpointing = &v1.CheckpointingSpec{Interval: "10s"}
		return fc
	}
	// The API server picks the configuration up a moment after it exists.
	testwait.Until(t, 30*time.Second, func() error {
		probe := job("probe")
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return err
		}
		if !slices.Contains(probe.Finalizers, controller.Finalizer) {
			return errors.New("a dry-run create came back without the finalizer")
		}
		return nil
	})

	fc := job("with-job")
	if err := c.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fc.Finalizers, []string{controller.Finalizer}) {
		t.Errorf("a job cluster was stored with finalizers %v, want %s from its create", fc.Finalizers, controller.Finalizer)
	}
	// The controller finds it there: it reconciles the cluster without a
	// write to the object itself (its status write comes after).
	created := fc.ResourceVersion
	testwait.Until(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
			return err
		}
		if fc.Status.ObservedGeneration == 0 {
			return errors.New("no status written yet")
		}
		return nil
	})
	if fc.Generation != 1 || !slices.Equal(fc.Finalizers, []string{controller.Finalizer}) {
		t.Errorf("after the first reconcile: generation %d, finalizers %v (created at version %s)", fc.Generation, fc.Finalizers, created)
	}

	// v1alpha1, with TaskManager claims to clean up: converted to v1 for
	// the webhook, and the finalizer back.
	alpha := alphaCluster(ns, "alpha-claims", "kafka:9092")
	alpha.Spec.TaskManager.Storage = &v1alpha1.TaskManagerStorage{Size: resource.MustParse("1Gi")}
	if err := c.Create(ctx, alpha); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alpha.Finalizers, []string{controller.Finalizer}) {
		t.Errorf("a v1alpha1 cluster with claims was stored with finalizers %v", alpha.Finalizers)
	}

	session := memoryCluster(ns, "session", "2Gi", nil)
	if err := c.Create(ctx, session); err != nil {
		t.Fatal(err)
	}
	if len(session.Finalizers) != 0 {
		t.Errorf("a session cluster with nothing to clean up was stored with finalizers %v", session.Finalizers)
	}
}

package operator_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

// ignoredNamespace is the --ignore-namespace of TestConversionWebhook's
// operator.
const ignoredNamespace = "left-alone"

// testIgnoredNamespace: a job cluster in an ignored namespace gets no
// finalizer at its create (no operator here would remove it), never enters
// the operator's cache and so is never reconciled, while the same cluster
// next door is. It runs in TestConversionWebhook's environment, after the
// finalizer webhook is known to answer.
func testIgnoredNamespace(t *testing.T, ce *conversionEnv) {
	ctx := t.Context()
	job := func(ns string) *v1.FlinkCluster {
		fc := memoryCluster(ns, "orders", "2Gi", nil)
		fc.Spec.Job = &v1.JobSpec{JarURI: "https://artifacts.example.com/job.jar", Parallelism: 1, State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint}
		fc.Spec.Checkpointing = &v1.CheckpointingSpec{Interval: "10s"}
		return fc
	}
	// A child-like object first in each namespace: the children's
	// informers carry the same field selector as the clusters'.
	child := func(ns string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "managed-elsewhere",
			Labels: map[string]string{resources.LabelManagedBy: resources.ManagedBy}}}
		if err := ce.c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	leftChild := child(ce.namespace(t, ignoredNamespace))
	left := job(ignoredNamespace)
	if err := ce.c.Create(ctx, left); err != nil {
		t.Fatal(err)
	}
	if len(left.Finalizers) != 0 {
		t.Errorf("a job cluster in the ignored namespace was stored with finalizers %v: its deletion would wait for an operator that never comes", left.Finalizers)
	}
	watchedChild := child(ce.namespace(t, "next-door"))
	watched := job("next-door")
	if err := ce.c.Create(ctx, watched); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(watched.Finalizers, controller.Finalizer) {
		t.Errorf("the same cluster next door was stored with finalizers %v, want %s", watched.Finalizers, controller.Finalizer)
	}
	testwait.Until(t, 30*time.Second, func() error {
		if err := ce.c.Get(ctx, client.ObjectKeyFromObject(watched), watched); err != nil {
			return err
		}
		if watched.Status.ObservedGeneration == 0 {
			return errors.New("the cluster next door has no status yet")
		}
		return nil
	})
	// The operator's FlinkClusters come through one watch, in the order
	// they were written: had it carried the ignored cluster, created
	// first, the cache would hold it by now.
	if err := ce.cache.Get(ctx, client.ObjectKeyFromObject(left), &v1.FlinkCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's cache read of the ignored cluster = %v, want NotFound", err)
	}
	// The same for the ConfigMaps, through their own watch.
	testwait.Until(t, 30*time.Second, func() error {
		return ce.cache.Get(ctx, client.ObjectKeyFromObject(watchedChild), &corev1.ConfigMap{})
	})
	if err := ce.cache.Get(ctx, client.ObjectKeyFromObject(leftChild), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator's cache read of the ignored namespace's ConfigMap = %v, want NotFound", err)
	}
	if err := ce.c.Get(ctx, client.ObjectKeyFromObject(left), left); err != nil {
		t.Fatal(err)
	}
	if left.Status.ObservedGeneration != 0 || len(left.Finalizers) != 0 {
		t.Errorf("the ignored cluster was written to: status %+v, finalizers %v", left.Status, left.Finalizers)
	}
}

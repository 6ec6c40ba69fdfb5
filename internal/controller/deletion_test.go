package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/testwait"
)

// flinkHAConfigMap is a ConfigMap as Flink's Kubernetes HA services write
// it (KubernetesUtils#getConfigMapLabels).
func flinkHAConfigMap(ns, name, clusterID string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
		"app": clusterID, "type": "flink-native-kubernetes", "configmap-type": "high-availability"}}}
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	testwait.Until(t, 20*time.Second, func() error {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &v1.FlinkCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("FlinkCluster %s still there (%v)", name, err)
	})
}

// TestHAIdentityAndItsCleanup: a new cluster's HA identity carries its UID
// and is recorded in status; deleting the cluster deletes the ConfigMaps
// Flink's Kubernetes HA services keep under that identity, and no other
// cluster's.
func TestHAIdentityAndItsCleanup(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, kubernetesHACluster(ns, "ha", "")); err != nil {
		t.Fatal(err)
	}
	fc := getCluster(t, ns, "ha")
	want := v1.HighAvailabilityStatus{ClusterID: ns + "-ha-" + string(fc.UID), KubernetesClusterID: "ha-" + string(fc.UID)}
	testwait.Until(t, 15*time.Second, func() error {
		fc = getCluster(t, ns, "ha")
		if fc.Status.HighAvailability == nil || *fc.Status.HighAvailability != want {
			return fmt.Errorf("status.highAvailability = %+v, want %+v", fc.Status.HighAvailability, want)
		}
		if !controllerHasFinalizer(fc) {
			return fmt.Errorf("no finalizer on a cluster with Kubernetes HA: %v", fc.Finalizers)
		}
		return nil
	})
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ha-config"}, cm); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"high-availability.cluster-id: " + want.ClusterID, "kubernetes.cluster-id: " + want.KubernetesClusterID} {
		if !slices.Contains(strings.Split(cm.Data["config.yaml"], "\n"), line) {
			t.Errorf("config.yaml lacks %q:\n%s", line, cm.Data["config.yaml"])
		}
	}

	// What Flink would have written, and a namesake's from before.
	ours := []string{want.KubernetesClusterID + "-cluster-config-map", want.KubernetesClusterID + "-0123456789abcdef0123456789abcdef-config-map"}
	for _, name := range ours {
		if err := k8s.Create(ctx, flinkHAConfigMap(ns, name, want.KubernetesClusterID)); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Create(ctx, flinkHAConfigMap(ns, "ha-cluster-config-map", "ha")); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "ha")
	for _, name := range ours {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("Flink's HA ConfigMap %s outlived the cluster (%v)", name, err)
		}
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ha-cluster-config-map"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("another identity's HA ConfigMap was deleted: %v", err)
	}
}

// TestDeletionWaitsForTheFinalSavepoint: a deleted cluster whose job may be
// running, with Flink unreachable (no JobManager is ready in envtest), is
// held with DeletionBlocked saying why and how to go on; the annotation
// lets it go.
func TestDeletionWaitsForTheFinalSavepoint(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fc := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"},
		Spec: v1.FlinkClusterSpec{
			Version:       "1.19.1",
			JobManager:    v1.JobManagerSpec{Replicas: 1},
			TaskManager:   v1.TaskManagerSpec{Replicas: 1},
			Checkpointing: &v1.CheckpointingSpec{Interval: "10s"},
			Job:           &v1.JobSpec{JarURI: "https://artifacts.example.com/job.jar"},
		},
	}
	if err := k8s.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, func() error {
		fc = getCluster(t, ns, "job")
		if !controllerHasFinalizer(fc) || fc.Status.ObservedGeneration == 0 {
			return fmt.Errorf("finalizers %v, observed generation %d", fc.Finalizers, fc.Status.ObservedGeneration)
		}
		return nil
	})
	// As if the job had been submitted and seen running.
	const jobID = "0123456789abcdef0123456789abcdef"
	patch := []byte(`{"status":{"job":{"id":"` + jobID + `","state":"RUNNING"}}}`)
	if err := k8s.Status().Patch(ctx, fc, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, func() error {
		fc = getCluster(t, ns, "job")
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDeletionBlocked)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != controller.ReasonFlinkUnreachable {
			return fmt.Errorf("DeletionBlocked = %+v", c)
		}
		return nil
	})
	c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionDeletionBlocked)
	for _, s := range []string{jobID, "cannot be stopped with a savepoint", v1.AnnotationDeleteWithoutSavepoint + "=true"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("message %q lacks %q", c.Message, s)
		}
	}
	if !controllerHasFinalizer(fc) || fc.DeletionTimestamp == nil {
		t.Fatalf("deletion not held: finalizers %v", fc.Finalizers)
	}
	patch = []byte(`{"metadata":{"annotations":{"` + v1.AnnotationDeleteWithoutSavepoint + `":"true"}}}`)
	if err := k8s.Patch(ctx, fc, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "job")
}

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
)

// TestLegacyV1alpha1Manifest is the reference design's CI check for a CRD
// version change, on the local platform: the old v1alpha1 manifest applies
// with kubectl, reads back as v1 with spec.kafka.bootstrap.servers, and the
// operator runs it to Available with the bootstrap servers in its pods.
func TestLegacyV1alpha1Manifest(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	manifest := filepath.Join(root, "examples", "v1alpha1-legacy.yaml")
	// The API server learns of the webhook when the operator patches the CRD.
	eventually(t, 30*time.Second, "kubectl apply of the v1alpha1 manifest", func() error {
		return k8s.Create(ctx, &v1alpha1.FlinkCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: v1alpha1.FlinkClusterSpec{Version: "1.17.1", TaskManager: v1alpha1.TaskManagerSpec{Replicas: 1},
				Kafka: &v1alpha1.KafkaSpec{BootstrapServers: "kafka:9092"}},
		}, client.DryRunAll)
	})
	kubectl(t, "apply", "-n", ns, "-f", manifest)

	got := kubectl(t, "get", "-n", ns, "flinkclusters.v1.data.example.com", "legacy-orders", "-o", "jsonpath={.apiVersion} {.spec.kafka.bootstrap.servers}")
	if got != "data.example.com/v1 kafka-0.kafka:9092,kafka-1.kafka:9092" {
		t.Fatalf("The legacy manifest reads back as v1 as %q", got)
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Available", "fc/legacy-orders", "--timeout=120s")

	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-orders-taskmanager"}, sts); err != nil {
		t.Fatal(err)
	}
	env := sts.Spec.Template.Spec.Containers[0].Env
	if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool {
		return e.Name == "KAFKA_BOOTSTRAP_SERVERS" && e.Value == "kafka-0.kafka:9092,kafka-1.kafka:9092"
	}) {
		t.Errorf("TaskManager env %v has no KAFKA_BOOTSTRAP_SERVERS from spec.kafka.bootstrapServers", env)
	}

	// Read through v1alpha1, the status the operator wrote is there too.
	alpha := &v1alpha1.FlinkCluster{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-orders"}, alpha); err != nil {
		t.Fatal(err)
	}
	if alpha.Spec.Kafka == nil || alpha.Spec.Kafka.BootstrapServers != "kafka-0.kafka:9092,kafka-1.kafka:9092" || string(alpha.Status.Phase) != string(v1.PhaseRunning) {
		t.Errorf("As v1alpha1: kafka %+v, phase %s", alpha.Spec.Kafka, alpha.Status.Phase)
	}

	kubectl(t, "delete", "-n", ns, "-f", manifest, "--wait=false")
	eventually(t, time.Minute, "legacy-orders deleted", func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-orders"}, &v1.FlinkCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

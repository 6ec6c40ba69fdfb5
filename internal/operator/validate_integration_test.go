package operator_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/testwait"
)

func memoryCluster(ns, name, tmMemory string, conf v1.FlinkConfiguration) *v1.FlinkCluster {
	fc := &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.FlinkClusterSpec{Version: "1.19.1", TaskManager: v1.TaskManagerSpec{Replicas: 1}, FlinkConfiguration: conf},
	}
	if tmMemory != "" {
		fc.Spec.TaskManager.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tmMemory)}
	}
	return fc
}

// testMemoryAdmission: with the operator's validating webhook (kept by
// the operator in self-signed mode), the real API server refuses a
// FlinkCluster whose TaskManager Flink would not start, in either served
// version, with Flink's reason on the field. It runs in
// TestConversionWebhook's environment: one manager per test binary.
func testMemoryAdmission(t *testing.T, ce *conversionEnv) {
	ctx := t.Context()
	c := ce.c
	ns := ce.namespace(t, "memory")

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	testwait.Until(t, 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: operator.ValidatingWebhookName}, vwc); err != nil {
			return err
		}
		if len(vwc.Webhooks) != 1 || len(vwc.Webhooks[0].ClientConfig.CABundle) == 0 {
			return fmt.Errorf("webhook not injected: %+v", vwc.Webhooks)
		}
		return nil
	})
	small := memoryCluster(ns, "small", "800Mi", nil)
	var refusal error
	// The API server picks the configuration up a moment after it exists.
	testwait.Until(t, 30*time.Second, func() error {
		refusal = c.Create(ctx, small.DeepCopy(), client.DryRunAll)
		if refusal == nil {
			return errors.New("an 800Mi TaskManager was admitted")
		}
		return nil
	})
	if !apierrors.IsInvalid(refusal) || !strings.Contains(refusal.Error(), `spec.taskManager.resources.limits.memory: Invalid value: "800Mi": Flink 1.19.1 would refuse to start the TaskManager with taskmanager.memory.process.size 800m: Sum of configured Framework Heap Memory`) ||
		!strings.Contains(refusal.Error(), "exceed configured Total Flink Memory (352.000mb (369098752 bytes))") {
		t.Fatalf("refusal: %v", refusal)
	}
	if err := c.Create(ctx, small.DeepCopy()); !apierrors.IsInvalid(err) {
		t.Errorf("an 800Mi TaskManager created: %v", err)
	}

	fraction := memoryCluster(ns, "fraction", "", v1.FlinkConfiguration{"taskmanager.memory.managed.fraction": "0.9"})
	if err := c.Create(ctx, fraction); err == nil || !strings.Contains(err.Error(), "spec.flinkConfiguration's taskmanager.memory.managed.fraction=0.9") {
		t.Errorf("a managed fraction that leaves no task heap: %v", err)
	}

	// TaskManagers that would advertise a name no DNS resolves.
	for key, value := range map[string]string{"taskmanager.network.bind-policy": "name", "taskmanager.host": "tm.example"} {
		named := memoryCluster(ns, "named", "2Gi", v1.FlinkConfiguration{key: v1.ConfigValue(value)})
		if err := c.Create(ctx, named, client.DryRunAll); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.flinkConfiguration["+key+"]") {
			t.Errorf("%s: %s admitted or refused for another reason: %v", key, value, err)
		}
	}
	ip := memoryCluster(ns, "ip", "2Gi", v1.FlinkConfiguration{"taskmanager.network.bind-policy": "ip"})
	if err := c.Create(ctx, ip, client.DryRunAll); err != nil {
		t.Errorf("bind-policy ip, Flink's default: %v", err)
	}

	// The same cluster written as v1alpha1 is refused too (the webhook
	// matches equivalent versions and sees it as v1).
	alpha := alphaCluster(ns, "alpha-small", "kafka:9092")
	alpha.Spec.TaskManager.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("800Mi")}
	if err := c.Create(ctx, alpha); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "would refuse to start the TaskManager") {
		t.Errorf("an 800Mi TaskManager as v1alpha1: %v", err)
	}

	// A cluster Flink starts is admitted; shrinking it is refused.
	fits := memoryCluster(ns, "fits", "2Gi", nil)
	if err := c.Create(ctx, fits); err != nil {
		t.Fatalf("a 2Gi TaskManager: %v", err)
	}
	fits.Spec.TaskManager.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("800Mi")
	if err := c.Update(ctx, fits); !apierrors.IsInvalid(err) {
		t.Errorf("shrinking to 800Mi: %v", err)
	}
	// An update that leaves the spec alone is not checked again. (The
	// operator writes the object too: a conflict is retried.)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(fits), fits); err != nil {
			return err
		}
		fits.Labels = map[string]string{"team": "payments"}
		return c.Update(ctx, fits)
	}); err != nil {
		t.Errorf("a label on an admitted cluster: %v", err)
	}
}

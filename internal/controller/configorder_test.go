package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestConfigurationGoesBeforeThePodsRoll: a configuration change whose
// ConfigMap the API server refuses does not roll the TaskManagers, which
// would start on the old configuration under the new hash and never roll
// again; once the ConfigMap can be written, both change.
func TestConfigurationGoesBeforeThePodsRoll(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, referenceExample(t, ns)); err != nil {
		t.Fatal(err)
	}
	stsKey := client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-taskmanager"}
	cmKey := client.ObjectKey{Namespace: ns, Name: "realtime-warehouse-config"}
	before := &appsv1.StatefulSet{}
	testwait.Until(t, 10*time.Second, func() error { return k8s.Get(ctx, stsKey, before) })

	// Updates of ConfigMaps in this namespace are refused at admission.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "configmaps frozen by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, o) })
	}
	testwait.Until(t, 30*time.Second, func() error {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, cmKey, cm); err != nil {
			return err
		}
		cm.Labels = map[string]string{"probe": "1"}
		if err := k8s.Update(ctx, cm, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "frozen") {
			return fmt.Errorf("the policy is not in force yet (%v)", err)
		}
		return nil
	})

	fc := getCluster(t, ns, "realtime-warehouse")
	base := fc.DeepCopy()
	fc.Spec.Checkpointing.Interval = "1m"
	if err := k8s.Patch(ctx, fc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	// The operator tried: its ApplyFailed event names the refusal.
	testwait.Until(t, 30*time.Second, func() error {
		events := &eventsv1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "ApplyFailed" && strings.Contains(e.Note, "frozen") {
				return nil
			}
		}
		return errors.New("no ApplyFailed event for the refused ConfigMap")
	})
	hash := func() string {
		sts := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, stsKey, sts); err != nil {
			t.Fatal(err)
		}
		return sts.Spec.Template.Annotations[resources.AnnotationConfigHash]
	}
	if got, was := hash(), before.Spec.Template.Annotations[resources.AnnotationConfigHash]; got != was {
		t.Fatalf("the TaskManagers rolled to configuration %s while their ConfigMap still held %s", got, was)
	}

	if err := k8s.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, func() error {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, cmKey, cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data["flink-conf.yaml"], "execution.checkpointing.interval: 1m\n") {
			return errors.New("ConfigMap not updated yet")
		}
		if hash() == before.Spec.Template.Annotations[resources.AnnotationConfigHash] {
			return errors.New("TaskManagers not rolled yet")
		}
		return nil
	})
}

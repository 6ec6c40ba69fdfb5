package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/controller"
	"github.com/datapilot/datapilot/internal/testwait"
)

// managers lists an object's field managers as "manager/operation".
func managers(o metav1.Object) map[string]bool {
	out := map[string]bool{}
	for _, m := range o.GetManagedFields() {
		out[m.Manager+"/"+string(m.Operation)] = true
	}
	return out
}

// A child that does not exist is created with a POST (its fields recorded
// for the operator's Update entry), and the first change hands those
// fields to the operator's apply: a field the rendering drops then leaves
// the object. With the created fields left to the Update entry, the
// dropped label would stay on the TaskManagers' pods for good.
func TestCreatedChildrenDropWhatTheRenderingDrops(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	u := example(t, ns, "dedicated-pool.yaml")
	if err := k8s.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	name := u.GetName()
	key := client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}
	var sts appsv1.StatefulSet
	testwait.Until(t, 15*time.Second, func() error { return k8s.Get(ctx, key, &sts) })
	if m := managers(&sts); !m[controller.FieldManager+"/Update"] || m[controller.FieldManager+"/Apply"] {
		t.Errorf("new StatefulSet's field managers %v, want the operator's create (Update) alone", m)
	}
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if m := managers(&cm); !m[controller.FieldManager+"/Update"] {
		t.Errorf("new ConfigMap's field managers %v, want the operator's create", m)
	}
	// Created typed, so as protobuf (asTyped): JSON into an unstructured
	// map was a tenth of the operator's CPU. Four are created side by
	// side (a session cluster's budget comes once Flink runs a job on
	// it, which envtest has no Flink for): wait for each.
	markReady(t, ns, name)
	for _, r := range []string{"configmaps", "services", "statefulsets"} {
		testwait.Until(t, 15*time.Second, func() error {
			if ct, ok := createTypes.Load(ns + " " + r); !ok || ct != runtime.ContentTypeProtobuf {
				return fmt.Errorf("the operator created %s as %v, want %s", r, ct, runtime.ContentTypeProtobuf)
			}
			return nil
		})
	}
	if sts.Spec.Template.Labels["team"] != "data-platform" {
		t.Fatalf("TaskManager pod labels %v, want the podTemplate's team", sts.Spec.Template.Labels)
	}

	fc := getCluster(t, ns, name)
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"taskManager":{"podTemplate":{"metadata":{"labels":{"team":null}}}}}}`))
	if err := k8s.Patch(ctx, fc, patch); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, func() error {
		if err := k8s.Get(ctx, key, &sts); err != nil {
			return err
		}
		if v, ok := sts.Spec.Template.Labels["team"]; ok {
			return fmt.Errorf("the dropped label team=%s is still on the TaskManager pods", v)
		}
		return nil
	})
	if m := managers(&sts); m[controller.FieldManager+"/Update"] || !m[controller.FieldManager+"/Apply"] {
		t.Errorf("updated StatefulSet's field managers %v, want the operator's apply alone", m)
	}
}

// The cache keeps of an object's managed fields only the name of the
// operator's own Update entry on the object itself, without its fields.
func TestKeepCreatedFieldsEntry(t *testing.T) {
	fields := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}
	entry := func(manager string, op metav1.ManagedFieldsOperationType, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, FieldsType: "FieldsV1", FieldsV1: fields}
	}
	for _, tc := range []struct {
		name    string
		in      []metav1.ManagedFieldsEntry
		pending bool
	}{
		{"created by the operator", []metav1.ManagedFieldsEntry{entry(controller.FieldManager, metav1.ManagedFieldsOperationUpdate, ""), entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status")}, true},
		{"taken over", []metav1.ManagedFieldsEntry{entry(controller.FieldManager, metav1.ManagedFieldsOperationApply, "")}, false},
		{"the operator's status write", []metav1.ManagedFieldsEntry{entry(controller.FieldManager, metav1.ManagedFieldsOperationUpdate, "status")}, false},
		{"someone else's update", []metav1.ManagedFieldsEntry{entry("kubectl", metav1.ManagedFieldsOperationUpdate, "")}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &metav1.ObjectMeta{ManagedFields: tc.in}
			controller.KeepCreatedFieldsEntry(o)
			if got := controller.CreatedFieldsPending(o); got != tc.pending {
				t.Errorf("pending = %v after the cache's transform, want %v", got, tc.pending)
			}
			if n := len(o.ManagedFields); tc.pending && n != 1 || !tc.pending && n != 0 {
				t.Errorf("the cache keeps %d entries: %+v", n, o.ManagedFields)
			}
			for _, m := range o.ManagedFields {
				if m.FieldsV1 != nil {
					t.Errorf("the cache keeps the fields of %s", m.Manager)
				}
			}
		})
	}
}

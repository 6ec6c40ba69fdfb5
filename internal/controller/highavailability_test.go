package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

// kubernetesHACluster is a small session cluster with Kubernetes HA.
func kubernetesHACluster(ns, name, account string) *v1.FlinkCluster {
	return &v1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.FlinkClusterSpec{
			Version:            "1.19.1",
			ServiceAccountName: account,
			JobManager:         v1.JobManagerSpec{Replicas: 1},
			TaskManager:        v1.TaskManagerSpec{Replicas: 1},
			HighAvailability:   &v1.HighAvailabilitySpec{Mode: v1.HighAvailabilityKubernetes},
		},
	}
}

// mayUseConfigMaps asks the API server's authorizer whether a ServiceAccount
// may use verb on ConfigMaps; RBAC sees new bindings a moment late, so
// tests wait on it.
func mayUseConfigMaps(ctx context.Context, ns, account, verb string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + account,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"},
	}}
	if err := k8s.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// podAccounts are the ServiceAccounts of the JobManager and TaskManager pod
// templates.
func podAccounts(t *testing.T, ns, name string) (string, string) {
	t.Helper()
	ctx := context.Background()
	jm, tm := &appsv1.StatefulSet{}, &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-jobmanager"}, jm); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-taskmanager"}, tm); err != nil {
		t.Fatal(err)
	}
	return jm.Spec.Template.Spec.ServiceAccountName, tm.Spec.Template.Spec.ServiceAccountName
}

// TestKubernetesHAGetsItsOwnAccount: a cluster with Kubernetes HA and no
// serviceAccountName gets a ServiceAccount and a RoleBinding it owns to
// the platform's HA ClusterRole (the ConfigMap verbs Flink uses); its pods
// run as that account, a deleted RoleBinding comes back, one an older
// operator bound to a Role of its own is rebound, and both go when HA
// changes mode.
func TestKubernetesHAGetsItsOwnAccount(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := k8s.Create(ctx, kubernetesHACluster(ns, "ha", "")); err != nil {
		t.Fatal(err)
	}
	fc := getCluster(t, ns, "ha")
	key := client.ObjectKey{Namespace: ns, Name: "ha-ha"}
	sa, binding := &corev1.ServiceAccount{}, &rbacv1.RoleBinding{}
	for _, obj := range []client.Object{sa, binding} {
		testwait.Until(t, 10*time.Second, func() error { return k8s.Get(ctx, key, obj) })
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != fc.UID || ref.Kind != "FlinkCluster" {
			t.Errorf("%T %s has controller %+v, want the FlinkCluster", obj, obj.GetName(), ref)
		}
		if obj.GetLabels()[resources.LabelManagedBy] != resources.ManagedBy {
			t.Errorf("%T %s lacks the managed-by label the cache selects on", obj, obj.GetName())
		}
	}
	if binding.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: resources.DefaultHAClusterRole}) {
		t.Errorf("RoleBinding refers to %+v", binding.RoleRef)
	}
	if want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ha-ha", Namespace: ns}}; !slices.Equal(binding.Subjects, want) {
		t.Errorf("RoleBinding subjects = %+v, want %+v", binding.Subjects, want)
	}
	if jmSA, tmSA := podAccounts(t, ns, "ha"); jmSA != "ha-ha" || tmSA != "ha-ha" {
		t.Errorf("pods run as %q (JobManager) and %q (TaskManagers), want ha-ha", jmSA, tmSA)
	}
	// The real RBAC authorizer agrees the account may do what Flink does.
	testwait.Until(t, 10*time.Second, func() error {
		for _, verb := range resources.HAConfigMapVerbs() {
			if ok, err := mayUseConfigMaps(ctx, ns, "ha-ha", verb); err != nil || !ok {
				return fmt.Errorf("ha-ha may not %s configmaps (%v)", verb, err)
			}
		}
		return nil
	})
	c := meta.FindStatusCondition(waitCondition(t, ns, "ha", v1.ConditionHighAvailabilityPermissions, metav1.ConditionTrue).Status.Conditions,
		v1.ConditionHighAvailabilityPermissions)
	if c.Reason != "OperatorManaged" {
		t.Errorf("condition = %+v, want reason OperatorManaged", c)
	}

	// Someone deletes the RoleBinding: the watch brings the operator back
	// to it.
	if err := k8s.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, func() error {
		again := &rbacv1.RoleBinding{}
		if err := k8s.Get(ctx, key, again); err != nil {
			return err
		}
		if again.UID == binding.UID {
			return errors.New("the old RoleBinding is still there")
		}
		return nil
	})
	// An older operator's binding to a Role of its own (its roleRef cannot
	// change) is replaced by one to the ClusterRole.
	// The operator recreates a deleted binding at once, so the legacy one
	// takes the name in the gap between a delete and the operator's create.
	testwait.Until(t, 10*time.Second, func() error {
		current := &rbacv1.RoleBinding{}
		if err := k8s.Get(ctx, key, current); err != nil {
			return err
		}
		if err := k8s.Delete(ctx, current); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		legacy := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name, Labels: current.Labels, OwnerReferences: current.OwnerReferences},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: key.Name}, Subjects: current.Subjects}
		return k8s.Create(ctx, legacy)
	})
	testwait.Until(t, 10*time.Second, func() error {
		again := &rbacv1.RoleBinding{}
		if err := k8s.Get(ctx, key, again); err != nil {
			return err
		}
		if again.RoleRef.Kind != "ClusterRole" {
			return fmt.Errorf("still bound to %+v", again.RoleRef)
		}
		return nil
	})

	// Without Kubernetes HA the account goes, and the pods use the default.
	fc = getCluster(t, ns, "ha")
	base := fc.DeepCopy()
	fc.Spec.HighAvailability.Mode = v1.HighAvailabilityNone
	if err := k8s.Patch(ctx, fc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&rbacv1.RoleBinding{}, &corev1.ServiceAccount{}} {
		testwait.Until(t, 10*time.Second, func() error {
			err := k8s.Get(ctx, key, obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%T %s still there (%v)", obj, key.Name, err)
		})
	}
	testwait.Until(t, 10*time.Second, func() error {
		if jmSA, tmSA := podAccounts(t, ns, "ha"); jmSA != "" || tmSA != "" {
			return fmt.Errorf("pods run as %q and %q, want the default", jmSA, tmSA)
		}
		return nil
	})
	// A status of the new generation carries no HA condition.
	waitCondition(t, ns, "ha", v1.ConditionAvailable, metav1.ConditionFalse)
	if c := meta.FindStatusCondition(getCluster(t, ns, "ha").Status.Conditions, v1.ConditionHighAvailabilityPermissions); c != nil {
		t.Errorf("HA mode none still has %+v", c)
	}
}

// TestUserHAAccountIsReviewed: with a serviceAccountName and Kubernetes HA,
// the operator creates no account but reviews the named one: False naming
// the missing verbs, True once a Role grants them. Between reviews a
// converged cluster costs no request that writes, reviews included.
func TestUserHAAccountIsReviewed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	grant := func(name string, verbs ...string) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "flink", Namespace: ns}}}
		for _, obj := range []client.Object{role, binding} {
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		testwait.Until(t, 10*time.Second, func() error {
			if ok, err := mayUseConfigMaps(ctx, ns, "flink", verbs[0]); err != nil || !ok {
				return fmt.Errorf("the authorizer does not see Role %s yet (%v)", name, err)
			}
			return nil
		})
	}
	// At first the account may do what Flink's documentation lists, but not
	// all that its code needs.
	grant("flink-documented", "get", "list", "watch", "create", "update", "delete")
	if err := k8s.Create(ctx, kubernetesHACluster(ns, "ha", "flink")); err != nil {
		t.Fatal(err)
	}

	fc := waitCondition(t, ns, "ha", v1.ConditionHighAvailabilityPermissions, metav1.ConditionFalse)
	c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionHighAvailabilityPermissions)
	if want := "ServiceAccount flink may not patch, deletecollection ConfigMaps in namespace " + ns; c.Reason != "MissingPermissions" || !strings.Contains(c.Message, want) {
		t.Errorf("condition = %s: %s, want MissingPermissions: %s", c.Reason, c.Message, want)
	}
	if jmSA, tmSA := podAccounts(t, ns, "ha"); jmSA != "flink" || tmSA != "flink" {
		t.Errorf("pods run as %q and %q, want flink", jmSA, tmSA)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ha-ha"}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
		t.Errorf("the operator made an account for a cluster that names one: %v", err)
	}

	// A Role grants the rest. A missing right is reviewed again within a
	// minute; a spec change reviews at once, which keeps this test short.
	grant("flink-rest", "patch", "deletecollection")
	fc = getCluster(t, ns, "ha")
	base := fc.DeepCopy()
	fc.Spec.TaskManager.Replicas = 2
	if err := k8s.Patch(ctx, fc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	fc = waitCondition(t, ns, "ha", v1.ConditionHighAvailabilityPermissions, metav1.ConditionTrue)
	if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionHighAvailabilityPermissions); c.Reason != "PermissionsGranted" {
		t.Errorf("condition = %+v, want reason PermissionsGranted", c)
	}

	// Converged: reconciles woken by the cluster send no review.
	markReady(t, ns, "ha")
	waitCondition(t, ns, "ha", v1.ConditionAvailable, metav1.ConditionTrue)
	start, reconciles := settledWrites(t, ns), reconcileCount(t)
	for i := range 3 {
		fc = getCluster(t, ns, "ha")
		base := fc.DeepCopy()
		fc.Annotations = map[string]string{"touched": fmt.Sprint(i)}
		if err := k8s.Patch(ctx, fc, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	// The touches wake at once (the workqueue may merge them into one).
	waitReconciled(t, time.Now())
	if n := reconcileCount(t); n < reconciles+1 {
		t.Fatalf("%v reconciles since the touch, want at least 1", n-reconciles)
	}
	if got := settledWrites(t, ns) - start; got != 0 {
		t.Errorf("a converged cluster with a reviewed account cost %d writes, want 0", got)
	}
}

// settledWrites waits until the operator's write count for namespace ns
// stops moving (events and status writes in flight) and returns it.
func settledWrites(t *testing.T, ns string) int64 {
	t.Helper()
	var last int64 = -1
	testwait.Until(t, 20*time.Second, func() error {
		now := writesIn(ns)
		if now != last {
			last = now
			time.Sleep(1500 * time.Millisecond)
			return errors.New("writes still moving")
		}
		return nil
	})
	return last
}

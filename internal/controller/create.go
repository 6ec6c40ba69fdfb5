package controller

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Taking over the created fields reads each kind created by POST once.
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get
// +kubebuilder:rbac:groups="",resources=services,verbs=get
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get

// write sends one child: a child the cache does not hold is created (a
// POST, which the API server takes without the merge of a server-side
// apply), any other applied. A create that finds the object exists (the
// cache lagged behind a write) applies instead. It returns the
// resourceVersion of an object it created: what it holds is exactly what
// was sent.
func (r *Reconciler) write(ctx context.Context, c child, a action) (created string, err error) {
	if a == actionReplace {
		// Foreground: the object stays until its pods are gone, and
		// nothing replaces it while it stays. The UID precondition deletes
		// only the object the decision read.
		uid := c.cached.GetUID()
		err := r.Client.Delete(ctx, c.cached, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or another object of the name now (a conflict on
			// the UID): the next reconcile reads which.
			return "", nil
		}
		return "", err
	}
	if !createdByPost[c.kind] {
		return "", r.Client.Apply(ctx, c.desired, client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	if a == actionCreate {
		obj, err := asTyped(r.Client.Scheme(), c.desired)
		if err != nil {
			return "", err
		}
		err = r.Client.Create(ctx, obj, client.FieldOwner(FieldManager))
		if err == nil {
			return obj.GetResourceVersion(), nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	} else if CreatedFieldsPending(c.cached) {
		if err := r.ownCreatedFields(ctx, c); err != nil {
			return "", err
		}
	}
	return "", r.Client.Apply(ctx, c.desired, client.FieldOwner(FieldManager), client.ForceOwnership)
}

// createdByPost are the kinds created with a POST: those the operator may
// also get, which taking over the created fields needs (ownCreatedFields).
// The Kubernetes HA account (a ServiceAccount and a RoleBinding, rare) is
// always applied.
var createdByPost = map[string]bool{"ConfigMap": true, "Service": true, "Deployment": true, "StatefulSet": true, "PodDisruptionBudget": true}

// ownCreatedFields hands the fields a create recorded for the operator (an
// Update entry of its field manager) to its server-side apply entry, as
// client-go's csaupgrade does for kubectl: otherwise a field the rendering
// later drops would stay, owned by the create, and never be removed. The
// cache keeps only the names of such entries (CreatedFieldsPending), so
// this reads the object around it, once per child: on its first change
// after the create.
//
// The patch carries the resourceVersion it read, so a write in between
// (kube-controller-manager's status of a Deployment, say, which under load
// lands within a PATCH's latency) is a conflict: read again and retry,
// rather than fail the child's change with an ApplyFailed.
func (r *Reconciler) ownCreatedFields(ctx context.Context, c child) error {
	obj, err := asObject(c.desired)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.APIReader.Get(ctx, key, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldManager), FieldManager)
		if err != nil || patch == nil {
			return err
		}
		return r.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
	})
	if err != nil {
		return fmt.Errorf("take over the created fields of %s %s: %w", c.kind, c.name, err)
	}
	return nil
}

// asTyped is an apply configuration as the typed object it describes, so
// its create goes as protobuf, both ways, as controller-runtime sends every
// built-in kind it knows the type of. Sent unstructured, the create went as
// JSON and its answer was decoded into a map: a tenth of the operator's
// CPU at N = 400 (its profile: unstructuredClient.Create), and the API
// server's JSON codec on both sides. The API server decodes the same object
// either way: the converter fills only what the configuration sets, what
// it leaves zero is what a JSON body without the field decodes to, and
// the empty lists and maps protobuf cannot carry were never sent
// (ToUnstructured drops them; TestCreatedTypedAsTheJSONWouldDecode). One
// difference: a field this API server does not know (an older server) is
// dropped without the warning a JSON create drew.
func asTyped(scheme *runtime.Scheme, ac runtime.ApplyConfiguration) (client.Object, error) {
	u, err := asObject(ac)
	if err != nil {
		return nil, err
	}
	o, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", u.GetKind(), err)
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("create %s: %T is not an object", u.GetKind(), o)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("convert %s: %w", u.GetKind(), err)
	}
	return obj, nil
}

// asObject is an apply configuration as the object it describes.
func asObject(ac runtime.ApplyConfiguration) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ac)
	if err != nil {
		return nil, fmt.Errorf("convert apply configuration: %w", err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// createEntry: a managed fields entry a create of the operator recorded
// (its Update entry on the object itself, not a subresource).
func createEntry(m metav1.ManagedFieldsEntry) bool {
	return m.Manager == FieldManager && m.Operation == metav1.ManagedFieldsOperationUpdate && m.Subresource == ""
}

// CreatedFieldsPending reports whether an object still has the operator's
// Update entry from its create, by the name the cache keeps of it
// (KeepCreatedFieldsEntry).
func CreatedFieldsPending(o metav1.Object) bool {
	return slices.ContainsFunc(o.GetManagedFields(), createEntry)
}

// KeepCreatedFieldsEntry is the cache's managed fields of an object: of
// all its entries only the operator's Update entry, without its fields (a
// few bytes, where the entries in full are about as large as the rest of
// a child), so CreatedFieldsPending can tell without a read.
func KeepCreatedFieldsEntry(o metav1.Object) {
	var keep []metav1.ManagedFieldsEntry
	for _, m := range o.GetManagedFields() {
		if createEntry(m) {
			keep = append(keep, metav1.ManagedFieldsEntry{Manager: m.Manager, Operation: m.Operation})
		}
	}
	o.SetManagedFields(keep)
}

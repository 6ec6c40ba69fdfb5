package controller

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// write sends one child: a child the cache does not hold is created (a
// POST, which the API server takes without the merge of a server-side
// apply), any other applied. A create that finds the object exists (the
// cache lagged behind a write) applies instead.
func (r *Reconciler) write(ctx context.Context, c child, a action) error {
	if !createdByPost[c.kind] {
		return r.Client.Apply(ctx, c.desired, client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	if a == actionCreate {
		obj, err := asObject(c.desired)
		if err != nil {
			return err
		}
		err = r.Client.Create(ctx, obj, client.FieldOwner(FieldManager))
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if err := r.ownCreatedFields(ctx, c); err != nil {
		return err
	}
	return r.Client.Apply(ctx, c.desired, client.FieldOwner(FieldManager), client.ForceOwnership)
}

// createdByPost are the kinds created with a POST: those the operator may
// also get, which taking over the created fields needs (ownCreatedFields).
// The Kubernetes HA account (a ServiceAccount and a RoleBinding, rare) is
// always applied.
var createdByPost = map[string]bool{"ConfigMap": true, "Service": true, "Deployment": true, "StatefulSet": true, "PodDisruptionBudget": true}

// ownCreatedFields hands the fields a create recorded for the operator (an
// Update entry of its field manager) to its server-side apply entry, as
// client-go's csaupgrade does for kubectl: otherwise a field the rendering
// later drops would stay, owned by the create, and never be removed. It
// reads the object around the cache (which strips managed fields) and
// writes only while an Update entry remains: on the first change after the
// create.
func (r *Reconciler) ownCreatedFields(ctx context.Context, c child) error {
	obj, err := asObject(c.desired)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if err := r.APIReader.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldManager), FieldManager)
	if err != nil || patch == nil {
		return err
	}
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("take over the created fields of %s %s: %w", c.kind, c.name, err)
	}
	return nil
}

// asObject is an apply configuration as the object it describes.
func asObject(ac runtime.ApplyConfiguration) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("marshal apply configuration: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("unmarshal apply configuration: %w", err)
	}
	return u, nil
}

package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// applyStatus writes the status by server-side apply under Datapilot's
// field manager: a patch of exactly the fields it owns, never an update of
// the whole object, so it cannot overwrite what another writer set. It is
// conditional on the version it was computed from (see statusApply): a
// cluster deleted and re-created under the same name meanwhile refuses it
// with a conflict, so the old cluster's job and checkpoints never land on
// the new one, and the next reconcile decides from the object as it is.
func (r *Reconciler) applyStatus(ctx context.Context, fc *v1.FlinkCluster, st v1.FlinkClusterStatus) error {
	u, err := statusApply(fc, st)
	if err != nil {
		return err
	}
	read := fc.ResourceVersion
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return err
	}
	fc.Status = st
	// u holds the API server's answer: the version after the write.
	if written := u.GetResourceVersion(); written != "" {
		r.freshness.wrote(fc, read, written)
		fc.ResourceVersion = written
	}
	return nil
}

// statusApply is the apply request's body for st. A status field that is
// an empty object (a component never observed) is left out, not sent as
// {}: server-side apply stores an object emptied of fields this manager
// owned as null, which the schema refuses (kubernetes/kubernetes#135841).
// Left out, the manager's fields are released and removed, which is what
// the zero value says.
//
// metadata.resourceVersion makes the write conditional: the API server
// checks it against the stored object before it applies anything
// (Store#Update's optimistic lock), and a re-created object always has a
// newer version (etcd's revisions only grow). A metadata.uid would not do:
// the status subresource's strategy copies the stored metadata over the
// request's (customresource statusStrategy#PrepareForUpdate), so a
// mismatched UID is silently dropped, not refused.
func statusApply(fc *v1.FlinkCluster, st v1.FlinkClusterStatus) (*unstructured.Unstructured, error) {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, err
	}
	for k, v := range status {
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			delete(status, k)
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "FlinkCluster",
		"metadata":   map[string]any{"name": fc.Name, "namespace": fc.Namespace, "resourceVersion": fc.ResourceVersion},
		"status":     status,
	}}, nil
}

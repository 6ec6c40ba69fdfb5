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
// the whole object, so it cannot overwrite what another writer set.
func (r *Reconciler) applyStatus(ctx context.Context, fc *v1.FlinkCluster, st v1.FlinkClusterStatus) error {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "FlinkCluster",
		"metadata":   map[string]any{"name": fc.Name, "namespace": fc.Namespace},
		"status":     status,
	}}
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

package testenv

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// CreateLegacyJobManager creates, before fc exists, the JobManager
// Deployment an operator before 2026-12-07 created for it, as that operator
// built it on a platform whose state storage is stateStorage. fc is
// rendered as admission leaves it (a dry-run create, the mutating
// webhook's defaults included); the Deployment has no owner yet, which the
// operator's first apply sets.
func CreateLegacyJobManager(ctx context.Context, c client.Client, fc *v1.FlinkCluster, stateStorage string) (*appsv1.Deployment, error) {
	dry := fc.DeepCopy()
	if err := c.Create(ctx, dry, client.DryRunAll); err != nil {
		return nil, err
	}
	d, err := resources.Build(dry, resources.Platform{Storage: &v1.StorageSpec{URI: stateStorage}})
	if err != nil {
		return nil, err
	}
	legacy := d.LegacyJobManager()
	legacy.OwnerReferences = nil
	raw, err := json.Marshal(legacy)
	if err != nil {
		return nil, err
	}
	dep := &appsv1.Deployment{}
	if err := json.Unmarshal(raw, dep); err != nil {
		return nil, err
	}
	return dep, c.Create(ctx, dep)
}

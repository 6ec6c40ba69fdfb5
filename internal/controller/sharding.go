package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Shards is this replica's share of the clusters (internal/sharding.Sharder).
type Shards interface {
	// Context is the context of the cluster's shard while this replica
	// leads it, cancelled when the lease is lost; false when it does not.
	Context(types.NamespacedName) (context.Context, bool)
	// Owns reports whether this replica leads the cluster's shard.
	Owns(types.NamespacedName) bool
	// Events carries the clusters of each shard just acquired.
	Events() <-chan event.GenericEvent
}

// shardContext is the reconcile's context, cancelled also when the
// cluster's shard is lost, so no write of this replica follows the loss
// by more than a request already on the wire; nil when another replica
// owns the cluster. release frees the context's resources.
func (r *Reconciler) shardContext(ctx context.Context, key types.NamespacedName) (_ context.Context, release func()) {
	if r.Shards == nil {
		return ctx, func() {}
	}
	shard, ok := r.Shards.Context(key)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(shard, cancel)
	return ctx, func() { stop(); cancel() }
}

// ownedByShard admits the events of the clusters this replica owns, and of
// their children (by their controller reference) and pods (clusterOf).
func ownedByShard(s Shards) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		if _, ok := o.(*v1.FlinkCluster); ok {
			return s.Owns(client.ObjectKeyFromObject(o))
		}
		if key, ok := clusterOf(o); ok {
			return s.Owns(key)
		}
		return false
	})
}

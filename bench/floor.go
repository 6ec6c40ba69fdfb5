package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// The floor is what any operator of this API pays the control plane for a
// session cluster, with its own decisions costing nothing: the user's
// create of the FlinkCluster (through the operator's admission webhooks,
// stored as v1 and converted for v1alpha1's watch cache, as every write
// of it is), the baseline's four children owned by it (so the garbage
// collector tracks them), and one status write once the pods are ready,
// with the conditions that say so (no budget: a session cluster gets one
// once Flink runs a job on it). The bench's client does all of it in a
// namespace the operator ignores (--ignore-namespace), so the operator
// neither caches nor reconciles those clusters, and no Flink REST API is
// probed. Its ratio to the baseline is the lowest an operator of this API
// could reach on this platform creating the children as the baseline's
// client does; the session clusters' ratio to it is the operator's own
// work.
func floorNS(round int) string { return fmt.Sprintf("bench-floor-%d", round) }

// floorPhase creates n clusters in ns the floor's way and waits until the
// bench's watch has seen every one Available.
func floorPhase(ctx context.Context, k8s client.Client, c config, meter cpuMeter, watch *readiness, ns string, n int) (phase, error) {
	p := phase{n: n}
	if err := ensureNamespace(ctx, k8s, ns); err != nil {
		return p, err
	}
	// One status write per cluster as soon as its pods are ready, while
	// the rest are still being created, by as many writers as the
	// operator has workers.
	late := whenReady(watch, ns, n, c.workers, func(name string) error {
		return writeFloorStatus(ctx, k8s, ns, name)
	})
	defer late.finish()

	cpu0 := meter.sample()
	start := time.Now()
	err := parallel(n, c.concurrency, func(i int) error {
		fc := benchCluster(ns, i)
		if err := k8s.Create(ctx, fc); err != nil {
			return err
		}
		// Built from the created object: owned by it, by its UID.
		d, err := resources.Build(fc, benchPlatform)
		if err != nil {
			return err
		}
		for _, obj := range []any{d.ConfigMap, d.JobManagerService, d.JobManager, d.TaskManager} {
			if err := shapes[0].send(ctx, k8s, ns, obj); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	err = waitFor(ctx, c.timeout, func() (int, error) {
		left, err := late.left()
		return max(left, n-watch.converged(ns, false)), err
	})
	p.took = time.Since(start)
	p.cpu = meter.sample().since(cpu0)
	return p, err
}

// writeFloorStatus applies the status a session cluster's first write
// gives it once its pods are ready, as the operator applies it
// (server-side): the health conditions and the two components' counts.
// The operator's own is larger (the spec it deployed, more conditions):
// the floor errs low.
func writeFloorStatus(ctx context.Context, k8s client.Client, ns, name string) error {
	// No read first: the operator reads its cache, not the API server, and
	// the floor's clusters are created once and never edited (generation
	// 1), so the write needs no version to be conditional on.
	const generation = 1
	now := metav1.Now()
	cond := func(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: reason, LastTransitionTime: now, ObservedGeneration: generation}
	}
	u := &v1.FlinkCluster{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "FlinkCluster"}}
	u.Status = v1.FlinkClusterStatus{
		ObservedGeneration: generation,
		Phase:              v1.PhaseRunning,
		Conditions: []metav1.Condition{
			cond(v1.ConditionAvailable, metav1.ConditionTrue, "AllReady"),
			cond(v1.ConditionProgressing, metav1.ConditionFalse, "Converged"),
			cond(v1.ConditionDegraded, metav1.ConditionFalse, "Healthy"),
			cond(v1.ConditionJobManagerReady, metav1.ConditionTrue, "PodsReady"),
			cond(v1.ConditionRestAvailable, metav1.ConditionTrue, "Reachable"),
		},
		JobManager:  v1.ComponentStatus{Replicas: 1, ReadyReplicas: 1, Ready: "1/1"},
		TaskManager: v1.ComponentStatus{Replicas: 2, ReadyReplicas: 2, Ready: "2/2"},
		Selector:    resources.LabelInstance + "=" + name,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(u)
	if err != nil {
		return err
	}
	// Without the spec and metadata the typed object's zero values put in.
	apply := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.APIVersion, "kind": u.Kind, "status": obj["status"],
		"metadata": map[string]any{"namespace": ns, "name": name}}}
	return k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(benchAgent), client.ForceOwnership)
}

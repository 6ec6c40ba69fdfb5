package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	coreac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/resources"
)

// shape is one way of creating a cluster's children in the baseline: the
// operator's own, and variants that each change one child, so the
// difference to the operator's shape is that child's cost to the control
// plane.
type shape struct {
	name string
	// jmDeployment runs the JobManager as the Deployment it was until
	// 2026-12-07 (resources.LegacyJobManager) instead of a StatefulSet.
	jmDeployment bool
	// budget adds the TaskManagers' PodDisruptionBudget, once the pods
	// are ready: what the operator creates for a job cluster, or a
	// session cluster once Flink runs a job on it (and, until
	// 2026-12-07, for every session cluster once a TaskManager was
	// ready).
	budget bool
	// tmService adds the TaskManagers' headless Service the operator
	// created before 2026-12 (the StatefulSet's governing Service, which
	// gave each pod a DNS name that nothing dials).
	tmService bool
	// apply sends server-side applies instead of creates.
	apply bool
}

// shapes are the baseline's shapes; the first is what the operator
// creates (with a POST for every new child), the ratio's reference.
var shapes = []shape{
	{name: "operator's shape (create)"},
	{name: "operator's shape, server-side apply", apply: true},
	{name: "JobManager as Deployment (the shape before)", jmDeployment: true},
	{name: "with the PodDisruptionBudget (the shape before)", budget: true},
	{name: "with a TaskManager Service (the shape before)", tmService: true},
}

// baselineResult is one baseline run of one shape.
type baselineResult struct {
	took time.Duration
	// clientWrites and controlPlaneWrites are per cluster: the bench
	// client's, and everyone else's (controllers, scheduler, kwok's
	// kubelets) in the baseline's namespace.
	clientWrites, controlPlaneWrites float64
	// cpu is the CPU time of each process until all pods were ready.
	cpu cpuSample
}

// children are the objects of one cluster in shape s, owned by nothing;
// the last, the TaskManagers' budget where the shape has one, is created
// once the pods are ready (lateChild).
func (s shape) children(i int) ([]any, error) {
	fc := benchCluster("", i)
	d, err := resources.Build(fc, benchPlatform)
	if err != nil {
		return nil, err
	}
	// Owner references need a live owner; the baseline has none.
	d.ConfigMap.OwnerReferences = nil
	d.JobManager.OwnerReferences = nil
	d.JobManagerService.OwnerReferences = nil
	d.TaskManager.OwnerReferences = nil
	d.TaskManagerBudget.OwnerReferences = nil
	var jm any = d.JobManager
	if s.jmDeployment {
		dep := d.LegacyJobManager()
		dep.OwnerReferences = nil
		jm = dep
	}
	out := []any{d.ConfigMap, d.JobManagerService, jm}
	if s.tmService {
		out = append(out, taskManagerService(*d.TaskManager.Name, d.TaskManager.Spec.Selector.MatchLabels))
	}
	out = append(out, d.TaskManager)
	if s.budget {
		out = append(out, d.TaskManagerBudget)
	}
	return out, nil
}

// taskManagerService is the headless Service the operator created for
// its TaskManagers before 2026-12: published before they are ready, on
// the TaskManagers' RPC port.
func taskManagerService(name string, selector map[string]string) *coreac.ServiceApplyConfiguration {
	return coreac.Service(name, "").
		WithLabels(selector).
		WithSpec(coreac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selector).
			WithPorts(coreac.ServicePort().WithName("rpc").WithPort(resources.PortTaskManagerRPC).
				WithTargetPort(intstr.FromString("rpc")).WithProtocol(corev1.ProtocolTCP)))
}

// send writes one child into ns: a create, or a server-side apply.
func (s shape) send(ctx context.Context, k8s client.Client, ns string, obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return err
	}
	u.SetNamespace(ns)
	// Not the operator's: its label-filtered cache holds none of these.
	labels := u.GetLabels()
	labels[resources.LabelManagedBy] = benchAgent
	u.SetLabels(labels)
	if s.apply {
		return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(benchAgent))
	}
	return k8s.Create(ctx, u, client.FieldOwner(benchAgent))
}

// lateChild: the shape's last child is created once the pods are ready.
func (s shape) lateChild() bool { return s.budget }

// baseline creates n clusters' children in ns in shape s, and waits until
// every JobManager and TaskManager is ready and every child created.
func baseline(ctx context.Context, k8s client.Client, c config, watch *readiness, ns string, s shape) (time.Duration, error) {
	if err := ensureNamespace(ctx, k8s, ns); err != nil {
		return 0, err
	}
	var lateObjs sync.Map
	late := whenReady(watch, ns, c.n, c.concurrency, func(name string) error {
		if !s.lateChild() {
			return nil
		}
		obj, _ := lateObjs.Load(name)
		return s.send(ctx, k8s, ns, obj)
	})
	defer late.finish()
	start := time.Now()
	err := parallel(c.n, c.concurrency, func(i int) error {
		objs, err := s.children(i)
		if err != nil {
			return err
		}
		if s.lateChild() {
			lateObjs.Store(benchCluster("", i).Name, objs[len(objs)-1])
			objs = objs[:len(objs)-1]
		}
		for _, obj := range objs {
			if err := s.send(ctx, k8s, ns, obj); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	err = waitFor(ctx, c.timeout, func() (int, error) {
		left, err := late.left()
		return max(left, c.n-watch.podsReady(ns, 3)), err
	})
	return time.Since(start), err
}

// baselineNamespace names the namespace of one shape in one round.
func baselineNamespace(round, shape int) string {
	return fmt.Sprintf("bench-baseline-%d-%d", round, shape)
}

package controller

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
)

// shardsOf owns the clusters named in owned, each with its own context.
type shardsOf map[types.NamespacedName]context.Context

func (s shardsOf) Context(k types.NamespacedName) (context.Context, bool) {
	c, ok := s[k]
	return c, ok
}
func (s shardsOf) Owns(k types.NamespacedName) bool  { _, ok := s[k]; return ok }
func (s shardsOf) Events() <-chan event.GenericEvent { return nil }

// podOf is a pod of the cluster as the pod cache hands it over.
func podOf(cluster string) *readiness.Pod {
	return readiness.Slim(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: cluster + "-taskmanager-0",
		Labels: resources.SelectorLabels(cluster, resources.ComponentTaskManager)}})
}

func TestOwnedByShard(t *testing.T) {
	mine := types.NamespacedName{Namespace: "ns", Name: "mine"}
	pred := ownedByShard(shardsOf{mine: context.Background()})
	child := func(owner, kind string, controller bool) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: owner + "-jobmanager"}}
		if owner != "" {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: kind, Name: owner, Controller: ptr.To(controller)}}
		}
		return d
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		want bool
	}{
		{"its own cluster", &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine"}}, true},
		{"another replica's cluster", &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs"}}, false},
		{"a same-named cluster elsewhere", &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "mine"}}, false},
		{"a child of its own cluster", child("mine", "FlinkCluster", true), true},
		{"a child of another replica's cluster", child("theirs", "FlinkCluster", true), false},
		{"an object owned by something else", child("mine", "ReplicaSet", true), false},
		{"a non-controller reference", child("mine", "FlinkCluster", false), false},
		{"no owner", child("", "", false), false},
		{"a pod of its own cluster (its controller is a workload)", podOf("mine"), true},
		{"a pod of another replica's cluster", podOf("theirs"), false},
	} {
		if got := pred.Generic(event.GenericEvent{Object: tc.obj}); got != tc.want {
			t.Errorf("%s: admitted %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A reconcile runs under its shard's context: losing the shard cancels
// it; a cluster of another replica gets no context at all.
func TestShardContext(t *testing.T) {
	mine := types.NamespacedName{Namespace: "ns", Name: "mine"}
	shard, lose := context.WithCancel(context.Background())
	r := &Reconciler{Shards: shardsOf{mine: shard}}
	ctx, release := r.shardContext(context.Background(), mine)
	defer release()
	if ctx == nil || ctx.Err() != nil {
		t.Fatalf("own cluster: context %v", ctx)
	}
	lose()
	<-ctx.Done()
	if ctx, _ := r.shardContext(context.Background(), types.NamespacedName{Namespace: "ns", Name: "theirs"}); ctx != nil {
		t.Error("another replica's cluster got a context")
	}
	unsharded := &Reconciler{}
	if ctx, release := unsharded.shardContext(context.Background(), mine); ctx == nil {
		t.Error("an unsharded operator got no context")
	} else {
		release()
	}
}

// A replica that lost a shard stops counting its clusters, so the phase
// counts summed over replicas count each cluster once.
func TestMetricsRetain(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	for _, name := range []string{"a", "b", "c"} {
		m.observe(&v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, &v1.FlinkClusterStatus{Phase: v1.PhaseRunning})
	}
	m.Retain(func(k types.NamespacedName) bool { return k.Name == "b" })
	var got dto.Metric
	if err := m.Clusters.WithLabelValues(string(v1.PhaseRunning)).Write(&got); err != nil {
		t.Fatal(err)
	}
	if got.GetGauge().GetValue() != 1 {
		t.Errorf("Running clusters after retaining one: %v, want 1", got.GetGauge().GetValue())
	}
	if n := testutil.CollectAndCount(m.clusters, "datapilot_flinkcluster_phase"); n != 1 {
		t.Errorf("%d per-cluster phase series after retaining one, want 1", n)
	}
}

package readiness_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestCacheKeepsTheFlinkPods, on a real API server: the cache holds the
// pods labelled as Datapilot's in the namespaces it watches, by cluster,
// as Pods; its source tells the handler of a pod that turned ready, as a
// Pod; a pod deleted leaves it.
func TestCacheKeepsTheFlinkPods(t *testing.T) {
	_, cfg := testenv.Start(t)
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, ns := range []string{"data", "other"} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	flinkPod := func(ns, name string, managed bool) *corev1.Pod {
		l := map[string]string{resources.LabelInstance: "fc", resources.LabelComponent: resources.ComponentTaskManager,
			appsv1.ControllerRevisionHashLabelKey: "tm-1", "team": "data"}
		if managed {
			l[resources.LabelManagedBy] = resources.ManagedBy
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "taskmanager", Image: "flink:1.20"}}}}
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tm0 := flinkPod("data", "fc-taskmanager-0", true)
	flinkPod("data", "someone-elses", false)
	flinkPod("other", "fc-taskmanager-0", true)

	// A namespace named twice (WATCH_NAMESPACE=data,data) is watched
	// once: its pods would count twice otherwise.
	c, err := readiness.NewCache(cfg, nil, []string{"data", "data"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	turnedReady := make(chan client.Object, 4)
	src := c.Source(handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		turnedReady <- e.ObjectNew
	}})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := src.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}

	got := c.Pods("data", "fc")
	if len(got) != 1 {
		t.Fatalf("Pods(data, fc) = %+v, want the one managed pod of namespace data, once", got)
	}
	if p := got[0]; p.Name != tm0.Name || p.Cluster != "fc" || p.Component != resources.ComponentTaskManager || p.Revision != "tm-1" || p.Ready || p.Labels != nil {
		t.Errorf("cached pod = %+v", p)
	}
	if other := c.Pods("other", "fc"); len(other) != 0 {
		t.Errorf("a namespace the cache does not watch: %+v", other)
	}

	// Every namespace but one (--ignore-namespace): the API server leaves
	// that namespace's pods out of the list.
	all, err := readiness.NewCache(cfg, nil, nil, fields.OneTermNotEqualSelector("metadata.namespace", "other"))
	if err != nil {
		t.Fatal(err)
	}
	allSrc := all.Source(handler.Funcs{})
	if err := allSrc.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	go func() { _ = all.Start(ctx) }()
	if err := allSrc.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	if got := all.Pods("data", "fc"); len(got) != 1 {
		t.Errorf("every namespace but other: Pods(data, fc) = %+v, want the managed pod", got)
	}
	if got := all.Pods("other", "fc"); len(got) != 0 {
		t.Errorf("every namespace but other: Pods(other, fc) = %+v, want none", got)
	}

	tm0.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k8s.Status().Update(ctx, tm0); err != nil {
		t.Fatal(err)
	}
	select {
	case obj := <-turnedReady:
		if p, ok := obj.(*readiness.Pod); !ok || !p.Ready || p.Name != tm0.Name {
			t.Errorf("update event carries %T %+v, want the ready *readiness.Pod", obj, obj)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no update event for the pod that turned ready")
	}
	if got := c.Pods("data", "fc"); len(got) != 1 || !got[0].Ready {
		t.Errorf("after the status update: %+v", got)
	}

	if err := k8s.Delete(ctx, tm0); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, func() error {
		if got := c.Pods("data", "fc"); len(got) > 0 {
			return fmt.Errorf("the deleted pod is still cached: %+v", got)
		}
		return nil
	})
}

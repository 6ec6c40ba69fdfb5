package teardown

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/testenv"
)

// recorded keeps the reasons of the Events passed on to it.
type recorded struct{ reasons []string }

func (r *recorded) Eventf(_, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	r.reasons = append(r.reasons, reason)
}

func (r *recorded) AnnotatedEventf(_, _ runtime.Object, _ map[string]string, _, reason, _, _ string, _ ...any) {
	r.reasons = append(r.reasons, reason)
}

// TestTerminatingFollowsTheNamespace, against a real API server (which
// has no namespace controller here, so a deleted namespace stays
// Terminating): a live namespace is not terminating, nor is one the cache
// has not seen, one being deleted is, and the Recorder drops exactly the
// Events about objects in it.
func TestTerminatingFollowsTheNamespace(t *testing.T) {
	_, cfg := testenv.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"live", "doomed"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	// The cache only holds what Watch registered: a read of anything else
	// fails the test instead of quietly starting another informer.
	ca, err := cache.New(cfg, cache.Options{Scheme: clientgoscheme.Scheme, ReaderFailOnMissingInformer: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := Watch(ctx, ca); err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	for _, ns := range []string{"live", "doomed", ""} {
		if Terminating(ctx, ca, ns) {
			t.Errorf("Terminating(%q) = true before any deletion", ns)
		}
	}
	if Terminating(ctx, ca, "not-yet-seen") {
		t.Error(`Terminating("not-yet-seen") = true, want false: a namespace the cache has not seen yet may be new`)
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !Terminating(ctx, ca, "doomed") {
		if time.Now().After(deadline) {
			t.Fatal(`Terminating("doomed") still false 30s after its deletion`)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if Terminating(ctx, ca, "live") {
		t.Error(`Terminating("live") = true after another namespace's deletion`)
	}

	next := &recorded{}
	rec := Recorder(next, ca)
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	rec.Eventf(pod("live", "a"), nil, corev1.EventTypeWarning, "InLive", "Test", "note")
	rec.Eventf(pod("doomed", "b"), nil, corev1.EventTypeWarning, "InDoomed", "Test", "note")
	rec.AnnotatedEventf(pod("doomed", "c"), nil, nil, corev1.EventTypeNormal, "AnnotatedInDoomed", "Test", "note")
	rec.AnnotatedEventf(pod("live", "d"), nil, nil, corev1.EventTypeNormal, "AnnotatedInLive", "Test", "note")
	rec.Eventf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, nil, corev1.EventTypeNormal, "ClusterScoped", "Test", "note")
	want := []string{"InLive", "AnnotatedInLive", "ClusterScoped"}
	if len(next.reasons) != len(want) {
		t.Fatalf("recorded %v, want %v", next.reasons, want)
	}
	for i := range want {
		if next.reasons[i] != want[i] {
			t.Fatalf("recorded %v, want %v", next.reasons, want)
		}
	}
}

package teardown

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	reads int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestCheckerFollowsTheNamespace, against a real API server (which has no
// namespace controller here, so a deleted namespace stays Terminating): a
// live namespace is not terminating, nor is one that does not exist, one
// being deleted is and is remembered for a while; the Recorder drops
// exactly the Events about objects in it.
func TestCheckerFollowsTheNamespace(t *testing.T) {
	_, cfg := testenv.Start(t)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"live", "doomed"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1700000000, 0)
	reader := &countingReader{Reader: c}
	check := &Checker{Reader: reader, Now: func() time.Time { return now }}

	for _, ns := range []string{"live", "doomed", "", "never-created"} {
		if check.Terminating(ctx, ns) {
			t.Errorf("Terminating(%q) = true before any deletion", ns)
		}
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}); err != nil {
		t.Fatal(err)
	}
	// Not remembered while it was live: asked again, now terminating.
	if !check.Terminating(ctx, "doomed") {
		t.Fatal(`Terminating("doomed") = false after its deletion`)
	}
	if check.Terminating(ctx, "live") {
		t.Error(`Terminating("live") = true after another namespace's deletion`)
	}
	before := reader.reads
	if !check.Terminating(ctx, "doomed") || reader.reads != before {
		t.Errorf("a namespace found terminating was read again at once (%d reads, want %d)", reader.reads, before)
	}
	now = now.Add(remember)
	if !check.Terminating(ctx, "doomed") || reader.reads != before+1 {
		t.Errorf("after %s: %d reads, want %d", remember, reader.reads, before+1)
	}

	next := &recorded{}
	rec := Recorder(next, check)
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	rec.Eventf(pod("live", "a"), nil, corev1.EventTypeWarning, "InLive", "Test", "note")
	rec.Eventf(pod("doomed", "b"), nil, corev1.EventTypeWarning, "InDoomed", "Test", "note")
	rec.AnnotatedEventf(pod("doomed", "c"), nil, nil, corev1.EventTypeNormal, "AnnotatedInDoomed", "Test", "note")
	rec.AnnotatedEventf(pod("live", "d"), nil, nil, corev1.EventTypeNormal, "AnnotatedInLive", "Test", "note")
	rec.Eventf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, nil, corev1.EventTypeNormal, "ClusterScoped", "Test", "note")
	if want := []string{"InLive", "AnnotatedInLive", "ClusterScoped"}; !slices.Equal(next.reasons, want) {
		t.Fatalf("recorded %v, want %v", next.reasons, want)
	}
	// A nil Checker (not wired) says no and records everything.
	if (*Checker)(nil).Terminating(ctx, "doomed") {
		t.Error("a nil Checker said terminating")
	}
}

// TestCheckerNeedsOnlyARoleInTheNamespace: with WATCH_NAMESPACE the chart
// grants the operator's rules in a Role per namespace. A Role granting get
// on namespaces lets the Checker read its own namespace (the API server
// authorizes GET /api/v1/namespaces/{name} as a request in {name}), not
// another one, whose read fails and says not terminating.
func TestCheckerNeedsOnlyARoleInTheNamespace(t *testing.T) {
	_, cfg := testenv.Start(t)
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"watched", "other"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "watched", Name: "operator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "watched", Name: "operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "operator"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "operator"}}}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"watched", "other"} {
		if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: "operator"}
	op, err := client.New(as, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The API server enforces RBAC here: the other namespace is refused.
	if err := op.Get(ctx, client.ObjectKey{Name: "other"}, &corev1.Namespace{}); !apierrors.IsForbidden(err) {
		t.Fatalf("GET of a namespace without a Role in it: %v, want Forbidden", err)
	}
	check := &Checker{Reader: op}
	if !check.Terminating(ctx, "watched") {
		t.Error(`Terminating("watched") = false with a Role granting get in it`)
	}
	if check.Terminating(ctx, "other") {
		t.Error(`Terminating("other") = true without the right to read it`)
	}
}

package deploy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

const fieldOwner = client.FieldOwner("datapilot-deploy-test")

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// TestInstallsApplyToAPIServer applies every object an install renders to a
// real API server with server-side apply (the Deployment as a server-side dry
// run: envtest runs no controllers), in a namespace that enforces the
// restricted Pod Security Standard. The server must accept everything without
// a single warning (unknown fields, Pod Security, deprecations), the served
// CRD must accept the reference example, and the ServiceAccount must hold
// exactly the permissions the operator needs.
func TestInstallsApplyToAPIServer(t *testing.T) {
	generatedRole := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/rbac/role.yaml"), generatedRole); err != nil {
		t.Fatal(err)
	}
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			ctx := t.Context()
			warnings := &warningRecorder{}
			cfg := rest.CopyConfig(restCfg)
			cfg.WarningHandlerWithContext = warnings
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			objs := parse(t, render(t, in))
			if in.chart {
				// helm install --create-namespace makes the namespace; label it
				// like config/default/namespace.yaml does.
				ns := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "Namespace",
					"metadata": map[string]any{
						"name":   in.namespace,
						"labels": map[string]any{"pod-security.kubernetes.io/enforce": "restricted"},
					},
				}}
				applyObject(t, c, ns)
			}
			// The namespaces the operator watches exist before their Roles.
			for _, w := range in.want.watchNamespaces {
				applyObject(t, c, &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": w},
				}})
			}
			if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" }) {
				applyObject(t, c, parse(t, readFile(t, "test/deploy/testdata/servicemonitor-crd.yaml"))[0])
			}
			// Namespaces first, then CRDs, then what lives in them.
			order := func(o *unstructured.Unstructured) int {
				switch o.GetKind() {
				case "Namespace":
					return 0
				case "CustomResourceDefinition":
					return 1
				}
				return 2
			}
			slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return order(a) - order(b) })
			for _, o := range objs {
				applyObject(t, c, o)
			}
			if w := warnings.all(); len(w) > 0 {
				t.Errorf("The API server warned:\n%s", strings.Join(w, "\n"))
			}
			checkClusterScopedStored(t, c, objs)

			example := parse(t, readFile(t, "examples/realtime-warehouse.yaml"))[0]
			example.SetNamespace(in.namespace)
			if err := c.Create(ctx, example, client.DryRunAll); err != nil {
				t.Errorf("The served CRD rejects examples/realtime-warehouse.yaml: %v", err)
			}

			var sa *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "ServiceAccount" {
					sa = o
				}
			}
			if sa == nil {
				t.Fatal("No ServiceAccount rendered")
			}
			haRole := resources.DefaultHAClusterRole
			for _, o := range objs {
				if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "-flink-ha") {
					haRole = o.GetName()
				}
			}
			checkPermissions(t, c, sa.GetNamespace(), sa.GetName(), withHARole(generatedRole.Rules, haRole))
		})
	}
}

// applyObject applies o with server-side apply; a Deployment only as a dry
// run. A CRD is waited for until it is established.
func applyObject(t *testing.T, c client.Client, o *unstructured.Unstructured) {
	t.Helper()
	opts := []client.ApplyOption{fieldOwner, client.ForceOwnership}
	if o.GetKind() == "Deployment" {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), opts...); err != nil {
		t.Fatalf("The API server rejects %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	if o.GetKind() != "CustomResourceDefinition" {
		return
	}
	testwait.Until(t, 30*time.Second, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: o.GetName()}, crd); err != nil {
			return err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s is not established", o.GetName())
	})
}

// checkPermissions asks the API server's RBAC authorizer (SubjectAccessReview)
// what the ServiceAccount may do: every generated rule anywhere, leader
// election in its own namespace, and nothing beyond.
func checkPermissions(t *testing.T, c client.Client, ns, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	type access struct {
		namespace, group, resource, verb string
		// name, for rules limited by resourceNames.
		name string
	}
	can := func(a access) (bool, error) {
		resource, sub, _ := strings.Cut(a.resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   fmt.Sprintf("system:serviceaccount:%s:%s", ns, name),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: a.namespace, Group: a.group, Resource: resource, Subresource: sub, Verb: a.verb, Name: a.name,
			},
		}}
		if err := c.Create(t.Context(), sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	}

	var allowed []access
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if len(r.ResourceNames) == 0 {
						allowed = append(allowed, access{"team-a", g, res, v, ""})
					}
					for _, n := range r.ResourceNames {
						allowed = append(allowed, access{"team-a", g, res, v, n})
					}
				}
			}
		}
	}
	for _, v := range []string{"get", "create", "update"} {
		allowed = append(allowed, access{ns, "coordination.k8s.io", "leases", v, ""})
	}
	allowed = append(allowed, access{ns, "", "events", "create", ""})
	// A SQL job's spec.job.sql.secretRefs name Secrets of its own
	// namespace, read by name (never listed) to fill the statements sent
	// to the SQL Gateway.
	allowed = append(allowed, access{"team-a", "", "secrets", "get", ""})
	// The RBAC authorizer sees new bindings through an informer: wait for them.
	testwait.Until(t, 30*time.Second, func() error {
		for _, a := range allowed {
			ok, err := can(a)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("the ServiceAccount may not %+v", a)
			}
		}
		return nil
	})

	for _, a := range []access{
		{"team-a", "", "secrets", "list", ""},
		{"team-a", "", "pods", "create", ""},
		{"team-a", "data.example.com", "flinkclusters", "delete", ""},
		{"team-a", "", "events", "create", ""}, // core events only for leader election, in its namespace
		{"", "rbac.authorization.k8s.io", "clusterroles", "update", ""},
		// The Kubernetes HA Role passes RBAC's escalation check because the
		// operator holds every right it grants, not by escalate or bind.
		{"team-a", "rbac.authorization.k8s.io", "roles", "escalate", ""},
		{"team-a", "rbac.authorization.k8s.io", "roles", "bind", ""},
		{"", "apiextensions.k8s.io", "customresourcedefinitions", "create", ""},
		// The conversion webhook's caBundle: its own CRD only.
		{"", "apiextensions.k8s.io", "customresourcedefinitions", "list", ""},
		{"", "apiextensions.k8s.io", "customresourcedefinitions", "patch", "servicemonitors.monitoring.coreos.com"},
	} {
		ok, err := can(a)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Errorf("The ServiceAccount may %+v, which the operator does not need", a)
		}
	}
}

// warningRecorder keeps every warning the API server sends.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// checkClusterScopedStored: every cluster-scoped object an install renders
// is stored without a namespace, whatever the rendering gave it (kustomize
// gives the FlowSchema one).
func checkClusterScopedStored(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if !clusterScoped[o.GetKind()] {
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(t.Context(), client.ObjectKey{Name: o.GetName()}, got); err != nil {
			t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
			continue
		}
		if ns := got.GetNamespace(); ns != "" {
			t.Errorf("%s %s is stored in namespace %q", o.GetKind(), o.GetName(), ns)
		}
	}
}

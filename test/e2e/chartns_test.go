package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/platform/platformtest"
	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestChartWatchNamespaceIsNamespaced installs the chart with
// watchNamespace on a platform of its own and runs the operator as the
// chart's ServiceAccount, watching that namespace: every right bound to the
// account cluster-wide is on a resource no namespace holds (by the API
// server's discovery), its rights on namespaced resources are Roles in the
// watched namespace, the only ClusterRoleBinding is the operator's, a
// FlinkCluster in the watched namespace becomes Available and one in another
// namespace is ignored: not one request of the operator's touches that
// namespace (the audit log), and no request is forbidden.
func TestChartWatchNamespaceIsNamespaced(t *testing.T) {
	parallel(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(root, "bin")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	p := platformtest.StartWith(t, platform.Options{BinDir: bin, AuditLogPath: auditLog, AuditPolicy: auditRequests,
		AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	admin, err := client.New(p.RESTConfig(), client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	const release, ns, watched, other = "datapilot", "datapilot-system", "watched", "elsewhere"
	for _, n := range []string{ns, watched, other} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	helm := exec.CommandContext(ctx, filepath.Join(bin, "helm"), "install", release, filepath.Join(root, "charts", "datapilot"),
		"--kubeconfig", p.KubeconfigPath(), "--namespace", ns, "--wait", "--timeout", "2m",
		"--set", "stateStorage.uri="+platform.StateStorageURI, "--set", "watchNamespace="+watched)
	helm.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out bytes.Buffer
	helm.Stdout, helm.Stderr = &out, &out
	if err := helm.Run(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out.String())
	}
	dep := &appsv1.Deployment{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, dep); err != nil {
		t.Fatal(err)
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName

	// Cluster-wide, only what no namespace holds.
	grants := operatorGrants(ctx, t, admin, ns, sa)
	roles := map[string]bool{}
	for _, g := range grants {
		roles[g.namespace+"/"+g.role] = true
		if g.namespace != "" {
			if g.namespace != watched && g.namespace != ns {
				t.Errorf("The chart grants %s outside the watched and the release namespace", g)
			}
			continue
		}
		m, err := admin.RESTMapper().RESTMapping(schema.GroupKind{Group: g.group, Kind: kindOf(t, admin, g.group, g.resource)})
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			t.Errorf("With watchNamespace the chart grants %s cluster-wide, on a namespaced resource", g)
		}
	}
	if !roles[watched+"/"+release+"-manager"] {
		t.Errorf("No Role of the operator's in %s; bound: %v", watched, roles)
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := admin.List(ctx, crbs, client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		t.Fatal(err)
	}
	if len(crbs.Items) != 1 || crbs.Items[0].RoleRef.Name != release+"-manager" {
		t.Errorf("The release's ClusterRoleBindings: %+v, want only %s-manager", crbs.Items, release)
	}

	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
	opLog := filepath.Join(t.TempDir(), "operator.log")
	op, err := testenv.StartOperator(testenv.OperatorStart{Bin: filepath.Join(bin, "datapilot"), Log: opLog, Timeout: time.Minute,
		Args: func() ([]string, error) {
			port, err := testenv.FreePort()
			if err != nil {
				return nil, err
			}
			return []string{"--kubeconfig", impersonatingKubeconfig(t, p.KubeconfigPath(), user),
				"--leader-elect=true", "--leader-election-namespace", ns, "--watch-namespace", watched,
				"--metrics-bind-address=0", "--state-storage-uri=" + platform.StateStorageURI,
				"--webhook-cert-mode=self-signed", "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port),
				fmt.Sprintf("--webhook-url=https://127.0.0.1:%d/convert", port)}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		op.Stop()
		if t.Failed() {
			if raw, err := os.ReadFile(opLog); err == nil {
				t.Logf("Operator log:\n%s", raw)
			}
		}
	})

	session := func(namespace string) *v1.FlinkCluster {
		return &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "session"},
			Spec: v1.FlinkClusterSpec{Version: "1.19.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 1}}}
	}
	ignored := session(other)
	if err := admin.Create(ctx, ignored); err != nil {
		t.Fatal(err)
	}
	fc := session(watched)
	// The validating webhook the operator installs admits it once it
	// serves; until then the API server fails open.
	if err := admin.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 3*time.Minute, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("%s not Available: %+v", client.ObjectKeyFromObject(fc), fc.Status.Conditions)
		}
		return nil
	})

	// The watched cluster converged, which took the operator after the
	// other was created: by now, anything it would do there, it had done.
	if err := admin.Get(ctx, client.ObjectKeyFromObject(ignored), ignored); err != nil {
		t.Fatal(err)
	}
	if ignored.Status.ObservedGeneration != 0 || len(ignored.Finalizers) > 0 {
		t.Errorf("The cluster in %s was reconciled: status %+v, finalizers %v", other, ignored.Status, ignored.Finalizers)
	}
	for _, a := range operatorAccesses(t, auditLog, user) {
		if a.namespace == other {
			t.Errorf("The operator acted in the unwatched namespace: %s", a)
		}
	}
	if f := forbiddenRequests(t, auditLog, user); len(f) > 0 {
		t.Errorf("The API server forbade the operator %d requests:\n%s", len(f), strings.Join(f, "\n"))
	}
}

// kindOf is the kind of a resource, by discovery.
func kindOf(t *testing.T, c client.Client, group, resource string) string {
	t.Helper()
	gvk, err := c.RESTMapper().KindFor(schema.GroupVersionResource{Group: group, Resource: resource})
	if err != nil {
		t.Fatalf("Resource %s.%s: %v", resource, group, err)
	}
	return gvk.Kind
}

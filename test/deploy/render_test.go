package deploy_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/resources"
)

// clusterScoped are the kinds an install renders that have no namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true, "FlowSchema": true,
}

// TestChartCopiesOfGeneratedFiles: the chart's crds/ is exactly
// config/crd/bases (the FlinkCluster CRD plus its conversion stanza, checked
// in TestInstalls), and files/role.yaml exactly config/rbac/role.yaml, as
// hack/sync-chart.sh leaves them.
func TestChartCopiesOfGeneratedFiles(t *testing.T) {
	names := func(dir string) []string {
		var out []string
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".yaml") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	bases, chartCRDs := names("config/crd/bases"), names("charts/datapilot/crds")
	if !slices.Equal(bases, chartCRDs) {
		t.Fatalf("charts/datapilot/crds holds %v, config/crd/bases holds %v: run hack/sync-chart.sh", chartCRDs, bases)
	}
	pairs := [][2]string{{"config/rbac/role.yaml", "charts/datapilot/files/role.yaml"}}
	for _, n := range bases {
		if n == "data.example.com_flinkclusters.yaml" {
			continue // it gains the conversion stanza: see TestInstalls
		}
		pairs = append(pairs, [2]string{"config/crd/bases/" + n, "charts/datapilot/crds/" + n})
	}
	for _, p := range pairs {
		if !bytes.Equal(readFile(t, p[0]), readFile(t, p[1])) {
			t.Errorf("%s differs from %s: run hack/sync-chart.sh", p[1], p[0])
		}
	}
}

// TestEveryKustomizationBuilds renders every kustomization under config/.
func TestEveryKustomizationBuilds(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(filepath.Join(root, "config"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crd", "rbac", "manager", "default", "overlays/production"} {
		if !slices.Contains(dirs, filepath.Join(root, "config", want)) {
			t.Errorf("config/%s has no kustomization.yaml", want)
		}
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			parse(t, runTool(t, "kubectl", "kustomize", dir))
		})
	}
}

// rendered is one install's output, indexed.
type rendered struct {
	in   install
	raw  []byte
	objs []*unstructured.Unstructured
}

func (r rendered) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of kind, converted to T.
func one[T any](t *testing.T, r rendered, kind string) *T {
	t.Helper()
	objs := r.ofKind(kind)
	if len(objs) != 1 {
		t.Fatalf("Rendered %d objects of kind %s, want 1", len(objs), kind)
	}
	return typed[T](t, objs[0])
}

// inNamespace returns the single object of kind in namespace ns.
func inNamespace[T any](t *testing.T, r rendered, kind, ns string) *T {
	t.Helper()
	var in []*unstructured.Unstructured
	for _, o := range r.ofKind(kind) {
		if o.GetNamespace() == ns {
			in = append(in, o)
		}
	}
	if len(in) != 1 {
		t.Fatalf("Rendered %d objects of kind %s in %s, want 1", len(in), kind, ns)
	}
	return typed[T](t, in[0])
}

// typed converts strictly: a field the type does not know fails the test.
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

func TestInstalls(t *testing.T) {
	generatedRole := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/rbac/role.yaml"), generatedRole); err != nil {
		t.Fatal(err)
	}
	baseCRD := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/crd/bases/data.example.com_flinkclusters.yaml"), baseCRD); err != nil {
		t.Fatal(err)
	}
	patch := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/crd/patches/conversion.yaml"), patch); err != nil {
		t.Fatal(err)
	}
	conversion := patch.Spec.Conversion
	if conversion == nil || conversion.Webhook == nil || conversion.Webhook.ClientConfig == nil || conversion.Webhook.ClientConfig.Service == nil {
		t.Fatal("config/crd/patches/conversion.yaml has no webhook conversion through a Service")
	}
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			raw := render(t, in)
			r := rendered{in: in, raw: raw, objs: parse(t, raw)}
			checkNamespaces(t, r)
			dep := checkDeployment(t, r)
			sa := checkServiceAccount(t, r, dep)
			checkRBAC(t, r, sa, generatedRole.Rules)
			checkLeaseFlowSchema(t, r, sa)
			svc := checkMetricsService(t, r, dep)
			checkServiceMonitor(t, r, svc)
			checkOperatorSettings(t, r, dep)

			crd := one[apiextensionsv1.CustomResourceDefinition](t, r, "CustomResourceDefinition")
			// The generated CRD plus the conversion stanza controller-gen
			// cannot write, pointing at the webhook Service: kustomize moves
			// it to the install's namespace; helm renders crds/ verbatim, so
			// the chart's names datapilot-system and the operator corrects it
			// at startup.
			want := baseCRD.DeepCopy()
			want.Spec.Conversion = conversion.DeepCopy()
			if !in.chart {
				want.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = in.namespace
			}
			if in.chart {
				if !equality.Semantic.DeepEqual(crd, want) {
					t.Errorf("The chart's CRD is not config/crd/bases plus the conversion stanza:\n%s", diff.Diff(want, crd))
				}
			} else if crd.Name != want.Name || !equality.Semantic.DeepEqual(crd.Spec, want.Spec) {
				t.Errorf("The kustomize CRD's spec is not config/crd/bases plus the conversion stanza:\n%s", diff.Diff(want.Spec, crd.Spec))
			}
			checkWebhookService(t, r, dep, crd)
		})
	}
}

// checkNamespaces: every namespaced object is in the operator's namespace
// (but the operator's Roles in the namespaces it watches), and a kustomize
// install creates that namespace under the restricted Pod Security
// Standard.
func checkNamespaces(t *testing.T, r rendered) {
	t.Helper()
	for _, o := range r.objs {
		ns := o.GetNamespace()
		if clusterScoped[o.GetKind()] {
			// kustomize's built-in schema predates flowcontrol v1: it
			// gives the FlowSchema the install's namespace, which the API
			// server drops (TestInstallsApplyToAPIServer).
			kustomizeFlowSchema := !r.in.chart && o.GetKind() == "FlowSchema" && ns == r.in.namespace
			if ns != "" && !kustomizeFlowSchema {
				t.Errorf("%s %s is cluster-scoped but has namespace %q", o.GetKind(), o.GetName(), ns)
			}
			continue
		}
		watchedRole := (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && slices.Contains(r.in.want.watchNamespaces, ns)
		if ns != r.in.namespace && !watchedRole {
			t.Errorf("%s %s is in namespace %q, want %q", o.GetKind(), o.GetName(), ns, r.in.namespace)
		}
	}
	if r.in.chart {
		if n := len(r.ofKind("Namespace")); n != 0 {
			t.Errorf("The chart renders %d Namespaces; the release namespace is helm's to create", n)
		}
		return
	}
	ns := one[corev1.Namespace](t, r, "Namespace")
	if ns.Name != r.in.namespace {
		t.Errorf("Namespace is %q, want %q", ns.Name, r.in.namespace)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace enforces Pod Security %q, want restricted", got)
	}
	// No trace of the base's namespace may survive an overlay that moves it.
	if r.in.namespace != "datapilot-system" && bytes.Contains(r.raw, []byte("datapilot-system")) {
		t.Errorf("The render still mentions datapilot-system")
	}
}

// checkDeployment: a hardened, probed, resourced operator Deployment with
// leader election and its namespace from the downward API.
func checkDeployment(t *testing.T, r rendered) *appsv1.Deployment {
	t.Helper()
	dep := one[appsv1.Deployment](t, r, "Deployment")
	want := r.in.want
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != want.replicas {
		t.Errorf("replicas = %v, want %d", dep.Spec.Replicas, want.replicas)
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("The Deployment's selector %v does not select its own pods (%v)", dep.Spec.Selector, err)
	}
	pod := dep.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("Pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("Pod seccompProfile is not RuntimeDefault")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("The pod has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != want.image {
		t.Errorf("image = %q, want %q", c.Image, want.image)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("The container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities = %+v, want drop [ALL] and no add", sc.Capabilities)
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("The container is privileged")
	case sc.RunAsUser != nil && *sc.RunAsUser == 0:
		t.Error("The container runs as user 0")
	}
	for name, res := range map[string]corev1.ResourceList{"requests": c.Resources.Requests, "limits": c.Resources.Limits} {
		for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := res[k]; !ok || q.IsZero() {
				t.Errorf("resources.%s.%s is not set", name, k)
			}
		}
	}
	if req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory(); req.Cmp(*lim) > 0 {
		t.Errorf("Memory request %s exceeds the limit %s", req, lim)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("No HTTP %s probe", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s probe path = %q, want %q", p.name, p.probe.HTTPGet.Path, p.path)
		}
		if port := containerPort(t, c, p.probe.HTTPGet.Port); port != flagPort(t, c, "--health-probe-bind-address") {
			t.Errorf("%s probe port %d is not the --health-probe-bind-address port", p.name, port)
		}
	}
	return dep
}

// containerPort resolves a numeric or named port of c.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("The container has no port named %q", p.StrVal)
	return 0
}

// flagPort is the port of a --flag=host:port argument of c.
func flagPort(t *testing.T, c corev1.Container, flag string) int32 {
	t.Helper()
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			_, port, err := net.SplitHostPort(v)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			n, err := strconv.ParseInt(port, 10, 32)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			return int32(n)
		}
	}
	t.Fatalf("The container has no %s argument", flag)
	return 0
}

func checkServiceAccount(t *testing.T, r rendered, dep *appsv1.Deployment) *corev1.ServiceAccount {
	t.Helper()
	sa := one[corev1.ServiceAccount](t, r, "ServiceAccount")
	if dep.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("The Deployment runs as %q, the rendered ServiceAccount is %q",
			dep.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	return sa
}

// checkRBAC: a ClusterRole with exactly the generated rules bound to the
// ServiceAccount, and a Role for leader election in the operator's namespace.
func checkRBAC(t *testing.T, r rendered, sa *corev1.ServiceAccount, generated []rbacv1.PolicyRule) {
	t.Helper()
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}

	// Three ClusterRoles: the operator's, the one a Prometheus is bound
	// to, which grants nothing but get on /metrics, and the Flink pods'
	// HA rights, which the operator may only bind.
	var cr, flinkHA *rbacv1.ClusterRole
	roles := r.ofKind("ClusterRole")
	if len(roles) != 3 {
		t.Fatalf("Rendered %d ClusterRoles, want the operator's, the metrics reader and the Flink HA role", len(roles))
	}
	for _, u := range roles {
		role := typed[rbacv1.ClusterRole](t, u)
		switch {
		case strings.HasSuffix(role.Name, "-metrics-reader"):
			want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
			if !equality.Semantic.DeepEqual(role.Rules, want) {
				t.Errorf("ClusterRole %s grants %+v, want only get on /metrics", role.Name, role.Rules)
			}
		case strings.HasSuffix(role.Name, "-flink-ha"):
			flinkHA = role
		default:
			cr = role
		}
	}
	if cr == nil || flinkHA == nil {
		t.Fatal("No operator ClusterRole, or no Flink HA ClusterRole")
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: resources.HAConfigMapVerbs()}}
	if !equality.Semantic.DeepEqual(flinkHA.Rules, want) {
		t.Errorf("ClusterRole %s grants %+v, want the verbs Flink's HA services use: %+v", flinkHA.Name, flinkHA.Rules, want)
	}
	// The generated rules, with bind on this install's Flink HA role, are
	// exactly what the operator holds: in the ClusterRole, or, with
	// watched namespaces, split so that only cluster-scoped resources stay
	// cluster-wide and every watched namespace has a Role with the rest.
	expected := grants(withHARole(generated, flinkHA.Name))
	got := grants(cr.Rules)
	watched := r.in.want.watchNamespaces
	nsRoles := map[string]*rbacv1.Role{}
	for _, u := range r.ofKind("Role") {
		role := typed[rbacv1.Role](t, u)
		if strings.HasSuffix(role.Name, "-manager") {
			nsRoles[role.Namespace] = role
		}
	}
	if len(watched) > 0 {
		for g := range got {
			if !clusterScopedResources[g.resource] {
				t.Errorf("With watchNamespace the ClusterRole still grants %+v cluster-wide", g)
			}
		}
		for _, ns := range watched {
			role := nsRoles[ns]
			if role == nil {
				t.Errorf("No operator Role in the watched namespace %s", ns)
				continue
			}
			nsGot := grants(role.Rules)
			for g := range nsGot {
				got[g] = true
				if clusterScopedResources[g.resource] {
					t.Errorf("The Role in %s grants %+v, which no namespace holds: the operator has it nowhere", ns, g)
				}
			}
			for g := range expected {
				if !clusterScopedResources[g.resource] && !nsGot[g] {
					t.Errorf("The Role in %s lacks %+v", ns, g)
				}
			}
		}
	} else if len(nsRoles) > 0 {
		t.Errorf("Without watchNamespace the chart renders %d namespaced operator Roles", len(nsRoles))
	}
	if !maps.Equal(got, expected) {
		t.Errorf("The operator's rules differ from config/rbac/role.yaml (with bind on %s):\ngot:  %v\nwant: %v", flinkHA.Name, sortedGrants(got), sortedGrants(expected))
	}
	if e := envOf(t, r, "FLINK_HA_CLUSTER_ROLE"); r.in.chart && e != flinkHA.Name {
		t.Errorf("The operator binds ClusterRole %q (FLINK_HA_CLUSTER_ROLE), the install ships %q", e, flinkHA.Name)
	}
	crb := one[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding")
	if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}) {
		t.Errorf("ClusterRoleBinding refers to %+v, want ClusterRole %s", crb.RoleRef, cr.Name)
	}
	if !slices.Equal(crb.Subjects, []rbacv1.Subject{subject}) {
		t.Errorf("ClusterRoleBinding subjects = %+v, want %+v", crb.Subjects, subject)
	}

	role := inNamespace[rbacv1.Role](t, r, "Role", r.in.namespace)
	grants := func(group, resource string, verbs ...string) bool {
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) &&
				!slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(rule.Verbs, v) }) {
				return true
			}
		}
		return false
	}
	if !grants("coordination.k8s.io", "leases", "get", "create", "update") {
		t.Error("The leader-election Role does not grant leases get, create and update")
	}
	if !grants("", "events", "create") {
		t.Error("The leader-election Role does not grant creating core/v1 events")
	}
	rb := inNamespace[rbacv1.RoleBinding](t, r, "RoleBinding", r.in.namespace)
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}) {
		t.Errorf("RoleBinding refers to %+v, want Role %s", rb.RoleRef, role.Name)
	}
	if !slices.Equal(rb.Subjects, []rbacv1.Subject{subject}) {
		t.Errorf("RoleBinding subjects = %+v, want %+v", rb.Subjects, subject)
	}
}

// grant is one verb on one resource (by name, when resourceNames limit it).
type grant struct{ group, resource, verb, name string }

func grants(rules []rbacv1.PolicyRule) map[grant]bool {
	out := map[grant]bool{}
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						out[grant{g, res, v, n}] = true
					}
				}
			}
		}
		for _, u := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				out[grant{"", u, v, ""}] = true
			}
		}
	}
	return out
}

func sortedGrants(gs map[grant]bool) []string {
	out := make([]string, 0, len(gs))
	for g := range gs {
		out = append(out, fmt.Sprintf("%s/%s:%s:%s", g.group, g.resource, g.verb, g.name))
	}
	slices.Sort(out)
	return out
}

// withHARole is the generated rules with bind on the install's Flink HA
// ClusterRole in place of the default name the marker carries.
func withHARole(rules []rbacv1.PolicyRule, name string) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i, r := range rules {
		out[i] = *r.DeepCopy()
		if slices.Contains(r.Resources, "clusterroles") {
			out[i].ResourceNames = []string{name}
		}
	}
	return out
}

// clusterScopedResources are the resources the operator uses that no
// namespace holds.
var clusterScopedResources = map[string]bool{"customresourcedefinitions": true, "validatingwebhookconfigurations": true, "mutatingwebhookconfigurations": true, "tokenreviews": true, "subjectaccessreviews": true, "nodes": true}

// envOf is the operator container's value of an environment variable.
func envOf(t *testing.T, r rendered, name string) string {
	t.Helper()
	dep := one[appsv1.Deployment](t, r, "Deployment")
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// checkMetricsService: the Service selects the operator's pods and targets
// the metrics port the operator binds.
func checkMetricsService(t *testing.T, r rendered, dep *appsv1.Deployment) *corev1.Service {
	t.Helper()
	svc := serviceWithPort(t, r, "metrics")
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("The metrics Service's selector %v does not select the operator's pods", svc.Spec.Selector)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	for _, p := range svc.Spec.Ports {
		if p.Name == "metrics" {
			if containerPort(t, c, p.TargetPort) != flagPort(t, c, "--metrics-bind-address") {
				t.Errorf("The metrics Service targets %s, not the --metrics-bind-address port", p.TargetPort.String())
			}
			return svc
		}
	}
	t.Errorf("The metrics Service has no port named metrics")
	return svc
}

// serviceWithPort is the one rendered Service with a port of that name.
func serviceWithPort(t *testing.T, r rendered, port string) *corev1.Service {
	t.Helper()
	var found []*corev1.Service
	for _, u := range r.ofKind("Service") {
		svc := typed[corev1.Service](t, u)
		if slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
			found = append(found, svc)
		}
	}
	if len(found) != 1 {
		t.Fatalf("Rendered %d Services with a port named %s, want 1", len(found), port)
	}
	return found[0]
}

// checkWebhookService: the conversion webhook is served by the operator
// (self-signed certificate in a writable volume) behind a Service on the
// CRD's port, and the operator is told that Service's name.
func checkWebhookService(t *testing.T, r rendered, dep *appsv1.Deployment, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	svc := serviceWithPort(t, r, "webhook")
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("The webhook Service's selector %v does not select the operator's pods", svc.Spec.Selector)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	args := map[string]string{}
	for _, a := range c.Args {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		}
	}
	if args["--webhook-cert-mode"] != "self-signed" {
		t.Errorf("--webhook-cert-mode = %q, want self-signed", args["--webhook-cert-mode"])
	}
	port, _ := strconv.Atoi(args["--webhook-port"])
	crdPort := *crd.Spec.Conversion.Webhook.ClientConfig.Service.Port
	for _, p := range svc.Spec.Ports {
		if p.Name != "webhook" {
			continue
		}
		if p.Port != crdPort || p.Port != 9443 {
			t.Errorf("The webhook Service listens on %d, the CRD calls %d; want 9443", p.Port, crdPort)
		}
		if containerPort(t, c, p.TargetPort) != int32(port) {
			t.Errorf("The webhook Service targets %s, not --webhook-port %d", p.TargetPort.String(), port)
		}
		if int(p.Port) != port {
			t.Errorf("The webhook Service port %d is not --webhook-port %d, which the operator writes into the CRD", p.Port, port)
		}
	}
	if want := []string{svc.Name, svc.Namespace + "/" + svc.Name}; !slices.Contains(want, args["--webhook-service"]) {
		t.Errorf("--webhook-service = %q, want one of %v", args["--webhook-service"], want)
	}
	dir := args["--webhook-cert-dir"]
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir && !m.ReadOnly })
	if dir == "" || !mounted {
		t.Errorf("--webhook-cert-dir %q is not a writable volume mount (the root filesystem is read-only)", dir)
	}
}

// checkServiceMonitor: present only when asked for, and scraping the metrics Service.
func checkServiceMonitor(t *testing.T, r rendered, svc *corev1.Service) {
	t.Helper()
	sms := r.ofKind("ServiceMonitor")
	if !r.in.want.serviceMonitor {
		if len(sms) != 0 {
			t.Errorf("Rendered %d ServiceMonitors, want none", len(sms))
		}
		return
	}
	if len(sms) != 1 {
		t.Fatalf("Rendered %d ServiceMonitors, want 1", len(sms))
	}
	sm := sms[0]
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion = %s", sm.GetAPIVersion())
	}
	matchLabels, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(matchLabels) == 0 || !labels.SelectorFromSet(matchLabels).Matches(labels.Set(svc.Labels)) {
		t.Errorf("The ServiceMonitor's selector %v does not select the metrics Service (labels %v)", matchLabels, svc.Labels)
	}
	names, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	if !slices.Equal(names, []string{svc.Namespace}) {
		t.Errorf("The ServiceMonitor looks in namespaces %v, want [%s]", names, svc.Namespace)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("The ServiceMonitor's endpoints %v do not scrape the port named metrics", endpoints)
	}
}

// checkOperatorSettings reads the container's arguments and environment the
// way the binary does (operator.Defaults, BindFlags, Validate) and compares
// the result with what the install promises.
func checkOperatorSettings(t *testing.T, r rendered, dep *appsv1.Deployment) {
	t.Helper()
	c := dep.Spec.Template.Spec.Containers[0]
	configMaps := map[string]*corev1.ConfigMap{}
	for _, u := range r.ofKind("ConfigMap") {
		cm := typed[corev1.ConfigMap](t, u)
		configMaps[cm.Name] = cm
	}
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("envFrom %+v is not a ConfigMap", from)
		}
		cm, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			t.Fatalf("envFrom refers to ConfigMap %q, which is not rendered", from.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env { // env wins over envFrom, as in the kubelet
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = dep.Namespace
		case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" &&
			e.ValueFrom.ResourceFieldRef.ContainerName == c.Name && e.ValueFrom.ResourceFieldRef.Divisor.IsZero():
			// The kubelet's value: the limit in bytes.
			limit, ok := c.Resources.Limits[corev1.ResourceMemory]
			if !ok {
				t.Fatalf("env %s is the memory limit, which the container does not set", e.Name)
			}
			env[e.Name] = strconv.FormatInt(limit.Value(), 10)
		default:
			t.Fatalf("env %s comes from %+v, which this test cannot resolve", e.Name, e.ValueFrom)
		}
	}
	for _, k := range []string{"LOG_LEVEL", "RECONCILE_INTERVAL", "MAX_CONCURRENT_RECONCILES", "WATCH_NAMESPACE", "IGNORE_NAMESPACE", "POD_NAMESPACE", "FLINK_REST_OVERRIDE", "STATE_STORAGE_URI", "STATE_STORAGE_CLAIM", "SLOW_RECONCILE_THRESHOLD", "DEGRADED_RECONCILE_INTERVAL"} {
		t.Setenv(k, env[k]) // the operator treats empty as unset
	}
	opts, err := operator.Defaults()
	if err != nil {
		t.Fatalf("The operator rejects its environment: %v", err)
	}
	// Go's soft memory limit is the container's, in a form the runtime
	// reads (a plain number is bytes).
	if limit, err := strconv.ParseInt(env["GOMEMLIMIT"], 10, 64); err != nil || limit < 64<<20 {
		t.Errorf("GOMEMLIMIT = %q, want the container's memory limit in bytes", env["GOMEMLIMIT"])
	}
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "operator" {
		t.Fatalf("args = %v, want the operator subcommand first and no command", c.Args)
	}
	fs := pflag.NewFlagSet("operator", pflag.ContinueOnError)
	opts.BindFlags(fs)
	if err := fs.Parse(c.Args[1:]); err != nil {
		t.Fatalf("The operator rejects its arguments %v: %v", c.Args[1:], err)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("The operator rejects its settings: %v", err)
	}

	want := r.in.want
	interval, _ := time.ParseDuration(want.reconcileInterval)
	got := []any{opts.LogLevel, opts.ReconcileInterval, opts.MaxConcurrentReconciles, opts.WatchNamespaces, opts.IgnoredNamespaces,
		opts.LeaderElection, opts.LeaderElectionNamespace, opts.FlinkRESTOverride, opts.StateStorageURI, opts.StateStorageClaim,
		[3]time.Duration{opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod}, [2]time.Duration{opts.SlowReconcileThreshold, opts.DegradedReconcileInterval}}
	exp := []any{want.logLevel, interval, want.maxConcurrentReconciles, want.watchNamespaces, want.ignoredNamespaces,
		true, r.in.namespace, "", want.stateStorageURI, "", want.leaderElection, want.slowReconcile}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("Operator settings (log level, interval, concurrency, namespaces, ignored namespaces, leader election, lease namespace, REST override, storage URI, storage claim, lease/renew/retry, slow threshold/degraded interval)\n got %v\nwant %v", got, exp)
	}

	// The production overlay follows the reference design: the three
	// settings come from the flink-operator-config ConfigMap.
	if r.in.kustomizeDir == "config/overlays/production" {
		var cm *corev1.ConfigMap
		for name, c := range configMaps {
			if strings.HasPrefix(name, "flink-operator-config-") {
				cm = c
			}
		}
		wantData := map[string]string{"LOG_LEVEL": "INFO", "RECONCILE_INTERVAL": "30s", "MAX_CONCURRENT_RECONCILES": "5", "STATE_STORAGE_URI": "s3://flink-state/datapilot"}
		switch {
		case cm == nil:
			t.Error("No flink-operator-config ConfigMap rendered")
		case !reflect.DeepEqual(cm.Data, wantData):
			t.Errorf("flink-operator-config data = %v, want %v", cm.Data, wantData)
		case !slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool {
			return e.ConfigMapRef != nil && e.ConfigMapRef.Name == cm.Name
		}):
			t.Errorf("The operator does not take its environment from %s", cm.Name)
		}
		for _, k := range []string{"LOG_LEVEL", "RECONCILE_INTERVAL", "MAX_CONCURRENT_RECONCILES"} {
			if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == k }) {
				t.Errorf("env %s overrides the ConfigMap", k)
			}
		}
	}
}

// TestChartRefusesBadSettings: values the operator could not start with
// are refused by helm, with the key that is wrong.
func TestChartRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"reconcileInterval=often", "/reconcileInterval"},
		{"slowReconcileThreshold=15", "/slowReconcileThreshold"},
		{"degradedReconcileInterval=1 minute", "/degradedReconcileInterval"},
		{"leaderElection.leaseDuration=12", "/leaderElection/leaseDuration"},
		{"leaderElection.retryPeriod=2x", "/leaderElection/retryPeriod"},
		{"leaderElection.lease=12s", "lease"},
		{"watchNamespace=team-a,ignoreNamespace=legacy", "/ignoreNamespace"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(bin, "helm"), "template", "datapilot", filepath.Join(root, "charts", "datapilot"), "--set", tc.set)
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil {
				t.Fatalf("helm rendered the chart with %s", tc.set)
			}
			if !strings.Contains(stderr.String(), "schema") || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("helm refused %s without naming %s:\n%s", tc.set, tc.want, stderr.String())
			}
		})
	}
}

// checkLeaseFlowSchema: the operator's own lease requests, and nothing
// else, go to the leader-election priority level.
func checkLeaseFlowSchema(t *testing.T, r rendered, sa *corev1.ServiceAccount) {
	t.Helper()
	fs := one[flowcontrolv1.FlowSchema](t, r, "FlowSchema")
	if fs.Spec.PriorityLevelConfiguration.Name != "leader-election" {
		t.Errorf("FlowSchema %s sends to priority level %q, want leader-election", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
	}
	// Before service-accounts (9000), where the operator's writes go.
	if fs.Spec.MatchingPrecedence <= 100 || fs.Spec.MatchingPrecedence >= 900 {
		t.Errorf("FlowSchema %s has matching precedence %d, want between the system's leader election (100) and kube-system-service-accounts (900)", fs.Name, fs.Spec.MatchingPrecedence)
	}
	want := flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
			ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: sa.Name, Namespace: sa.Namespace}}},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"get", "create", "update"},
			APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{sa.Namespace}}},
	}
	if len(fs.Spec.Rules) != 1 || !equality.Semantic.DeepEqual(fs.Spec.Rules[0], want) {
		t.Errorf("FlowSchema %s rules %+v, want exactly the operator's leases in its namespace: %+v", fs.Name, fs.Spec.Rules, want)
	}
}

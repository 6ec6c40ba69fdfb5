package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/datapilot/datapilot/internal/testwait"
)

// auditRequests records every request at Metadata level and the bodies of
// writes at Request level: a RoleBinding's roleRef and an object's owner
// references are what RBAC's bind check and the
// OwnerReferencesPermissionEnforcement plugin authorize, and the API server
// audits neither check by itself. The policy is evaluated for the
// authenticated user, before impersonation, so it cannot select the
// operator's account: it records every client of a platform of the test's
// own.
var auditRequests = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [create, update, patch]
- level: Metadata
`)

// access is one authorized request, or one authorization the API server
// made within one.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	return fmt.Sprintf("%s %s.%s %s", a.verb, r, a.group, where)
}

type auditRecord struct {
	Verb             string                     `json:"verb"`
	User             struct{ Username string }  `json:"user"`
	ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
	ObjectRef        *struct {
		Resource, Namespace, Name, Subresource string
		APIGroup                               string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct{ Code int } `json:"responseStatus"`
	RequestObject  json.RawMessage     `json:"requestObject"`
}

// writtenObject is what the audit log keeps of a write's body.
type writtenObject struct {
	Metadata struct {
		OwnerReferences []struct {
			APIVersion, Kind   string
			BlockOwnerDeletion *bool `json:"blockOwnerDeletion"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	RoleRef *rbacv1.RoleRef `json:"roleRef"`
}

// operatorAccesses reads every request of user the API server let through
// (any answer but 403), with the authorizations made inside a write:
// binding a ClusterRole (RBAC's escalation check, namespaced where the
// binding is) and setting a FlinkCluster owner reference that blocks its
// deletion (update on flinkclusters/finalizers, checked by the
// OwnerReferencesPermissionEnforcement admission plugin on creation).
func operatorAccesses(t *testing.T, path, user string) []access {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[access]bool{}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var e auditRecord
		if json.Unmarshal(line, &e) != nil || e.ObjectRef == nil || e.ResponseStatus == nil || e.ResponseStatus.Code == http.StatusForbidden {
			continue
		}
		if e.User.Username != user && (e.ImpersonatedUser == nil || e.ImpersonatedUser.Username != user) {
			continue
		}
		ref := e.ObjectRef
		seen[access{e.Verb, ref.APIGroup, ref.Resource, ref.Subresource, ref.Namespace, ref.Name}] = true
		created := e.Verb == "create" || e.ResponseStatus.Code == http.StatusCreated
		if created && e.Verb == "patch" {
			// A server-side apply that creates the object is authorized
			// for create as well (the patch handler's createAuthorizer).
			seen[access{"create", ref.APIGroup, ref.Resource, ref.Subresource, ref.Namespace, ""}] = true
		}
		if len(e.RequestObject) == 0 || e.ResponseStatus.Code >= 300 {
			continue
		}
		var obj writtenObject
		if json.Unmarshal(e.RequestObject, &obj) != nil {
			continue
		}
		if rr := obj.RoleRef; rr != nil && rr.Kind == "ClusterRole" && ref.Resource == "rolebindings" {
			seen[access{"bind", rbacv1.GroupName, "clusterroles", "", ref.Namespace, rr.Name}] = true
		}
		for _, o := range obj.Metadata.OwnerReferences {
			if created && o.Kind == "FlinkCluster" && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				seen[access{"update", "data.example.com", "flinkclusters", "finalizers", ref.Namespace, ""}] = true
			}
		}
	}
	out := make([]access, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	return out
}

// grant is one verb on one resource that a Role or ClusterRole bound to
// the operator's account gives it; namespace is the Role's ("" for a
// ClusterRole bound cluster-wide).
type grant struct {
	role                               string
	namespace                          string
	verb, group, resource, subresource string
	names                              []string
}

func (g grant) String() string {
	r := g.resource
	if g.subresource != "" {
		r += "/" + g.subresource
	}
	s := fmt.Sprintf("%s %s.%s", g.verb, r, g.group)
	if len(g.names) > 0 {
		s += " " + strings.Join(g.names, ",")
	}
	if g.namespace != "" {
		return s + " (Role " + g.namespace + "/" + g.role + ")"
	}
	return s + " (ClusterRole " + g.role + ")"
}

// key is how allowUnused names a grant: verb resource[/subresource].group.
func (g grant) key() string {
	r := g.resource
	if g.subresource != "" {
		r += "/" + g.subresource
	}
	return g.verb + " " + r + "." + g.group
}

func (g grant) covers(a access) bool {
	return g.verb == a.verb && g.group == a.group && g.resource == a.resource && g.subresource == a.subresource &&
		(g.namespace == "" || g.namespace == a.namespace) && (len(g.names) == 0 || slices.Contains(g.names, a.name))
}

// operatorGrants reads, from the API server, every rule of every Role and
// ClusterRole bound to the ServiceAccount namespace/name, one grant per
// verb and resource. Rules granted to groups it belongs to
// (system:serviceaccounts, system:authenticated: discovery, self-reviews)
// are Kubernetes' own, not the chart's, and not counted.
func operatorGrants(ctx context.Context, t *testing.T, c client.Client, namespace, name string) []grant {
	t.Helper()
	isOperator := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name {
				return true
			}
		}
		return false
	}
	var out []grant
	expand := func(role, ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			if len(r.NonResourceURLs) > 0 {
				t.Errorf("%s grants the non-resource URLs %v; the check reads resources only", role, r.NonResourceURLs)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, v := range r.Verbs {
						if v == "*" || g == "*" || res == "*" {
							t.Errorf("%s grants a wildcard (%s %s.%s): name what the operator needs", role, v, res, g)
						}
						out = append(out, grant{role: role, namespace: ns, verb: v, group: g, resource: resource, subresource: sub, names: r.ResourceNames})
					}
				}
			}
		}
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := c.List(ctx, crbs); err != nil {
		t.Fatal(err)
	}
	for _, b := range crbs.Items {
		if !isOperator(b.Subjects) {
			continue
		}
		cr := &rbacv1.ClusterRole{}
		if err := c.Get(ctx, client.ObjectKey{Name: b.RoleRef.Name}, cr); err != nil {
			t.Fatal(err)
		}
		expand(cr.Name, "", cr.Rules)
	}
	rbs := &rbacv1.RoleBindingList{}
	if err := c.List(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	for _, b := range rbs.Items {
		if !isOperator(b.Subjects) {
			continue
		}
		var rules []rbacv1.PolicyRule
		if b.RoleRef.Kind == "ClusterRole" {
			cr := &rbacv1.ClusterRole{}
			if err := c.Get(ctx, client.ObjectKey{Name: b.RoleRef.Name}, cr); err != nil {
				t.Fatal(err)
			}
			rules = cr.Rules
		} else {
			r := &rbacv1.Role{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.RoleRef.Name}, r); err != nil {
				t.Fatal(err)
			}
			rules = r.Rules
		}
		expand(b.RoleRef.Name, b.Namespace, rules)
	}
	return out
}

// unusedGrants are the grants no access used, less the allowed ones.
func unusedGrants(grants []grant, used []access, allowed map[string]string) []string {
	var out []string
	for _, g := range grants {
		if _, ok := allowed[g.key()]; ok || slices.ContainsFunc(used, g.covers) {
			continue
		}
		out = append(out, g.String())
	}
	sort.Strings(out)
	return out
}

// checkLeastPrivilege fails on every right the chart gives the operator's
// account that no request of the operator's in the audit log used: a
// right nothing in the tests needs is a right a compromised operator has
// for nothing. An entry of allowUnused says why a grant cannot be used
// where a test can see it.
func checkLeastPrivilege(ctx context.Context, t *testing.T, admin client.Client, auditLog, namespace, account string, allowUnused map[string]string) {
	t.Helper()
	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, account)
	used := operatorAccesses(t, auditLog, user)
	grants := operatorGrants(ctx, t, admin, namespace, account)
	if len(grants) == 0 || len(used) == 0 {
		t.Fatalf("%d grants to %s, %d accesses in the audit log: the check proves nothing", len(grants), user, len(used))
	}
	if unused := unusedGrants(grants, used, allowUnused); len(unused) > 0 {
		lines := make([]string, len(used))
		for i, a := range used {
			lines[i] = a.String()
		}
		sort.Strings(lines)
		t.Errorf("The chart grants %s %d rights no request used:\n%s\nThe requests it made:\n%s",
			user, len(unused), strings.Join(unused, "\n"), strings.Join(slices.Compact(lines), "\n"))
	}
}

// checkMetricsAuth scrapes the operator's metrics at addr as a Prometheus
// would: with the token of an account bound to the chart's metrics-reader
// ClusterRole it gets them, with an account's token that is not bound it is
// refused. The operator asks the API server about each token (a TokenReview
// and a SubjectAccessReview, the chart's rights for them).
func checkMetricsAuth(ctx context.Context, t *testing.T, cfg *rest.Config, admin client.Client, namespace, release, addr string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("prometheus"), token("stranger")
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-datapilot-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "prometheus"}},
	}); err != nil {
		t.Fatal(err)
	}
	// The operator's certificate is its own, self-signed.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// RBAC's cache may lag the new binding by a moment.
	testwait.Until(t, time.Minute, func() error {
		code, body, err := scrape(scraper)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Errorf("the metrics-reader's scrape: HTTP %d", code)
		}
		return nil
	})
	if code, _, err := scrape(stranger); err != nil || code != http.StatusForbidden {
		t.Errorf("An account without the metrics-reader role scraped: HTTP %d (%v), want 403", code, err)
	}
	if code, _, err := scrape("not-a-token"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("A scrape with a bad token: HTTP %d (%v), want 401", code, err)
	}
}

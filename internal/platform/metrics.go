package platform

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// JarHost is where the local platform's job jars are served from (the
// Flink REST simulator's /artifacts/ and the tests' jar servers, on
// loopback). The operator refuses to fetch jars from loopback unless told
// otherwise: every tier that runs it against the platform passes
// --jar-allowed-hosts=JarHost.
const JarHost = "127.0.0.1"

// MetricsReader is the identity the tests and benchmarks scrape the
// operator's metrics as: a ServiceAccount in kube-system allowed get on
// the non-resource URL /metrics, as a Prometheus is.
const MetricsReader = "datapilot-metrics-reader"

// MetricsClient returns an HTTP client that scrapes the operator's
// metrics endpoint the way a Prometheus does: with a bearer token the API
// server authenticates and authorizes, over HTTPS, trusting the operator's
// self-signed serving certificate without verifying it (the endpoint is on
// loopback; the token is what is checked).
func (p *Platform) MetricsClient(ctx context.Context) (*http.Client, error) {
	return MetricsClientFor(ctx, p.RESTConfig())
}

// MetricsClientFor is MetricsClient for the API server of cfg, which must
// be allowed to create ServiceAccounts, their tokens and RBAC objects.
func MetricsClientFor(ctx context.Context, cfg *rest.Config) (*http.Client, error) {
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	token, err := metricsToken(ctx, k)
	if err != nil {
		return nil, err
	}
	return TokenClient(token), nil
}

// MetricsToken is a bearer token of the metrics reader, for a scraper
// that is not a Go client (the tests' Prometheus).
func (p *Platform) MetricsToken(ctx context.Context) (string, error) {
	k, err := kubernetes.NewForConfig(p.RESTConfig())
	if err != nil {
		return "", err
	}
	return metricsToken(ctx, k)
}

// TokenClient is an HTTPS client that sends token as a bearer token and
// does not verify the server's certificate (see MetricsClient).
func TokenClient(token string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback, self-signed; see MetricsClient
	return &http.Client{Timeout: 30 * time.Second, Transport: bearer{token, tr}}
}

// metricsToken creates the reader's account, its ClusterRole and binding
// (each kept when it exists), and a token for it.
func metricsToken(ctx context.Context, k kubernetes.Interface) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: MetricsReader, Namespace: "kube-system"}}
	if _, err := k.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ServiceAccount %s: %w", MetricsReader, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: MetricsReader},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := k.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ClusterRole %s: %w", MetricsReader, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: MetricsReader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: MetricsReader, Namespace: sa.Namespace}}}
	if _, err := k.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ClusterRoleBinding %s: %w", MetricsReader, err)
	}
	day := int64(24 * 3600)
	tr, err := k.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, MetricsReader,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create a token for %s: %w", MetricsReader, err)
	}
	return tr.Status.Token, nil
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

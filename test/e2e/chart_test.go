package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/platform/platformtest"
)

// TestChartInstallRunsOperator installs the Helm chart into the local
// platform, then runs the operator in this process with exactly the chart's
// permissions (impersonating its ServiceAccount, leader election in the
// release namespace) and shows it takes the reference example to Available
// and deletes it again, without one request the API server forbids. It
// starts a platform of its own: the shared one runs an operator with admin
// rights, which would reconcile the example whatever the chart grants.
func TestChartInstallRunsOperator(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(bin, "helm")); err != nil {
		t.Fatal("bin/helm is missing: run 'make tools'")
	}
	p := platformtest.StartWith(t, platform.Options{BinDir: bin})

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	admin, err := client.New(p.RESTConfig(), client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	// The release namespace enforces the restricted Pod Security Standard,
	// so the operator's pod is admitted only if the chart's is compliant.
	const release, ns = "datapilot", "datapilot-system"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}); err != nil {
		t.Fatal(err)
	}
	// kwok runs no images: the chart's pod turns Ready without running the
	// operator, which this test runs in-process instead.
	helm := exec.CommandContext(ctx, filepath.Join(bin, "helm"), "install", release, filepath.Join(root, "charts", "datapilot"),
		"--kubeconfig", p.KubeconfigPath(), "--namespace", ns, "--wait", "--timeout", "2m")
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
	if dep.Status.ReadyReplicas != 1 {
		t.Fatalf("The chart's Deployment has %d ready replicas after helm install --wait, want 1", dep.Status.ReadyReplicas)
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName

	// The operator, as the chart's ServiceAccount. Every 403 is recorded.
	cfg := p.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)}
	forbidden := &forbiddenRecorder{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return forbidden.wrap(rt) })
	opts, err := operator.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.LeaderElection, opts.LeaderElectionNamespace = true, ns
	// The conversion webhook as the chart runs it, but reached by URL: the
	// operator patches the CRD's caBundle with the chart's permissions.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts.WebhookCertMode, opts.WebhookHost, opts.WebhookPort = operator.WebhookCertSelfSigned, "127.0.0.1", port
	opts.WebhookURL = fmt.Sprintf("https://127.0.0.1:%d/convert", port)
	mgr, err := operator.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stopMgr()
		if err := <-done; err != nil {
			t.Errorf("Operator: %v", err)
		}
	})

	// The API server converts v1alpha1 through the webhook, whose CA the
	// operator injected as the chart's ServiceAccount.
	eventually(t, ctx, time.Minute, func() error {
		return admin.Create(ctx, &v1alpha1.FlinkCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "conversion-probe"},
			Spec: v1alpha1.FlinkClusterSpec{Version: "1.17.1", TaskManager: v1.TaskManagerSpec{Replicas: 1},
				Kafka: &v1alpha1.KafkaSpec{BootstrapServers: "kafka:9092"}},
		}, client.DryRunAll)
	})

	// The reference example, in a namespace of its own.
	raw, err := os.ReadFile(filepath.Join(root, "examples", "realtime-warehouse.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(raw, fc); err != nil {
		t.Fatal(err)
	}
	fc.Namespace = "analytics"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fc.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, fc); err != nil {
		t.Fatalf("Create the reference example: %v", err)
	}
	key := client.ObjectKeyFromObject(fc)
	eventually(t, ctx, 3*time.Minute, func() error {
		if err := admin.Get(ctx, key, fc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAvailable)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != fc.Generation {
			return fmt.Errorf("not Available: phase %q, conditions %+v", fc.Status.Phase, fc.Status.Conditions)
		}
		return nil
	})
	t.Logf("%s is Available: JobManagers %s, TaskManagers %s, phase %s", key, fc.Status.JobManager.Ready, fc.Status.TaskManager.Ready, fc.Status.Phase)

	// The operator led through the chart's namespaced Role.
	lease := &coordinationv1.Lease{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "datapilot.data.example.com"}, lease); err != nil {
		t.Errorf("No leader-election lease in %s: %v", ns, err)
	}

	// Deletion runs the finalizer's cleanup with the same permissions.
	if err := admin.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, func() error {
		err := admin.Get(ctx, key, &v1.FlinkCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still exists (%v)", key, err)
	})

	if f := forbidden.all(); len(f) > 0 {
		t.Errorf("The API server forbade the operator %d requests:\n%s", len(f), strings.Join(f, "\n"))
	}
}

// forbiddenRecorder remembers every request answered 403 Forbidden.
type forbiddenRecorder struct {
	mu   sync.Mutex
	list []string
}

func (f *forbiddenRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			f.mu.Lock()
			f.list = append(f.list, req.Method+" "+req.URL.Path)
			f.mu.Unlock()
		}
		return resp, err
	})
}

func (f *forbiddenRecorder) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.list...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return r(req) }

// eventually polls f until it returns nil, the timeout passes or ctx ends.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("Not within %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

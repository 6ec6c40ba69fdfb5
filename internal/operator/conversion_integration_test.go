package operator_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/testwait"
	"github.com/datapilot/datapilot/internal/webhookcert"
)

// conversionEnv is a real kube-apiserver with the generated CRD (no
// conversion stanza: the operator writes it) and the operator's manager in
// self-signed mode, serving /convert on a loopback port.
type conversionEnv struct {
	env        *envtest.Environment
	cfg        *rest.Config
	c          client.Client
	webhookURL string
	// cache is the operator's own.
	cache cache.Cache
	// metricsAddr serves the manager's metrics, behind authentication.
	metricsAddr string
}

func startConversionEnv(t *testing.T) *conversionEnv {
	t.Helper()
	env, err := testenv.Environment()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("Start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stop envtest: %v", err)
		}
	})

	port := freePort(t)
	opts, err := operator.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElection = metricsAddr, "0", false
	opts.WebhookCertMode = operator.WebhookCertSelfSigned
	opts.WebhookHost, opts.WebhookPort = "127.0.0.1", port
	opts.WebhookURL = fmt.Sprintf("https://127.0.0.1:%d/convert", port)
	opts.IgnoredNamespaces = []string{ignoredNamespace}
	mgr, err := operator.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Manager: %v", err)
		}
	})

	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ce := &conversionEnv{env: env, cfg: cfg, c: c, webhookURL: opts.WebhookURL, metricsAddr: metricsAddr, cache: mgr.GetCache()}

	// The operator points the CRD at itself...
	testwait.Until(t, 30*time.Second, func() error {
		crd := ce.crd(t)
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil ||
			conv.Webhook.ClientConfig.URL == nil || *conv.Webhook.ClientConfig.URL != opts.WebhookURL || len(conv.Webhook.ClientConfig.CABundle) == 0 {
			return fmt.Errorf("conversion stanza not injected: %+v", conv)
		}
		return nil
	})
	// ...and the API server, once it has picked the change up, converts
	// through it: a v1alpha1 dry-run create needs a conversion to v1.
	testwait.Until(t, 30*time.Second, func() error {
		return c.Create(context.Background(), alphaCluster("default", "probe", "kafka:9092"), client.DryRunAll)
	})
	return ce
}

func (ce *conversionEnv) crd(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := ce.c.Get(context.Background(), client.ObjectKey{Name: operator.FlinkClusterCRD}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func (ce *conversionEnv) namespace(t *testing.T, name string) string {
	t.Helper()
	if err := ce.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func alphaCluster(ns, name, servers string) *v1alpha1.FlinkCluster {
	return &v1alpha1.FlinkCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.FlinkClusterSpec{
			Version:     "1.17.1",
			TaskManager: v1alpha1.TaskManagerSpec{Replicas: 2, Slots: 2},
			Kafka: &v1alpha1.KafkaSpec{
				BootstrapServers: servers,
				SASL:             &v1alpha1.KafkaSASL{SecretRef: v1alpha1.SecretReference{Name: "kafka-sasl"}},
			},
		},
	}
}

func TestConversionWebhook(t *testing.T) {
	ce := startConversionEnv(t)
	ctx := t.Context()
	c := ce.c

	t.Run("memory Flink would refuse is refused at admission", func(t *testing.T) { testMemoryAdmission(t, ce) })
	t.Run("the cleanup finalizer comes with the create", func(t *testing.T) { testFinalizerAdmission(t, ce) })
	t.Run("an ignored namespace is left alone", func(t *testing.T) { testIgnoredNamespace(t, ce) })

	t.Run("v1alpha1 object reads as v1", func(t *testing.T) {
		ns := ce.namespace(t, "alpha-to-v1")
		if err := c.Create(ctx, alphaCluster(ns, "orders", "kafka-0:9092,kafka-1:9092")); err != nil {
			t.Fatalf("Create as v1alpha1: %v", err)
		}
		got := &v1.FlinkCluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, got); err != nil {
			t.Fatalf("Get as v1: %v", err)
		}
		if got.Spec.Kafka == nil || got.Spec.Kafka.Bootstrap.Servers != "kafka-0:9092,kafka-1:9092" {
			t.Errorf("v1 spec.kafka = %+v, want bootstrap.servers kafka-0:9092,kafka-1:9092", got.Spec.Kafka)
		}
		if got.Spec.Kafka != nil && (got.Spec.Kafka.SASL == nil || got.Spec.Kafka.SASL.SecretRef.Name != "kafka-sasl") {
			t.Errorf("v1 spec.kafka.sasl = %+v, want the secret reference", got.Spec.Kafka.SASL)
		}
		// Defaults of the v1 schema apply to an object written as v1alpha1.
		if got.Spec.JobManager.Replicas != 1 {
			t.Errorf("v1 spec.jobManager.replicas = %d, want the default 1", got.Spec.JobManager.Replicas)
		}
	})

	t.Run("v1 object reads as v1alpha1", func(t *testing.T) {
		ns := ce.namespace(t, "v1-to-alpha")
		fc := &v1.FlinkCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments"},
			Spec: v1.FlinkClusterSpec{
				Version: "1.18.1", TaskManager: v1.TaskManagerSpec{Replicas: 1},
				Kafka: &v1.KafkaSpec{Bootstrap: v1.KafkaBootstrap{Servers: "broker:9093"},
					TLS: &v1.KafkaTLS{Enabled: true, SecretRef: &v1.SecretReference{Name: "kafka-tls"}}},
			},
		}
		if err := c.Create(ctx, fc); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.FlinkCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), got); err != nil {
			t.Fatalf("Get as v1alpha1: %v", err)
		}
		if got.Spec.Kafka == nil || got.Spec.Kafka.BootstrapServers != "broker:9093" || got.Spec.Kafka.TLS == nil || !got.Spec.Kafka.TLS.Enabled {
			t.Errorf("v1alpha1 spec.kafka = %+v, want bootstrapServers broker:9093 with TLS", got.Spec.Kafka)
		}
		// Raw JSON too: no v1 field leaks into the v1alpha1 shape.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("FlinkCluster"))
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), u); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "kafka", "bootstrap"); found {
			t.Error("The v1alpha1 object has spec.kafka.bootstrap")
		}
		// An update through v1alpha1 lands in v1. The operator writes
		// too (finalizer, status): retry on conflict.
		testwait.Until(t, 10*time.Second, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(fc), got); err != nil {
				return err
			}
			got.Spec.Kafka.BootstrapServers = "broker-2:9093"
			return c.Update(ctx, got)
		})
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
			t.Fatal(err)
		}
		if fc.Spec.Kafka.Bootstrap.Servers != "broker-2:9093" || fc.Spec.Kafka.TLS == nil {
			t.Errorf("After a v1alpha1 update, v1 spec.kafka = %+v", fc.Spec.Kafka)
		}
	})

	// The reference design's CI check (its anti-pattern 4), with what
	// replaced `kubectl convert`: apply the old manifest with kubectl and
	// read it back through the v1 endpoint.
	t.Run("legacy v1alpha1 manifest applies with kubectl and reads back as v1", func(t *testing.T) {
		ns := ce.namespace(t, "legacy")
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(kubeconfig, ce.env.KubeConfig, 0o600); err != nil {
			t.Fatal(err)
		}
		kubectl := func(args ...string) string {
			t.Helper()
			cmd := exec.CommandContext(ctx, filepath.Join(testenv.Root(), "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
			}
			return out.String() + errOut.String()
		}
		out := kubectl("apply", "-f", filepath.Join(testenv.Root(), "examples", "v1alpha1-legacy.yaml"))
		if !strings.Contains(out, "deprecated") {
			t.Errorf("kubectl apply of a v1alpha1 manifest printed no deprecation warning:\n%s", out)
		}
		servers := kubectl("get", "flinkclusters.v1.data.example.com", "legacy-orders", "-o", "jsonpath={.apiVersion} {.spec.kafka.bootstrap.servers}")
		if servers != "data.example.com/v1 kafka-0.kafka:9092,kafka-1.kafka:9092" {
			t.Errorf("Read back as v1: %q", servers)
		}
		// Applying it again (the old manifest still is the source of truth
		// for its owner) leaves the spec as it was.
		generation := kubectl("get", "flinkclusters.v1.data.example.com", "legacy-orders", "-o", "jsonpath={.metadata.generation}")
		kubectl("apply", "-f", filepath.Join(testenv.Root(), "examples", "v1alpha1-legacy.yaml"))
		if again := kubectl("get", "flinkclusters.v1.data.example.com", "legacy-orders", "-o", "jsonpath={.metadata.generation}"); again != generation {
			t.Errorf("Re-applying the legacy manifest changed the generation from %s to %s", generation, again)
		}
		if stored := ce.crd(t).Status.StoredVersions; len(stored) != 1 || stored[0] != "v1" {
			t.Errorf("CRD storedVersions = %v, want [v1]", stored)
		}
	})

	t.Run("a v1alpha1 object is reconciled to the same children as its v1 twin", func(t *testing.T) {
		nsV1, nsAlpha := ce.namespace(t, "twin-v1"), ce.namespace(t, "twin-alpha")
		alpha := alphaCluster(nsAlpha, "orders", "kafka:9092")
		if err := c.Create(ctx, alpha); err != nil {
			t.Fatal(err)
		}
		twin := &v1.FlinkCluster{}
		if err := alpha.ConvertTo(twin); err != nil {
			t.Fatal(err)
		}
		twin.ObjectMeta = metav1.ObjectMeta{Namespace: nsV1, Name: "orders"}
		if err := c.Create(ctx, twin); err != nil {
			t.Fatal(err)
		}
		for _, obj := range []struct {
			name string
			new  func() client.Object
		}{
			{"orders-config", func() client.Object { return &corev1.ConfigMap{} }},
			{"orders-jobmanager", func() client.Object { return &appsv1.StatefulSet{} }},
			{"orders-taskmanager", func() client.Object { return &appsv1.StatefulSet{} }},
			{"orders-jobmanager", func() client.Object { return &corev1.Service{} }},
		} {
			var fromV1, fromAlpha client.Object
			testwait.Until(t, 30*time.Second, func() error {
				fromV1, fromAlpha = obj.new(), obj.new()
				if err := c.Get(ctx, client.ObjectKey{Namespace: nsV1, Name: obj.name}, fromV1); err != nil {
					return err
				}
				return c.Get(ctx, client.ObjectKey{Namespace: nsAlpha, Name: obj.name}, fromAlpha)
			})
			a, b := comparable(t, fromV1, nsV1), comparable(t, fromAlpha, nsAlpha)
			if a != b {
				t.Errorf("%T %s differs between the v1 and the v1alpha1 cluster:\nv1:       %s\nv1alpha1: %s", fromV1, obj.name, a, b)
			}
			if _, ok := fromAlpha.(*appsv1.StatefulSet); ok && !strings.Contains(b, `"KAFKA_BOOTSTRAP_SERVERS","value":"kafka:9092"`) {
				t.Errorf("The TaskManagers of the v1alpha1 cluster do not get its bootstrap servers: %s", b)
			}
		}
	})

	t.Run("a second replica's CA joins the bundle and nothing flaps", func(t *testing.T) {
		before := ce.crd(t)
		crds, err := webhookcert.CRDClient(ce.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := webhookcert.New(webhookcert.Options{
			CRDName: operator.FlinkClusterCRD, URL: ce.webhookURL, Hosts: []string{"127.0.0.1"},
			CertDir: t.TempDir(), CRDs: crds, Reader: c, Writer: c,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := second.Inject(ctx); err != nil {
			t.Fatal(err)
		}
		after := ce.crd(t)
		if n := strings.Count(string(after.Spec.Conversion.Webhook.ClientConfig.CABundle), "BEGIN CERTIFICATE"); n != 2 {
			t.Errorf("caBundle holds %d certificates after a second replica injected its CA, want 2", n)
		}
		if !bytes.Contains(after.Spec.Conversion.Webhook.ClientConfig.CABundle, before.Spec.Conversion.Webhook.ClientConfig.CABundle) {
			t.Error("The first replica's CA left the bundle")
		}
		// Conversions, served by the first replica, still verify.
		if err := c.Create(ctx, alphaCluster("default", "after-second-ca", "kafka:9092"), client.DryRunAll); err != nil {
			t.Errorf("Conversion after a second CA joined: %v", err)
		}
		if err := second.Inject(ctx); err != nil {
			t.Fatal(err)
		}
		if rv := ce.crd(t).ResourceVersion; rv != after.ResourceVersion {
			t.Errorf("An unchanged injection wrote the CRD (resourceVersion %s -> %s)", after.ResourceVersion, rv)
		}
	})

	// One API server and manager serve every test of the package: the
	// manager's controller name may be registered once per process.
	t.Run("no field injects into the rendered files", func(t *testing.T) { testNoFieldInjects(t, ce) })
	t.Run("metrics answer only authenticated and authorized clients", func(t *testing.T) { testSecureMetrics(t, ce) })
}

// comparable is obj's spec or data as JSON with its namespace blanked, for
// comparing the children of two clusters of the same name.
func comparable(t *testing.T, obj client.Object, ns string) string {
	t.Helper()
	var part any
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		part = o.Data
	case *appsv1.StatefulSet:
		part = o.Spec
	case *corev1.Service:
		s := o.Spec.DeepCopy()
		s.ClusterIP, s.ClusterIPs = "", nil
		part = s
	}
	raw, err := yaml.Marshal(part)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(j), ns, "NAMESPACE")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

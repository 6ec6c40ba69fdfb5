package operator

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/webhookcert"
)

// FlinkClusterCRD is the name of the CRD whose conversion the operator serves.
var FlinkClusterCRD = "flinkclusters." + v1.GroupVersion.Group

// webhookServer is the conversion webhook's server, or nil with cert mode
// none. With self-signed, certDir is filled in; a dir the operator made
// itself is removed once the server has stopped.
func webhookServer(o Options, certDir string, removeCertDir bool) webhook.Server {
	if o.WebhookCertMode == WebhookCertNone {
		return nil
	}
	s := webhook.NewServer(webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: certDir})
	if removeCertDir {
		return removingServer{Server: s, dir: certDir}
	}
	return s
}

// removingServer removes the server's temporary cert dir after it stops.
type removingServer struct {
	webhook.Server
	dir string
}

func (s removingServer) Start(ctx context.Context) error {
	defer os.RemoveAll(s.dir)
	return s.Server.Start(ctx)
}

// selfSignedCertDir is where a self-signed pair goes, and whether the
// operator made the dir (and removes it when it stops).
func selfSignedCertDir(o Options) (string, bool, error) {
	if o.WebhookCertDir != "" {
		return o.WebhookCertDir, false, nil
	}
	dir, err := os.MkdirTemp("", "datapilot-webhook-")
	if err != nil {
		return "", false, fmt.Errorf("creating a webhook cert dir: %w", err)
	}
	return dir, true, nil
}

// setUpConversion serves /convert, ValidatePath and FinalizerPath for
// FlinkCluster on the manager's webhook server and, with self-signed, adds
// the Injector that makes the API server call and trust them (the CRD's
// conversion, and the Validating- and MutatingWebhookConfiguration it
// keeps). In dir mode the deployment provides the configurations.
func setUpConversion(mgr manager.Manager, o Options, certDir string) error {
	if o.WebhookCertMode == WebhookCertNone {
		return nil
	}
	// v1 is the hub and v1alpha1 a Convertible spoke, both in the scheme:
	// the builder registers controller-runtime's conversion handler.
	if err := ctrl.NewWebhookManagedBy(mgr, &v1.FlinkCluster{}).WithValidator(validator{}).WithValidatorCustomPath(ValidatePath).Complete(); err != nil {
		return fmt.Errorf("set up the FlinkCluster conversion and validating webhooks: %w", err)
	}
	adder := finalizerAdder{decoder: admission.NewDecoder(mgr.GetScheme()), watched: map[string]bool{}, ignored: map[string]bool{}}
	for _, ns := range o.WatchNamespaces {
		adder.watched[ns] = true
	}
	for _, ns := range o.IgnoredNamespaces {
		adder.ignored[ns] = true
	}
	mgr.GetWebhookServer().Register(FinalizerPath, &webhook.Admission{Handler: adder})
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if o.WebhookCertMode != WebhookCertSelfSigned {
		return nil
	}
	crds, err := webhookcert.CRDClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	io, err := injectorOptions(o, certDir)
	if err != nil {
		return err
	}
	io.CRDs, io.Reader, io.Writer = crds, mgr.GetAPIReader(), mgr.GetClient()
	io.Log = ctrl.Log.WithName("webhook-cert")
	injector, err := webhookcert.New(io)
	if err != nil {
		return err
	}
	if err := mgr.Add(injector); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("conversion-ca", injector.Checker)
}

// injectorOptions is what the self-signed Injector keeps, for the operator
// options: the CRD's conversion, and the validating and mutating webhooks,
// pointing at the webhook URL or Service. The clients are the caller's.
func injectorOptions(o Options, certDir string) (webhookcert.Options, error) {
	io := webhookcert.Options{CRDName: FlinkClusterCRD, CertDir: certDir}
	if o.WebhookURL != "" {
		u, err := url.Parse(o.WebhookURL)
		if err != nil {
			return io, err
		}
		io.URL, io.Hosts = o.WebhookURL, []string{u.Hostname()}
		validate, mutate := *u, *u
		validate.Path, mutate.Path = ValidatePath, FinalizerPath
		io.Validating = &webhookcert.Validating{Name: ValidatingWebhookName,
			Webhook: validatingWebhook(admissionregistrationv1.WebhookClientConfig{URL: ptr.To(validate.String())})}
		io.Mutating = &webhookcert.Mutating{Name: MutatingWebhookName,
			Webhook: finalizerWebhook(admissionregistrationv1.WebhookClientConfig{URL: ptr.To(mutate.String())})}
	} else {
		ns, name, err := webhookService(o.WebhookService)
		if err != nil {
			return io, err
		}
		io.Service = &apiextensionsv1.ServiceReference{Namespace: ns, Name: name, Path: ptr.To("/convert"), Port: ptr.To(int32(o.WebhookPort))}
		io.Validating = &webhookcert.Validating{Name: ValidatingWebhookName,
			Webhook: validatingWebhook(admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: ns, Name: name, Path: ptr.To(ValidatePath), Port: ptr.To(int32(o.WebhookPort))}})}
		io.Mutating = &webhookcert.Mutating{Name: MutatingWebhookName,
			Webhook: finalizerWebhook(admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: ns, Name: name, Path: ptr.To(FinalizerPath), Port: ptr.To(int32(o.WebhookPort))}})}
		io.Hosts = []string{name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local", name + "." + ns, name}
	}
	return io, nil
}

// webhookService splits [namespace/]name; a bare name is in the pod's
// namespace.
func webhookService(s string) (string, string, error) {
	if ns, name, ok := strings.Cut(s, "/"); ok {
		return ns, name, nil
	}
	if ns := podNamespace(); ns != "" {
		return ns, s, nil
	}
	return "", "", fmt.Errorf("webhook service %q has no namespace and the pod's is unknown (POD_NAMESPACE): give namespace/name", s)
}

// podNamespace is POD_NAMESPACE, else the service account's namespace in a
// pod, else empty.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(raw))
	}
	return ""
}

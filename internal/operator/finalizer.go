package operator

import (
	"context"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/controller"
)

// MutatingWebhookName is the MutatingWebhookConfiguration the operator
// keeps in self-signed mode, and FinalizerPath where it serves it.
const (
	MutatingWebhookName = "datapilot-mutating"
	FinalizerPath       = "/mutate-data-example-com-v1-flinkcluster-finalizer"
)

// finalizerAdder puts the cleanup finalizer into a FlinkCluster as it is
// created, when the cluster will need one (controller.NeedsFinalizer): it
// is in the object from its first write, and the operator does not patch it
// in afterwards, one write fewer per cluster. The finalizer stays the
// controller's: this webhook sees only creates, so a finalizer removed
// later (a replace, the cleanup at deletion) is never put back by it, and
// a create it did not see (it fails open) gets the finalizer from the
// controller before anything runs (Reconciler.ensureFinalizer).
//
// With --watch-namespace it adds nothing outside those namespaces, with
// --ignore-namespace nothing inside those: the API server calls it for
// every namespace, and a finalizer no operator watches for would hold the
// cluster's deletion forever.
type finalizerAdder struct {
	decoder admission.Decoder
	// watched is the namespaces the operator reconciles; empty for all.
	watched map[string]bool
	// ignored is the namespaces it leaves alone.
	ignored map[string]bool
}

func (f finalizerAdder) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	if len(f.watched) > 0 && !f.watched[req.Namespace] || f.ignored[req.Namespace] {
		return admission.Allowed("not a watched namespace")
	}
	fc := &v1.FlinkCluster{}
	if err := f.decoder.Decode(req, fc); err != nil {
		// Not refused for it: the controller adds the finalizer.
		return admission.Allowed("not decoded; the operator adds its finalizer")
	}
	if !controller.NeedsFinalizer(fc) || controllerutil.ContainsFinalizer(fc, controller.Finalizer) {
		return admission.Allowed("")
	}
	// Exactly this one change: a patch computed from the typed object
	// would also write its zero values into the user's object.
	op := jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/finalizers", Value: []string{controller.Finalizer}}
	if len(fc.Finalizers) > 0 {
		op = jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/finalizers/-", Value: controller.Finalizer}
	}
	return admission.Patched("", op)
}

// finalizerWebhook is the webhook the API server calls on every create of
// a FlinkCluster (any served version, converted to v1 first). It fails
// open, as the validating webhook does (validatingWebhook): the
// controller's own patch is the fallback.
func finalizerWebhook(cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:         "finalizer.flinkclusters." + v1.GroupVersion.Group,
		ClientConfig: cc,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{v1.GroupVersion.Group}, APIVersions: []string{v1.GroupVersion.Version},
				Resources: []string{"flinkclusters"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To(int32(10)),
		// Stated as the API server defaults them: a webhook without them
		// differs from the one read back, and the Injector's check would
		// patch it every minute.
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
		MatchConditions:   []admissionregistrationv1.MatchCondition{{Name: "needs-finalizer", Expression: NeedsFinalizerCEL}},
	}
}

// NeedsFinalizerCEL is controller.NeedsFinalizer as the webhook's match
// condition: the API server calls the webhook only for a cluster that
// will need the finalizer, and a session cluster's create, which would get
// nothing from it, costs no call (at N = 1000, 1.4 ms of the API server's
// CPU each and the operator's own handling). Every step is guarded by
// has(): a condition that fails to evaluate refuses the create, whatever
// the failure policy (k8s.io/apiserver generic.Webhook#ShouldCallHook).
// TestFinalizerAdmission creates one cluster for each way NeedsFinalizer
// can answer and finds the two agree.
const NeedsFinalizerCEL = `has(object.spec) && (has(object.spec.job) ||
  (has(object.spec.taskManager) && has(object.spec.taskManager.storage)) ||
  (has(object.spec.highAvailability) && has(object.spec.highAvailability.mode) && object.spec.highAvailability.mode == '` + string(v1.HighAvailabilityKubernetes) + `'))`

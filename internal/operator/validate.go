package operator

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/resources"
)

// ValidatingWebhookName is the ValidatingWebhookConfiguration the operator
// keeps in self-signed mode, and ValidatePath where it serves it.
const (
	ValidatingWebhookName = "datapilot-validating"
	ValidatePath          = "/validate-data-example-com-v1-flinkcluster"
)

// validator refuses at admission what the CRD's schema and CEL rules
// cannot: a memory configuration Flink would not start (the arithmetic of
// ProcessMemoryUtils, with Flink's MemorySize syntax).
type validator struct{}

var _ admission.Validator[*v1.FlinkCluster] = validator{}

func (validator) ValidateCreate(_ context.Context, fc *v1.FlinkCluster) (admission.Warnings, error) {
	return nil, invalid(fc)
}

// ValidateUpdate checks a changed spec only: an object admitted before
// this check (or its finalizer's removal) is never stuck.
func (validator) ValidateUpdate(_ context.Context, old, fc *v1.FlinkCluster) (admission.Warnings, error) {
	if !fc.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, fc.Spec) {
		return nil, nil
	}
	return nil, invalid(fc)
}

func (validator) ValidateDelete(context.Context, *v1.FlinkCluster) (admission.Warnings, error) {
	return nil, nil
}

func invalid(fc *v1.FlinkCluster) error {
	if errs := append(resources.MemoryErrors(fc), resources.AddressErrors(fc)...); len(errs) > 0 {
		return apierrors.NewInvalid(v1.GroupVersion.WithKind("FlinkCluster").GroupKind(), fc.Name, errs)
	}
	return nil
}

// validatingWebhook is the webhook the API server calls on every create
// and update of a FlinkCluster (any served version: matchPolicy
// Equivalent converts to v1 first). It fails open: a self-signed operator
// makes a new CA at every start, and until the configuration trusts it (a
// second or so after a restart) a closed webhook would refuse every write
// to every FlinkCluster, the operator's own included.
func validatingWebhook(cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:         "flinkclusters." + v1.GroupVersion.Group,
		ClientConfig: cc,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{v1.GroupVersion.Group}, APIVersions: []string{v1.GroupVersion.Version},
				Resources: []string{"flinkclusters"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To(int32(10)),
		// Stated as the API server defaults them: a webhook without them
		// differs from the one read back, and the Injector's check would
		// patch it every minute.
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
	}
}

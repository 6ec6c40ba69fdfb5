package webhookcert

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;patch,resourceNames=datapilot-mutating

// Mutating is a MutatingWebhookConfiguration the Injector keeps, as it
// keeps Validating: its one webhook as given, with the Injector's CA in
// its caBundle.
type Mutating struct {
	Name    string
	Webhook admissionregistrationv1.MutatingWebhook
}

// injectMutating is injectValidating for the mutating configuration.
func (in *Injector) injectMutating(ctx context.Context, ca []byte) error {
	m := in.o.Mutating
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cur := &admissionregistrationv1.MutatingWebhookConfiguration{}
		err := in.o.Reader.Get(ctx, client.ObjectKey{Name: m.Name}, cur)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", m.Name, err)
		}
		var bundle []byte
		if len(cur.Webhooks) == 1 && cur.Webhooks[0].Name == m.Webhook.Name {
			bundle = cur.Webhooks[0].ClientConfig.CABundle
		}
		want := *m.Webhook.DeepCopy()
		want.ClientConfig.CABundle = mergeBundle(bundle, ca, in.now(), MaxOtherCAs)
		if apierrors.IsNotFound(err) {
			create := &admissionregistrationv1.MutatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: m.Name},
				Webhooks:   []admissionregistrationv1.MutatingWebhook{want},
			}
			if err := in.o.Writer.Create(ctx, create); err != nil {
				return err
			}
			in.o.Log.Info("Created the mutating webhook configuration", "name", m.Name)
			return nil
		}
		if len(cur.Webhooks) == 1 && equality.Semantic.DeepEqual(cur.Webhooks[0], want) {
			return nil
		}
		patched := cur.DeepCopy()
		patched.Webhooks = []admissionregistrationv1.MutatingWebhook{want}
		if err := in.o.Writer.Patch(ctx, patched, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		in.o.Log.Info("Pointed the mutating webhook at this operator", "name", m.Name, "caBundleCertificates", countCerts(want.ClientConfig.CABundle))
		return nil
	})
}

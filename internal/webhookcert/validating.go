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

// Creating cannot be limited to one name; reading and patching are.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;patch,resourceNames=datapilot-validating

// Validating is a ValidatingWebhookConfiguration the Injector keeps: its
// one webhook as given, with the Injector's CA in its caBundle.
type Validating struct {
	Name    string
	Webhook admissionregistrationv1.ValidatingWebhook
}

// injectValidating creates the configuration, or rewrites its webhook when
// it differs; the caBundle keeps the other replicas' CAs as the CRD's does.
func (in *Injector) injectValidating(ctx context.Context, ca []byte) error {
	v := in.o.Validating
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		// Another replica's concurrent write: read again.
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cur := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		err := in.o.Reader.Get(ctx, client.ObjectKey{Name: v.Name}, cur)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", v.Name, err)
		}
		var bundle []byte
		if len(cur.Webhooks) == 1 && cur.Webhooks[0].Name == v.Webhook.Name {
			bundle = cur.Webhooks[0].ClientConfig.CABundle
		}
		want := *v.Webhook.DeepCopy()
		want.ClientConfig.CABundle = mergeBundle(bundle, ca, in.now(), MaxOtherCAs)
		if apierrors.IsNotFound(err) {
			create := &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: v.Name},
				Webhooks:   []admissionregistrationv1.ValidatingWebhook{want},
			}
			if err := in.o.Writer.Create(ctx, create); err != nil {
				return err
			}
			in.o.Log.Info("Created the validating webhook configuration", "name", v.Name)
			return nil
		}
		if len(cur.Webhooks) == 1 && equality.Semantic.DeepEqual(cur.Webhooks[0], want) {
			return nil
		}
		patched := cur.DeepCopy()
		patched.Webhooks = []admissionregistrationv1.ValidatingWebhook{want}
		if err := in.o.Writer.Patch(ctx, patched, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		in.o.Log.Info("Pointed the validating webhook at this operator", "name", v.Name, "caBundleCertificates", countCerts(want.ClientConfig.CABundle))
		return nil
	})
}

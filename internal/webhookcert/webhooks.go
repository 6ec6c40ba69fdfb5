package webhookcert

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Creating cannot be limited to one name; reading and patching are.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;patch,resourceNames=datapilot-validating
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;patch,resourceNames=datapilot-mutating

// Validating is a ValidatingWebhookConfiguration the Injector keeps: its
// one webhook as given, with the Injector's CA in its caBundle.
type Validating struct {
	Name    string
	Webhook admissionregistrationv1.ValidatingWebhook
}

// Mutating is the same for a MutatingWebhookConfiguration.
type Mutating struct {
	Name    string
	Webhook admissionregistrationv1.MutatingWebhook
}

func (in *Injector) injectValidating(ctx context.Context, ca []byte) error {
	return injectWebhook(ctx, in, validating, in.o.Validating.Name, &in.o.Validating.Webhook, ca)
}

func (in *Injector) injectMutating(ctx context.Context, ca []byte) error {
	return injectWebhook(ctx, in, mutating, in.o.Mutating.Name, &in.o.Mutating.Webhook, ca)
}

// webhookType is what injectWebhook reads and writes of one kind of
// configuration, C, of webhooks W: the validating and mutating ones
// differ only in their types.
type webhookType[W, C any] struct {
	kind         string
	name         func(*W) string
	deepCopy     func(*W) *W
	clientConfig func(*W) *admissionregistrationv1.WebhookClientConfig
	webhooks     func(*C) *[]W
}

var validating = webhookType[admissionregistrationv1.ValidatingWebhook, admissionregistrationv1.ValidatingWebhookConfiguration]{
	kind:     "validating",
	name:     func(w *admissionregistrationv1.ValidatingWebhook) string { return w.Name },
	deepCopy: (*admissionregistrationv1.ValidatingWebhook).DeepCopy,
	clientConfig: func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
		return &w.ClientConfig
	},
	webhooks: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) *[]admissionregistrationv1.ValidatingWebhook {
		return &c.Webhooks
	},
}

var mutating = webhookType[admissionregistrationv1.MutatingWebhook, admissionregistrationv1.MutatingWebhookConfiguration]{
	kind:     "mutating",
	name:     func(w *admissionregistrationv1.MutatingWebhook) string { return w.Name },
	deepCopy: (*admissionregistrationv1.MutatingWebhook).DeepCopy,
	clientConfig: func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
		return &w.ClientConfig
	},
	webhooks: func(c *admissionregistrationv1.MutatingWebhookConfiguration) *[]admissionregistrationv1.MutatingWebhook {
		return &c.Webhooks
	},
}

// injectWebhook creates the configuration name with its one webhook, or
// rewrites the webhook when it differs; the caBundle keeps the other
// replicas' CAs as the CRD's does.
func injectWebhook[W, C any, PC interface {
	*C
	client.Object
}](ctx context.Context, in *Injector, t webhookType[W, C], name string, webhook *W, ca []byte) error {
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		// Another replica's concurrent write: read again.
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cur := PC(new(C))
		err := in.o.Reader.Get(ctx, client.ObjectKey{Name: name}, cur)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading the %s webhook configuration %s: %w", t.kind, name, err)
		}
		have := *t.webhooks(cur)
		var bundle []byte
		if len(have) == 1 && t.name(&have[0]) == t.name(webhook) {
			bundle = t.clientConfig(&have[0]).CABundle
		}
		want := t.deepCopy(webhook)
		t.clientConfig(want).CABundle = mergeBundle(bundle, ca, in.now(), MaxOtherCAs)
		if apierrors.IsNotFound(err) {
			create := PC(new(C))
			create.SetName(name)
			*t.webhooks(create) = []W{*want}
			if err := in.o.Writer.Create(ctx, create); err != nil {
				return err
			}
			in.o.Log.Info("Created the "+t.kind+" webhook configuration", "name", name)
			return nil
		}
		if len(have) == 1 && equality.Semantic.DeepEqual(have[0], *want) {
			return nil
		}
		patched := cur.DeepCopyObject().(PC)
		*t.webhooks(patched) = []W{*want}
		if err := in.o.Writer.Patch(ctx, patched, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		in.o.Log.Info("Pointed the "+t.kind+" webhook at this operator", "name", name, "caBundleCertificates", countCerts(t.clientConfig(want).CABundle))
		return nil
	})
}

package operator

import (
	"strings"
	"testing"
)

func TestValidateWebhookOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(*Options)
		wantErr string
	}{
		{name: "default: no webhook", set: func(*Options) {}},
		{name: "self-signed with a service", set: func(o *Options) { o.WebhookCertMode, o.WebhookService = WebhookCertSelfSigned, "ops/datapilot-webhook" }},
		{name: "self-signed with a bare service name", set: func(o *Options) { o.WebhookCertMode, o.WebhookService = WebhookCertSelfSigned, "datapilot-webhook" }},
		{name: "self-signed with a URL", set: func(o *Options) {
			o.WebhookCertMode, o.WebhookURL = WebhookCertSelfSigned, "https://127.0.0.1:9443/convert"
		}},
		{name: "dir with a cert dir", set: func(o *Options) { o.WebhookCertMode, o.WebhookCertDir = WebhookCertDir, "/certs" }},
		{name: "unknown mode", set: func(o *Options) { o.WebhookCertMode = "cert-manager" }, wantErr: "not one of none, dir, self-signed"},
		{name: "dir without a cert dir", set: func(o *Options) { o.WebhookCertMode = WebhookCertDir }, wantErr: "needs --webhook-cert-dir"},
		{name: "self-signed without a target", set: func(o *Options) { o.WebhookCertMode = WebhookCertSelfSigned }, wantErr: "exactly one of"},
		{name: "self-signed with both targets", set: func(o *Options) {
			o.WebhookCertMode, o.WebhookService, o.WebhookURL = WebhookCertSelfSigned, "a/b", "https://x/convert"
		}, wantErr: "exactly one of"},
		{name: "plain http URL", set: func(o *Options) {
			o.WebhookCertMode, o.WebhookURL = WebhookCertSelfSigned, "http://127.0.0.1:9443/convert"
		}, wantErr: "not an https URL"},
		{name: "service with an empty namespace", set: func(o *Options) { o.WebhookCertMode, o.WebhookService = WebhookCertSelfSigned, "/name" }, wantErr: "not [namespace/]name"},
		{name: "service with too many parts", set: func(o *Options) { o.WebhookCertMode, o.WebhookService = WebhookCertSelfSigned, "a/b/c" }, wantErr: "not [namespace/]name"},
		{name: "service without self-signed", set: func(o *Options) { o.WebhookService = "a/b" }, wantErr: "need --webhook-cert-mode=self-signed"},
		{name: "port out of range", set: func(o *Options) { o.WebhookCertMode, o.WebhookCertDir, o.WebhookPort = WebhookCertDir, "/certs", 70000 }, wantErr: "webhook port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "")
			o, err := Defaults()
			if err != nil {
				t.Fatal(err)
			}
			tc.set(&o)
			err = o.Validate()
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestWebhookServiceNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "flink-ops")
	if ns, name, err := webhookService("datapilot-webhook"); err != nil || ns != "flink-ops" || name != "datapilot-webhook" {
		t.Errorf("bare name: %q %q %v, want the pod's namespace", ns, name, err)
	}
	if ns, name, err := webhookService("ops/hook"); err != nil || ns != "ops" || name != "hook" {
		t.Errorf("namespace/name: %q %q %v", ns, name, err)
	}
}

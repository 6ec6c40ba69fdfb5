package webhookcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/api/v1alpha1"
	"github.com/datapilot/datapilot/internal/testwait"
)

// TestRenewalKeepsConversionsWorking: a serving certificate close to expiry
// is replaced while the API server converts v1alpha1 requests through the
// webhook without pause, and no conversion fails. A real API server (envtest)
// calls the webhook over TLS with the CRD's caBundle, as in a cluster.
func TestRenewalKeepsConversionsWorking(t *testing.T) {
	c, crds := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	in, err := New(Options{
		CRDName: "flinkclusters.data.example.com", URL: fmt.Sprintf("https://127.0.0.1:%d/convert", port),
		Hosts: []string{"127.0.0.1"}, CertDir: dir, CRDs: crds, Reader: c, Writer: c,
		Interval: 200 * time.Millisecond, Log: zap.New(zap.UseDevMode(true)),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Replace New's fresh pair by one issued long ago: less than
	// RenewBefore left, still valid.
	old, err := Generate([]string{"127.0.0.1"}, time.Now().Add(-(Validity - RenewBefore/2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Write(dir); err != nil {
		t.Fatal(err)
	}
	in.pair = old

	// The webhook's handler behind controller-runtime's cert watcher, as
	// the operator's webhook server has it, but with keep-alives off: the
	// API server would otherwise reuse one TLS connection throughout, and
	// the served certificate would matter only at its first handshake.
	// Here every conversion is a fresh handshake, the worst case (as after
	// a dropped connection or with a second API server).
	watcher, err := certwatcher.New(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	watcher.WithWatchInterval(100 * time.Millisecond)
	go func() { _ = watcher.Start(ctx) }()
	mux := http.NewServeMux()
	mux.Handle("/convert", conversion.NewWebhookHandler(c.Scheme(), conversion.NewRegistry()))
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{GetCertificate: watcher.GetCertificate, MinVersion: tls.VersionTLS12}, ReadHeaderTimeout: 10 * time.Second}
	srv.SetKeepAlivesEnabled(false)
	wl, err := tls.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port), srv.TLSConfig)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(wl) }()
	defer srv.Close()
	if err := in.Inject(ctx); err != nil {
		t.Fatal(err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "renewal"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "renewal", Name: "orders"},
		Spec: v1.FlinkClusterSpec{Version: "1.17.1", Kafka: &v1.KafkaSpec{Bootstrap: v1.KafkaBootstrap{Servers: "kafka:9092"}}}}
	if err := c.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	// Reading as v1alpha1 makes the API server call the webhook.
	convert := func() error {
		alpha := &v1alpha1.FlinkCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), alpha); err != nil {
			return err
		}
		if alpha.Spec.Kafka == nil || alpha.Spec.Kafka.BootstrapServers != "kafka:9092" {
			return fmt.Errorf("converted spec.kafka is %+v", alpha.Spec.Kafka)
		}
		return nil
	}
	testwait.Until(t, 30*time.Second, convert)
	if served := servedSerial(t, port); served != serialOf(t, old.CertPEM) {
		t.Fatalf("the webhook serves %s, not the old certificate", served)
	}

	// Convert without pause from here on, counting failures.
	var ok, failed atomic.Int64
	var mu sync.Mutex
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := convert(); err != nil {
				if ctx.Err() != nil {
					return
				}
				failed.Add(1)
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				continue
			}
			ok.Add(1)
		}
	}()

	go func() { _ = in.Start(ctx) }()
	testwait.Until(t, 30*time.Second, func() error {
		in.mu.Lock()
		p := in.pair
		in.mu.Unlock()
		if p == old {
			return fmt.Errorf("not renewed yet")
		}
		if got, want := servedSerial(t, port), serialOf(t, p.CertPEM); got != want {
			return fmt.Errorf("the webhook serves %s, not the renewed %s", got, want)
		}
		return nil
	})
	// Well past the switch: conversions keep succeeding on the new one.
	after := ok.Load()
	testwait.Until(t, 30*time.Second, func() error {
		if n := ok.Load() - after; n < 50 {
			return fmt.Errorf("%d conversions after the switch", n)
		}
		return nil
	})
	cancel()
	<-done

	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d conversions failed during the renewal; first: %v", n, n+ok.Load(), firstErr)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "flinkclusters.data.example.com"}, crd); err != nil {
		t.Fatal(err)
	}
	if n := countCerts(crd.Spec.Conversion.Webhook.ClientConfig.CABundle); n != 2 {
		t.Errorf("caBundle holds %d CAs, want the old (still valid) and the new", n)
	}
	if in.pair.NotAfter.Sub(time.Now()) < Validity-time.Hour {
		t.Errorf("the renewed certificate expires at %s, want a full validity", in.pair.NotAfter)
	}
}

// servedSerial is the serial number of the certificate the webhook presents.
func servedSerial(t *testing.T, port int) string {
	t.Helper()
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the served certificate only
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func serialOf(t *testing.T, certPEM []byte) string {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber.String()
}

// Package webhookcert gives the operator's conversion webhook a serving
// certificate it makes itself, and tells the API server to trust it: a
// self-signed CA and a serving certificate signed by it are generated at
// startup and written to the webhook server's cert dir, and the CA is added
// to the FlinkCluster CRD's spec.conversion.webhook.clientConfig.caBundle.
//
// The CA's key never leaves memory and is dropped once the serving
// certificate is signed. Each replica makes its own pair; the caBundle holds
// the CAs of every replica until they expire, so any replica behind the
// webhook Service is trusted however often the others restart. No
// Secret is read or written.
package webhookcert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Validity of a generated CA and serving certificate. A running operator
// renews both when less than RenewBefore is left, so a live replica's CA
// is never older than Validity-RenewBefore. The caBundle keeps every CA
// until it expires (a replica's CA is in it for as long as the replica may
// serve with it), and the validity is short so that the CAs of replicas
// that restarted leave the bundle within a day.
const (
	Validity    = 24 * time.Hour
	RenewBefore = 8 * time.Hour
)

// MaxOtherCAs bounds the CAs the caBundle keeps besides a replica's own,
// only so that a pathological crash loop cannot grow the CRD towards the
// object size limit (a P-256 CA is about 600 bytes). It is no eviction in
// practice: a live replica's CA is at most 16 hours old, and Kubernetes'
// crash-loop back-off (at most 5 minutes) restarts a pod at most 192 times
// in 16 hours, so fewer than MaxOtherCAs CAs are ever newer than it.
const MaxOtherCAs = 256

// File names in the cert dir, as controller-runtime's webhook server reads them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Pair is a generated CA certificate and the serving certificate it signed.
type Pair struct {
	// CAPEM is the CA certificate, for the caBundle.
	CAPEM []byte
	// CertPEM and KeyPEM are the serving certificate and its key.
	CertPEM, KeyPEM []byte
	// NotAfter is when the serving certificate expires.
	NotAfter time.Time
}

// Generate makes a CA and a serving certificate for hosts: DNS names, or IP
// addresses such as 127.0.0.1.
func Generate(hosts []string, now time.Time) (*Pair, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("generating a webhook certificate: no host names")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook CA key: %w", err)
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(Validity)
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "datapilot-webhook-ca", Organization: []string{"datapilot"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the webhook serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{
		CAPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		NotAfter: leaf.NotAfter,
	}, nil
}

// Write puts the serving certificate and key into dir, each replaced
// atomically (controller-runtime's cert watcher reloads them on change).
func (p *Pair) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the webhook cert dir: %w", err)
	}
	// The key first: a watcher that sees the new certificate loads it
	// together with the key that matches it.
	for _, f := range []struct {
		name string
		data []byte
	}{{KeyFile, p.KeyPEM}, {CertFile, p.CertPEM}} {
		tmp := filepath.Join(dir, "."+f.name+".tmp")
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return fmt.Errorf("writing the webhook %s: %w", f.name, err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("writing the webhook %s: %w", f.name, err)
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on the platforms Go supports.
		panic(err)
	}
	return n
}

// mergeBundle returns bundle with ca added. Certificates expired at now are
// dropped, and every other one is kept, up to limit besides ca (the
// newest; see MaxOtherCAs); anything that is not a certificate goes too.
// The order is canonical (newest first, then by content) whoever merges,
// so replicas that each add their own CA to the same bundle agree on it
// and stop writing.
func mergeBundle(bundle, ca []byte, now time.Time, limit int) []byte {
	type entry struct {
		der       []byte
		notBefore time.Time
		own       bool
	}
	var all []entry
	own, _ := pem.Decode(ca)
	if own != nil {
		if c, err := x509.ParseCertificate(own.Bytes); err == nil {
			all = append(all, entry{own.Bytes, c.NotBefore, true})
		}
	}
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || own != nil && bytes.Equal(b.Bytes, own.Bytes) {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil || now.After(c.NotAfter) {
			continue
		}
		all = append(all, entry{der: b.Bytes, notBefore: c.NotBefore})
	}
	slices.SortFunc(all, func(a, b entry) int {
		if c := b.notBefore.Compare(a.notBefore); c != 0 {
			return c
		}
		return bytes.Compare(a.der, b.der)
	})
	var out []byte
	others := 0
	for _, e := range all {
		if !e.own {
			if others == limit {
				continue
			}
			others++
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.der})...)
	}
	return out
}

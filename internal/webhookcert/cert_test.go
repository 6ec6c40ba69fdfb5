package webhookcert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGenerateVerifiesForEachHost(t *testing.T) {
	now := time.Now()
	hosts := []string{"datapilot-webhook.ops.svc", "datapilot-webhook.ops.svc.cluster.local", "127.0.0.1"}
	p, err := Generate(hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CAPEM) {
		t.Fatal("CA PEM does not parse")
	}
	pair, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatalf("Serving certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("Not valid for %s: %v", h, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.ops.svc", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("Valid for a host it was not made for")
	}
	if got := leaf.NotAfter.Sub(now); got < Validity-time.Minute || !p.NotAfter.Equal(leaf.NotAfter) {
		t.Errorf("Validity %s, NotAfter %s vs %s", got, p.NotAfter, leaf.NotAfter)
	}
	if _, err := Generate(nil, now); err == nil {
		t.Error("Generate without hosts succeeded")
	}
}

func TestWriteReplacesFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	for range 2 {
		p, err := Generate([]string{"localhost"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(dir); err != nil {
			t.Fatal(err)
		}
		crt, _ := os.ReadFile(filepath.Join(dir, CertFile))
		key, _ := os.ReadFile(filepath.Join(dir, KeyFile))
		if !bytes.Equal(crt, p.CertPEM) || !bytes.Equal(key, p.KeyPEM) {
			t.Fatal("Files do not hold the pair just written")
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("Cert dir holds %d entries, want tls.crt and tls.key only", len(entries))
	}
}

func certsIn(t *testing.T, bundle []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for b, rest := pem.Decode(bundle); b != nil; b, rest = pem.Decode(rest) {
		out = append(out, b.Bytes)
	}
	return out
}

func caAt(t *testing.T, at time.Time) []byte {
	t.Helper()
	p, err := Generate([]string{"localhost"}, at)
	if err != nil {
		t.Fatal(err)
	}
	return p.CAPEM
}

func der(t *testing.T, p []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	return b.Bytes
}

func TestMergeBundle(t *testing.T) {
	now := time.Now()
	own := caAt(t, now)
	replica := caAt(t, now.Add(-time.Hour))
	older := caAt(t, now.Add(-12*time.Hour))
	expired := caAt(t, now.Add(-Validity-48*time.Hour))

	for _, tc := range []struct {
		name   string
		bundle []byte
		keep   int
		want   [][]byte
	}{
		{name: "empty bundle", want: [][]byte{der(t, own)}},
		{name: "own CA already there", bundle: own, keep: 8, want: [][]byte{der(t, own)}},
		{name: "other replica kept, newest first", bundle: join(older, replica), keep: 8, want: [][]byte{der(t, own), der(t, replica), der(t, older)}},
		{name: "expired and junk dropped", bundle: join(expired, []byte("not pem\n"), replica, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})), keep: 8, want: [][]byte{der(t, own), der(t, replica)}},
		{name: "only the newest others kept", bundle: join(older, replica), keep: 1, want: [][]byte{der(t, own), der(t, replica)}},
		{name: "own CA kept even when oldest", bundle: join(replica, own), keep: 0, want: [][]byte{der(t, own)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := certsIn(t, mergeBundle(tc.bundle, own, now, tc.keep))
			if len(got) != len(tc.want) {
				t.Fatalf("Bundle holds %d certificates, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Errorf("Certificate %d is not the expected one", i)
				}
			}
		})
	}

	// Two replicas merging their own CAs into the same bundle agree on it,
	// so neither rewrites what the other wrote.
	a, b := caAt(t, now), caAt(t, now.Add(-time.Minute))
	ab := mergeBundle(mergeBundle(nil, a, now, 8), b, now, 8)
	if again := mergeBundle(ab, a, now, 8); !bytes.Equal(again, ab) {
		t.Error("Replica A reorders the bundle replica B wrote")
	}
	if again := mergeBundle(ab, b, now, 8); !bytes.Equal(again, ab) {
		t.Error("Replica B's merge is not stable")
	}
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestBundleSurvivesManyRestarts: replica A stays up (renewing its
// certificate when due) while replica B restarts every five minutes, the
// fastest Kubernetes' crash-loop back-off allows, for two days. After each
// of B's merges the bundle trusts A and B, A's own merge leaves it as it is
// (the replicas do not evict each other and rewrite the CRD in turn), every
// CA in it is unexpired, and every CA B made in the last
// Validity-RenewBefore is still there.
func TestBundleSurvivesManyRestarts(t *testing.T) {
	start := time.Now()
	a, aMade := caAt(t, start), start
	bundle := mergeBundle(nil, a, start, MaxOtherCAs)
	type made struct {
		ca []byte
		at time.Time
	}
	var bs []made
	for now := start.Add(5 * time.Minute); now.Before(start.Add(48 * time.Hour)); now = now.Add(5 * time.Minute) {
		if now.Sub(aMade) >= Validity-RenewBefore {
			a, aMade = caAt(t, now), now
			bundle = mergeBundle(bundle, a, now, MaxOtherCAs)
		}
		b := caAt(t, now)
		bs = append(bs, made{b, now})
		bundle = mergeBundle(bundle, b, now, MaxOtherCAs)
		if again := mergeBundle(bundle, a, now, MaxOtherCAs); !bytes.Equal(again, bundle) {
			t.Fatalf("At +%s replica A's merge rewrites the bundle B just wrote", now.Sub(start))
		}
		in := map[string]bool{}
		for _, d := range certsIn(t, bundle) {
			c, err := x509.ParseCertificate(d)
			if err != nil {
				t.Fatal(err)
			}
			if now.After(c.NotAfter) {
				t.Fatalf("At +%s the bundle holds a CA expired at %s", now.Sub(start), c.NotAfter)
			}
			in[string(d)] = true
		}
		if !in[string(der(t, a))] || !in[string(der(t, b))] {
			t.Fatalf("At +%s the bundle (%d CAs) lacks A's (%v) or B's (%v) CA", now.Sub(start), len(in), in[string(der(t, a))], in[string(der(t, b))])
		}
		for _, m := range bs {
			if now.Sub(m.at) < Validity-RenewBefore && !in[string(der(t, m.ca))] {
				t.Fatalf("At +%s the bundle dropped B's unexpired CA of +%s", now.Sub(start), m.at.Sub(start))
			}
		}
	}
	if n := len(certsIn(t, bundle)); n > MaxOtherCAs+1 {
		t.Errorf("The bundle holds %d CAs, above the ceiling", n)
	}
}

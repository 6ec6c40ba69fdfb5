package controller

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/datapilot/datapilot/internal/flink"
)

// forbidden is a listener on loopback that fails the test if anything
// reaches it.
func forbidden(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("The operator fetched %s from a refused address", r.URL)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestJarFetchRefusesInternalAddresses: a jarURI at the cloud metadata
// address, at loopback (by address, or reached by a redirect from an
// allowed host) or at an in-cluster Service name is refused with an error
// that says why, and no connection reaches a listener there.
func TestJarFetchRefusesInternalAddresses(t *testing.T) {
	loop := forbidden(t)
	redirector := httptest.NewServer(http.RedirectHandler(loop.URL+"/job.jar", http.StatusFound))
	t.Cleanup(redirector.Close)
	p := JarPolicy{AllowedHosts: []string{hostOf(t, redirector.URL)}}
	for _, tc := range []struct {
		name, uri, want string
	}{
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/iam/security-credentials/", "169.254.169.254 is a link-local address"},
		{"loopback", loop.URL + "/job.jar", "127.0.0.1 is a loopback address"},
		{"loopback through a redirect", redirector.URL + "/job.jar", "127.0.0.1 is a loopback address"},
		{"IPv6 loopback", "http://[::1]:" + strings.Split(hostOf(t, loop.URL), ":")[1] + "/job.jar", "::1 is a loopback address"},
		{"a Service's DNS name", "http://kubernetes.default.svc/api", "names an in-cluster Service"},
		{"a dotless name", "http://artifacts/job.jar", "search domains"},
		{"not http", "file:///etc/passwd", "scheme file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := p.openJar(context.Background(), tc.uri)
			if err == nil {
				body.Close()
				t.Fatalf("%s was fetched", tc.uri)
			}
			var refused *JarRefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "spec.job.jarURI") {
				t.Fatalf("Want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
	// The allowed host itself is fetched: the check is the address, not a
	// blanket refusal of loopback servers.
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("PK")) }))
	t.Cleanup(ok.Close)
	body, err := JarPolicy{AllowedHosts: []string{hostOf(t, ok.URL)}}.openJar(context.Background(), ok.URL+"/job.jar")
	if err != nil {
		t.Fatalf("An allowed host was refused: %v", err)
	}
	if raw, _ := io.ReadAll(body); string(raw) != "PK" {
		t.Errorf("Read %q from the allowed host", raw)
	}
	body.Close()
}

// endless streams zeros without a Content-Length and counts what it sent.
type endless struct{ sent atomic.Int64 }

func (e *endless) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	buf := make([]byte, 64<<10)
	for e.sent.Load() < 4<<30 {
		n, err := w.Write(buf)
		e.sent.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// TestOversizedJarIsRefusedWhileStreaming: a jar of twice the operator's
// memory limit (the chart's 256 Mi), without a Content-Length, is streamed
// towards a JobManager's upload endpoint and refused at the size limit:
// the upload fails (Flink never gets a jar cut short), the download stops
// soon after the limit, and the operator's heap never holds the jar. One
// that declares its length is refused before its body is read.
func TestOversizedJarIsRefusedWhileStreaming(t *testing.T) {
	const memoryLimit = 256 << 20
	src := &endless{}
	jars := httptest.NewServer(src)
	t.Cleanup(jars.Close)
	var uploaded atomic.Int64
	var completed atomic.Bool
	jm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			t.Errorf("Upload is not multipart: %v", err)
			return
		}
		part, err := mr.NextPart()
		if err != nil {
			return
		}
		n, err := io.Copy(io.Discard, part)
		uploaded.Add(n)
		if err == nil {
			completed.Store(true)
			_, _ = w.Write([]byte(`{"filename":"/tmp/flink-web/x_job.jar","status":"success"}`))
		}
	}))
	t.Cleanup(jm.Close)

	p := JarPolicy{AllowedHosts: []string{hostOf(t, jars.URL)}}
	if p.maxBytes() >= memoryLimit {
		t.Fatalf("The jar limit %d MiB is not under the operator's memory limit", p.maxBytes()>>20)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := atomic.Uint64{}
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			default:
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	body, err := p.openJar(context.Background(), jars.URL+"/fat.jar")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = flink.NewClient(jm.URL, nil).UploadJar(context.Background(), "fat.jar", body)
	body.Close()
	close(done)
	var refused *JarRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "larger than 128 MiB") {
		t.Fatalf("Want the upload refused by size, got %v", err)
	}
	if completed.Load() {
		t.Error("The JobManager received a whole jar")
	}
	if sent := src.sent.Load(); sent > p.maxBytes()+16<<20 || sent < p.maxBytes() {
		t.Errorf("The jar server sent %d MiB for a limit of %d MiB", sent>>20, p.maxBytes()>>20)
	}
	if grew := int64(peak.Load()) - int64(before.HeapInuse); grew > 32<<20 {
		t.Errorf("The heap grew by %d MiB while streaming: the jar was buffered", grew>>20)
	}

	declared := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "536870912")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(declared.Close)
	_, err = JarPolicy{AllowedHosts: []string{hostOf(t, declared.URL)}}.openJar(context.Background(), declared.URL+"/fat.jar")
	if !errors.As(err, &refused) {
		t.Fatalf("A declared 512 MiB jar: want a refusal by size, got %v", err)
	}
}

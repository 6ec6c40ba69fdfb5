package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// JarPolicy says what the operator may fetch a job's jar from, and how
// much. spec.job.jarURI is the user's: without it, a FlinkCluster would
// make the operator's pod read cloud metadata (169.254.169.254), its own
// loopback or in-cluster Services, and hand the answer to a JobManager
// whose image the user picks.
type JarPolicy struct {
	// MaxBytes bounds a jar; a bigger one is refused, by its
	// Content-Length or once that many bytes have streamed through.
	MaxBytes int64
	// Timeout bounds the download and the upload to the JobManager
	// together, apart from the Flink REST request timeout.
	Timeout time.Duration
	// AllowedHosts are hosts ("host" or "host:port", as in the URL) the
	// address checks do not apply to, such as a repository on a private
	// address the platform team trusts.
	AllowedHosts []string
	// DeniedNets are further refused addresses, such as the cluster's
	// Service and pod ranges.
	DeniedNets []*net.IPNet
}

// Defaults of JarPolicy: streamed, a jar never sits in the operator's
// memory, so the bound is about what a user may make it move.
const (
	DefaultJarMaxBytes = 128 << 20
	DefaultJarTimeout  = 5 * time.Minute
)

// JarRefusedError is a jar the policy does not fetch.
type JarRefusedError struct {
	URI, Reason string
}

func (e *JarRefusedError) Error() string {
	return fmt.Sprintf("Refused to fetch spec.job.jarURI %s: %s", e.URI, e.Reason)
}

func (p JarPolicy) maxBytes() int64 {
	if p.MaxBytes <= 0 {
		return DefaultJarMaxBytes
	}
	return p.MaxBytes
}

func (p JarPolicy) timeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultJarTimeout
	}
	return p.Timeout
}

func (p JarPolicy) allowed(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	for _, a := range p.AllowedHosts {
		if strings.EqualFold(a, hostport) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// refusedName says why a host name is refused before it is resolved: the
// names that lead to in-cluster Services. A name without a dot resolves
// through the pod's search domains (<name>.<namespace>.svc...).
func refusedName(host string) string {
	if net.ParseIP(host) != nil {
		return ""
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case !strings.Contains(h, "."):
		return "a name without a dot resolves to in-cluster Services through the operator pod's search domains"
	case strings.HasSuffix(h, ".svc") || strings.Contains(h, ".svc.") || strings.HasSuffix(h, ".cluster.local"):
		return "it names an in-cluster Service"
	}
	return ""
}

// awsMetadataV6 is EC2's instance metadata service on IPv6.
var awsMetadataV6 = net.ParseIP("fd00:ec2::254")

// refusedIP says why an address the dialer is about to connect to is
// refused: loopback, link-local (cloud metadata services), unspecified or
// multicast, the API server's Service address, or a denied network.
func (p JarPolicy) refusedIP(ip net.IP) string {
	switch {
	case ip == nil:
		return "not an IP address"
	case ip.IsLoopback():
		return ip.String() + " is a loopback address"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return ip.String() + " is a link-local address (cloud metadata services live there)"
	case ip.IsUnspecified() || ip.IsMulticast():
		return ip.String() + " is not a unicast address"
	case ip.Equal(awsMetadataV6):
		return ip.String() + " is a cloud metadata address"
	}
	if api := net.ParseIP(os.Getenv("KUBERNETES_SERVICE_HOST")); api != nil && api.Equal(ip) {
		return ip.String() + " is the Kubernetes API server's Service address"
	}
	for _, n := range p.DeniedNets {
		if n.Contains(ip) {
			return ip.String() + " is in the denied network " + n.String()
		}
	}
	return ""
}

// client fetches under the policy. The address is checked when the
// dialer connects, after resolution, so a name that resolves to an
// allowed address first and a refused one later (DNS rebinding) is
// refused; redirects go through the same dialer and name checks. No
// proxy: a proxy would resolve the name where the operator cannot check it.
func (p JarPolicy) client(uri string) *http.Client {
	checked := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		if reason := p.refusedIP(net.ParseIP(host)); reason != "" {
			return &JarRefusedError{URI: uri, Reason: reason}
		}
		return nil
	}}
	plain := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p.allowed(addr) {
				return plain.DialContext(ctx, network, addr)
			}
			return checked.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return &JarRefusedError{URI: uri, Reason: "more than 5 redirects"}
		}
		return p.checkURL(uri, req.URL)
	}}
}

// checkURL refuses a URL (the jarURI or a redirect) by scheme and name.
func (p JarPolicy) checkURL(uri string, u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &JarRefusedError{URI: uri, Reason: "scheme " + u.Scheme + " is not http or https"}
	}
	if p.allowed(u.Host) {
		return nil
	}
	if reason := refusedName(u.Hostname()); reason != "" {
		return &JarRefusedError{URI: uri, Reason: u.Hostname() + ": " + reason}
	}
	return nil
}

// openJar starts the download of a jar and returns its body, which fails
// with a JarRefusedError once more than MaxBytes arrive. The caller closes
// it; nothing is buffered.
func (p JarPolicy) openJar(ctx context.Context, uri string) (io.ReadCloser, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("jar %s: %w", uri, err)
	}
	if err := p.checkURL(uri, u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("jar %s: %w", uri, err)
	}
	resp, err := p.client(uri).Do(req)
	if err != nil {
		if refused := (*JarRefusedError)(nil); errors.As(err, &refused) {
			return nil, refused
		}
		return nil, fmt.Errorf("fetch jar %s: %w", uri, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("fetch jar %s: HTTP %d", uri, resp.StatusCode)
	}
	if resp.ContentLength > p.maxBytes() {
		resp.Body.Close()
		return nil, p.tooLarge(uri)
	}
	return &boundedBody{body: resp.Body, left: p.maxBytes(), refuse: p.tooLarge(uri)}, nil
}

func (p JarPolicy) tooLarge(uri string) *JarRefusedError {
	return &JarRefusedError{URI: uri, Reason: fmt.Sprintf("the jar is larger than %d MiB (the operator's jar size limit)", p.maxBytes()>>20)}
}

// boundedBody reads at most left bytes, then fails: a jar cut short at the
// limit must not reach Flink as if it were whole.
type boundedBody struct {
	body   io.ReadCloser
	left   int64
	refuse error
}

func (b *boundedBody) Read(buf []byte) (int, error) {
	if b.left < 0 {
		return 0, b.refuse
	}
	// One byte past the limit tells a jar of exactly MaxBytes from a
	// bigger one.
	if int64(len(buf)) > b.left+1 {
		buf = buf[:b.left+1]
	}
	n, err := b.body.Read(buf)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, b.refuse
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

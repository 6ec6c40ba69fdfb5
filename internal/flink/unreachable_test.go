package flink

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A REST port that resets every connection fails each request the same
// way, and says so in the same words each time: the client's own port,
// new for every connection, is not part of the message.
func TestUnreachableReadsTheSameEachTime(t *testing.T) {
	c, srv := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
		_ = conn.Close()
	})
	c.MaxRetries = 0
	var msgs []string
	for range 3 {
		_, err := c.Overview(context.Background())
		if !IsUnavailable(err) {
			t.Fatalf("a reset connection: %v, want unavailable", err)
		}
		msgs = append(msgs, err.Error())
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("the same failure reads differently:\n%s\n%s", msgs[0], m)
		}
	}
	if host := strings.TrimPrefix(srv.URL, "http://"); !strings.Contains(msgs[0], host) {
		t.Errorf("the message %q does not name the address it could not reach (%s)", msgs[0], host)
	}
}

func TestWithoutLocalAddress(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 8081}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a reset on read", &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 41634}, Addr: remote, Err: errReset},
			"read tcp 10.0.0.9:8081: connection reset by peer"},
		{"a refused dial has no source", &net.OpError{Op: "dial", Net: "tcp", Addr: remote, Err: errRefused},
			"dial tcp 10.0.0.9:8081: connection refused"},
		{"IPv6", &net.OpError{Op: "read", Net: "tcp6", Source: &net.TCPAddr{IP: net.IPv6loopback, Port: 41634}, Addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 8081}, Err: errReset},
			"read tcp6 [::1]:8081: connection reset by peer"},
		// The resolver keeps its query's failure as text only.
		{"a DNS server that refuses", &url.Error{Op: "Get", URL: "http://demo-rest.ns:8081/overview", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &net.DNSError{Err: "read udp 10.0.0.7:53012->10.96.0.10:53: read: connection refused", Name: "demo-rest.ns", Server: "10.96.0.10:53"}}},
			`Get "http://demo-rest.ns:8081/overview": dial tcp: lookup demo-rest.ns on 10.96.0.10:53: read udp 10.96.0.10:53: read: connection refused`},
		{"not a network error", context.DeadlineExceeded, "context deadline exceeded"},
		{"no error", nil, "<nil>"},
	} {
		if got := withoutLocalAddress(tc.err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

type textError string

func (e textError) Error() string { return string(e) }

const (
	errReset   = textError("connection reset by peer")
	errRefused = textError("connection refused")
)

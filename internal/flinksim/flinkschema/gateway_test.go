package flinkschema

import (
	"net/http"
	"testing"
)

// Every embedded gateway schema loads, and each minor's newest version
// has the operations a client submitting SQL needs.
func TestGatewaySchemasLoad(t *testing.T) {
	for _, minor := range Minors {
		n := GatewayVersions(minor)
		if n < 2 {
			t.Fatalf("Flink %s: %d gateway API versions, want at least 2", minor, n)
		}
		for v := 1; v <= n; v++ {
			s, err := ForGateway(minor, v)
			if err != nil {
				t.Fatal(err)
			}
			if v < 2 {
				continue
			}
			for _, c := range []struct{ method, path, op string }{
				{http.MethodPost, "/sessions", "openSession"},
				{http.MethodPost, "/sessions/x/statements", "executeStatement"},
				{http.MethodGet, "/sessions/x/operations/y/status", "getOperationStatus"},
				{http.MethodGet, "/sessions/x/operations/y/result/0", "fetchResults"},
				{http.MethodDelete, "/sessions/x", "closeSession"},
			} {
				_, op, _, err := s.Operation(c.method, c.path)
				if err != nil || op.OperationID != c.op {
					t.Errorf("Flink %s v%d %s %s: %v %v", minor, v, c.method, c.path, op, err)
				}
			}
		}
		if _, err := ForGateway(minor, n+1); err == nil {
			t.Errorf("Flink %s: v%d loaded, but the minor serves %d versions", minor, n+1, n)
		}
	}
	// FLIP-480's script endpoint exists from 2.0 only.
	s, _ := ForGateway("1.20", 3)
	if _, _, _, err := s.Operation(http.MethodPost, "/v3/sessions/x/scripts"); err == nil {
		t.Error("Flink 1.20's gateway has no /sessions/{session_handle}/scripts")
	}
	s, _ = ForGateway("2.0", 4)
	if _, _, _, err := s.Operation(http.MethodPost, "/v4/sessions/x/scripts"); err != nil {
		t.Error(err)
	}
}

func TestGatewayVersionOf(t *testing.T) {
	for _, c := range []struct {
		in   string
		v    int
		rest string
	}{{"/v2/sessions", 2, "/sessions"}, {"/sessions", 0, "/sessions"}, {"/v10/info", 10, "/info"}, {"/vx/info", 0, "/vx/info"}, {"/v02/info", 0, "/v02/info"}} {
		if v, rest := GatewayVersionOf(c.in); v != c.v || rest != c.rest {
			t.Errorf("GatewayVersionOf(%q) = %d %q, want %d %q", c.in, v, rest, c.v, c.rest)
		}
	}
}

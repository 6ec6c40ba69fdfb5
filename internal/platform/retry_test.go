package platform

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	if missing := MissingBinaries(""); len(missing) > 0 {
		t.Skipf("Component binaries missing from bin/ (%v): run `make tools`", missing)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if calls == 1 && err == nil {
			ports[0] = busy.Addr().(*net.TCPAddr).Port // etcd's client port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{StateDir: t.TempDir(), Nodes: 1, Logger: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer p.Stop()
	if calls != 2 {
		t.Errorf("Ports were picked %d times, want 2 (one clash, one retry)", calls)
	}
}

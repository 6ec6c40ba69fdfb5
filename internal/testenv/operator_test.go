package testenv

import (
	"net"
	"os"
	"slices"
	"testing"
)

func TestFlagPorts(t *testing.T) {
	got := flagPorts([]string{"--health-probe-bind-address=127.0.0.1:8081", "--metrics-bind-address=0",
		"--webhook-port=9443", "--kubeconfig", "/k", "--webhook-url=https://127.0.0.1:9443/convert", "--metrics-bind-address=:8443"})
	if want := []int{8081, 9443, 8443}; !slices.Equal(got, want) {
		t.Errorf("flagPorts = %v, want %v", got, want)
	}
}

// The process that listens on a port is told apart from one that does not.
func TestListensOn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if !listensOn(os.Getpid(), []int{port}) {
		t.Errorf("this process listens on %d, listensOn says not", port)
	}
	other, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if listensOn(os.Getpid(), []int{port, other}) {
		t.Errorf("nothing listens on %d, listensOn says this process does", other)
	}
	l.Close()
	if listensOn(os.Getpid(), []int{port}) {
		t.Errorf("the listener on %d is closed, listensOn says it listens", port)
	}
}

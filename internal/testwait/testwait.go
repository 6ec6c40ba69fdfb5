// Package testwait polls for state that a real API server, controller or
// simulator reaches asynchronously. Tests wait on the state itself, never on
// a fixed sleep.
package testwait

import (
	"testing"
	"time"
)

// Interval between two looks.
const Interval = 100 * time.Millisecond

// Until calls f until it returns nil, and fails the test with f's last error
// when timeout passes first.
func Until(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Not within %s: %v", timeout, err)
		}
		time.Sleep(Interval)
	}
}

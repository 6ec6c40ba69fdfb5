// Package platformtest starts the local platform for a test.
//
//	func TestSomething(t *testing.T) {
//		p := platformtest.Start(t)
//		c, err := client.New(p.RESTConfig(), client.Options{})
//		...
//	}
//
// The state dir is under t.TempDir() and the platform is stopped in
// t.Cleanup. When bin/ lacks the component binaries the test is skipped with
// a message to run `make tools`; `make test` always builds them first.
package platformtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/datapilot/datapilot/internal/platform"
)

// Start starts a platform with the default options (see StartWith).
func Start(t testing.TB) *platform.Platform {
	t.Helper()
	return StartWith(t, platform.Options{})
}

// StartWith starts a platform with opts. An empty StateDir becomes a
// directory under t.TempDir(); an unset Logger logs through t at verbosity 0.
// The test fails at once if the platform does not start.
func StartWith(t testing.TB, opts platform.Options) *platform.Platform {
	t.Helper()
	if missing := platform.MissingBinaries(opts.BinDir); len(missing) > 0 {
		t.Skipf("Component binaries missing from bin/ (%s): run `make tools`", strings.Join(missing, ", "))
	}
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = testr.NewWithInterface(t, testr.Options{Verbosity: 0})
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := platform.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Starting the local platform: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("Stopping the local platform: %v", err)
		}
	})
	return p
}

// Package buildinfo holds what the build stamps into Datapilot's binaries:
// the version and the source revision, set with
//
//	-ldflags "-X github.com/datapilot/datapilot/internal/buildinfo.version=0.1.0
//	          -X github.com/datapilot/datapilot/internal/buildinfo.revision=<git sha>"
//
// The Makefile's build and image targets set both from the chart's
// appVersion and git.
package buildinfo

import (
	"fmt"
	"runtime"
)

// Set by the linker; a plain `go build` leaves these defaults.
var (
	version  = "dev"
	revision = "unknown"
)

// Version is the stamped version, "dev" when none was.
func Version() string { return version }

// Revision is the stamped source revision (a git commit), "unknown" when none was.
func Revision() string { return revision }

// String is the one line `datapilot version` prints.
func String() string {
	return fmt.Sprintf("datapilot %s (revision %s, %s, %s/%s)", version, revision, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

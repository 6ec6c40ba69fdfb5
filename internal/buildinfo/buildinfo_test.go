package buildinfo

import (
	"strings"
	"testing"
)

func TestStringNamesVersionAndRevision(t *testing.T) {
	version, revision = "1.2.3", "abc123"
	t.Cleanup(func() { version, revision = "dev", "unknown" })
	got := String()
	if !strings.HasPrefix(got, "datapilot 1.2.3 (revision abc123, go") {
		t.Fatalf("String() = %q, want it to start with the version and revision", got)
	}
}

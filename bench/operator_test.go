package main

import "testing"

func TestRevisionOf(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"datapilot 0.1.0 (revision 8de0a7dc76510b4389a5930a7dbbd1481001514e, go1.26.8, linux/amd64)", "8de0a7dc76510b4389a5930a7dbbd1481001514e"},
		{"datapilot 0.1.0 (revision unknown, go1.26.8, linux/amd64)", "unknown"},
		{"unknown (exit status 1)", ""},
	} {
		if got := revisionOf(tc.version); got != tc.want {
			t.Errorf("revisionOf(%q) = %q, want %q", tc.version, got, tc.want)
		}
	}
}

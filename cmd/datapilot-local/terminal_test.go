package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestProgressLines(t *testing.T) {
	at := func() time.Time { return time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC) }
	for _, tc := range []struct {
		name string
		log  func(*progressSink)
		want string
	}{
		{"message alone", func(s *progressSink) { s.Info(0, "Local platform ready") }, "13:04:05  Local platform ready\n"},
		{"key values in parentheses", func(s *progressSink) { s.Info(1, "Etcd ready", "took", "202ms") }, "13:04:05  Etcd ready (took: 202ms)\n"},
		{"name and values", func(s *progressSink) {
			s.WithName("sim").WithValues("addr", ":8089").(*progressSink).Info(0, "Listening", "tls", false)
		}, "13:04:05  sim: Listening (addr: :8089, tls: false)\n"},
		{"errors say so", func(s *progressSink) { s.Error(errors.New("port taken"), "Retrying") }, "13:04:05  error: Retrying (error: port taken)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			s := &progressSink{mu: &sync.Mutex{}, w: &b, maxLevel: 1, now: at}
			tc.log(s)
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
	if (&progressSink{maxLevel: 1}).Enabled(2) {
		t.Errorf("level 2 (debug) is shown on the terminal")
	}
}

// TestCopyNewLines: --verbose streams whole lines once each, with the
// file's name, and holds a line back until it is complete.
func TestCopyNewLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "operator.log")
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	var out bytes.Buffer
	write("one\ntw")
	off, rest := copyNewLines(path, 0, nil, &out)
	if out.String() != "[operator] one\n" {
		t.Fatalf("first pass wrote %q", out.String())
	}
	write("o\nthree\n")
	out.Reset()
	off, rest = copyNewLines(path, off, rest, &out)
	if out.String() != "[operator] two\n[operator] three\n" || len(rest) != 0 {
		t.Fatalf("second pass wrote %q, kept %q", out.String(), rest)
	}
	out.Reset()
	if _, _ = copyNewLines(path, off, rest, &out); out.Len() != 0 {
		t.Fatalf("nothing new, but wrote %q", out.String())
	}
}

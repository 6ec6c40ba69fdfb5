package flinksim

import (
	"testing"
	"time"
)

// TestReadPace: a namespace rests as long as its last read took, up to
// maxRest; others are not held by it, and a first read never waits.
func TestReadPace(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	var p readPace
	if w := p.wait("a", t0); w != 0 {
		t.Fatalf("first read of a waits %v, want 0", w)
	}
	p.read("a", t0, t0.Add(200*time.Millisecond)) // a read of 200ms ends at +200ms
	for _, tc := range []struct {
		ns   string
		at   time.Duration
		want time.Duration
	}{
		{"a", 200 * time.Millisecond, 200 * time.Millisecond}, // just read: rests as long as it took
		{"a", 350 * time.Millisecond, 50 * time.Millisecond},
		{"a", 400 * time.Millisecond, 0},
		{"a", time.Second, 0},
		{"b", 200 * time.Millisecond, 0}, // another namespace is not held
	} {
		if got := p.wait(tc.ns, t0.Add(tc.at)); got != tc.want {
			t.Errorf("wait(%s, +%v) = %v, want %v", tc.ns, tc.at, got, tc.want)
		}
	}
	// A read slowed by more than its size rests no longer than maxRest.
	p.read("c", t0, t0.Add(5*time.Second))
	if got := p.wait("c", t0.Add(5*time.Second)); got != maxRest {
		t.Errorf("after a 5s read c rests %v, want %v", got, maxRest)
	}
	// A quick read rests as briefly.
	p.read("a", t0.Add(time.Second), t0.Add(time.Second+time.Millisecond))
	if got := p.wait("a", t0.Add(time.Second+time.Millisecond)); got != time.Millisecond {
		t.Errorf("after a 1ms read a rests %v, want 1ms", got)
	}
}

// TestReadStatsString: how the bench prints the reads.
func TestReadStatsString(t *testing.T) {
	for _, tc := range []struct {
		r    ReadStats
		want string
	}{
		{ReadStats{}, "none"},
		{ReadStats{Count: 4, Total: 10 * time.Millisecond, Longest: 7 * time.Millisecond}, "4 / 2.5ms / 7ms"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.r, got, tc.want)
		}
	}
}

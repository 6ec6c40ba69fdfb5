package pacing

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestP95(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{"none", nil, 0},
		{"one", ms(7), 7 * time.Millisecond},
		{"twenty: the 19th", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 19 * time.Millisecond},
		{"hundred: the 95th", ms(hundred...), 95 * time.Millisecond},
	} {
		if got := P95(tc.in); got != tc.want {
			t.Errorf("%s: P95 = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestOverIsDegradeOfP95: the decision without a sort is the decision on
// the sorted p95, at the threshold's edges too (samples equal to it).
func TestOverIsDegradeOfP95(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 260 {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(rng.IntN(20)) * time.Second
		}
		for _, th := range []time.Duration{0, 5 * time.Second, 15 * time.Second, 19 * time.Second, 20 * time.Second} {
			if got, want := over(ds, th), Degrade(P95(ds), th); got != want {
				t.Fatalf("n=%d threshold %s: over = %v, Degrade(P95) = %v", n, th, got, want)
			}
		}
	}
}

// TestPacerDegradesAndRecovers drives the pacer with a fake clock: slow
// reconciles degrade polling to the degraded interval, once, with one
// notification; when they age out of the window and fast ones follow,
// polling recovers, again with one notification.
func TestPacerDegradesAndRecovers(t *testing.T) {
	now := time.Unix(1000, 0)
	type change struct {
		degraded bool
		interval time.Duration
	}
	var changes []change
	p := &Pacer{
		Base: 30 * time.Second, Threshold: 15 * time.Second, Degraded: time.Minute, Window: time.Minute,
		Now:      func() time.Time { return now },
		OnChange: func(d bool, _ time.Duration, i time.Duration) { changes = append(changes, change{d, i}) },
		Metrics:  NewMetrics(nil),
	}
	if got := p.Interval(); got != 30*time.Second {
		t.Fatalf("idle interval = %s", got)
	}
	// 94 fast and 6 slow: the p95 is slow.
	for i := range 100 {
		d := time.Second
		if i%16 == 0 {
			d = 20 * time.Second
		}
		p.Observe(d)
		now = now.Add(100 * time.Millisecond)
	}
	if got := p.Interval(); got != time.Minute {
		t.Fatalf("interval under slow reconciles = %s, want 1m", got)
	}
	// A minute later the slow ones are out of the window.
	now = now.Add(time.Minute)
	for range 10 {
		p.Observe(2 * time.Second)
	}
	if got := p.Interval(); got != 30*time.Second {
		t.Fatalf("interval after recovery = %s, want 30s", got)
	}
	want := []change{{true, time.Minute}, {false, 30 * time.Second}}
	if len(changes) != len(want) || changes[0] != want[0] || changes[1] != want[1] {
		t.Errorf("changes = %+v, want %+v", changes, want)
	}
}

func TestDegradedNeverFasterThanBase(t *testing.T) {
	p := &Pacer{Base: 2 * time.Minute, Threshold: time.Second}
	p.Observe(5 * time.Second)
	if got := p.Interval(); got != 2*time.Minute {
		t.Errorf("interval = %s, want the 2m base", got)
	}
}

package sharding

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The assignment is part of the upgrade contract: replicas of two versions
// run side by side during a rollout, so a cluster's shard must never move.
func TestOfIsStable(t *testing.T) {
	for _, tc := range []struct {
		ns, name   string
		s2, s4, s8 int
	}{
		{"default", "a", 0, 2, 6},
		{"default", "b", 1, 3, 3},
		{"team-x", "orders", 1, 3, 3},
		{"bench-operator", "fc-0000", 1, 1, 5},
		{"bench-operator", "fc-0001", 0, 2, 2},
	} {
		key := types.NamespacedName{Namespace: tc.ns, Name: tc.name}
		for shards, want := range map[int]int{2: tc.s2, 4: tc.s4, 8: tc.s8} {
			if got := Of(key, shards); got != want {
				t.Errorf("Of(%s, %d) = %d, want %d", key, shards, got, want)
			}
		}
	}
	// The separator matters: "a/bc" and "ab/c" are different clusters.
	if Of(types.NamespacedName{Namespace: "a", Name: "bc"}, 1<<20) == Of(types.NamespacedName{Namespace: "ab", Name: "c"}, 1<<20) {
		t.Error("namespace and name are not separated in the hash")
	}
}

// Clusters named as people name them (a prefix and a counter) spread evenly.
func TestOfSpreadsEvenly(t *testing.T) {
	const n = 1000
	for _, shards := range []int{2, 3, 4, 8} {
		counts := make([]int, shards)
		for i := range n {
			counts[Of(types.NamespacedName{Namespace: "bench-operator", Name: fmt.Sprintf("fc-%04d", i)}, shards)]++
		}
		for i, c := range counts {
			if want := n / shards; c < want*85/100 || c > want*115/100 {
				t.Errorf("%d shards: shard %d has %d of %d clusters, want %d ± 15%%", shards, i, c, n, want)
			}
		}
	}
}

func TestFairShare(t *testing.T) {
	for _, tc := range []struct{ shards, replicas, want int }{
		{1, 1, 1}, {4, 1, 4}, {4, 2, 2}, {5, 2, 3}, {3, 4, 1}, {8, 3, 3},
	} {
		if got := FairShare(tc.shards, tc.replicas); got != tc.want {
			t.Errorf("FairShare(%d, %d) = %d, want %d", tc.shards, tc.replicas, got, tc.want)
		}
	}
}

// The gate lets a replica take its fair share at once, a dead peer's shard
// at once, and a shard nobody leads (never led, or released) beyond its
// share only after the grace a starting peer gets.
func TestGate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expired := &rl.LeaderElectionRecord{HolderIdentity: "peer", RenewTime: metav1.NewTime(t0.Add(-time.Minute))}
	released := &rl.LeaderElectionRecord{HolderIdentity: "", RenewTime: metav1.NewTime(t0.Add(-time.Second))}
	type try struct {
		after time.Duration
		prev  *rl.LeaderElectionRecord
		want  bool
	}
	for _, tc := range []struct {
		name  string
		owned int
		tries []try
	}{
		{"below its share: a new lease at once", 1, []try{{0, nil, true}}},
		{"below its share: a released lease at once", 1, []try{{0, released, true}}},
		{"at its share: a dead peer's lease at once", 2, []try{{0, expired, true}}},
		{"at its share: a new lease after the grace", 2, []try{{0, nil, false}, {5 * time.Second, nil, false}, {12 * time.Second, nil, true}}},
		{"at its share: a released lease after the grace", 2, []try{{0, released, false}, {12 * time.Second, released, true}}},
		{"at its share: the grace restarts when the record changed", 2, []try{
			{0, released, false},
			{10 * time.Second, &rl.LeaderElectionRecord{RenewTime: metav1.NewTime(t0.Add(9 * time.Second))}, false},
			{13 * time.Second, &rl.LeaderElectionRecord{RenewTime: metav1.NewTime(t0.Add(9 * time.Second))}, false},
			{22 * time.Second, &rl.LeaderElectionRecord{RenewTime: metav1.NewTime(t0.Add(9 * time.Second))}, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			g := gate{fair: 2, grace: 12 * time.Second, now: func() time.Time { return now }, owned: map[int]bool{}, waiting: map[int]waiting{}}
			for i := range tc.owned {
				g.take(100 + i)
			}
			for i, tr := range tc.tries {
				now = t0.Add(tr.after)
				got := g.admit(7, tr.prev)
				if got != tr.want {
					t.Fatalf("try %d at +%s: admitted %t, want %t", i, tr.after, got, tr.want)
				}
				if got {
					g.settle(7, true)
				}
			}
		})
	}
}

// Acquisitions in flight count: two shards contended at once by a replica
// one short of its share yield one, not two.
func TestGateCountsPending(t *testing.T) {
	g := gate{fair: 2, grace: time.Minute, owned: map[int]bool{1: true}, waiting: map[int]waiting{}}
	if !g.admit(2, nil) {
		t.Fatal("the first acquisition below the share was refused")
	}
	if g.admit(3, nil) {
		t.Fatal("a second acquisition in flight passed the share")
	}
	g.settle(2, false)
	if !g.admit(3, nil) {
		t.Fatal("a failed acquisition still counted")
	}
}

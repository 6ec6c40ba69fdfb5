// Package sharding splits the FlinkClusters among operator replicas. Each
// cluster belongs to one of S shards by a stable hash of its namespace and
// name; each shard is a coordination.k8s.io Lease, elected with client-go's
// leader election, and a replica reconciles a cluster only while it leads
// the cluster's shard. docs/operations/sharding.md has the design and its
// failure cases.
package sharding

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Of is the shard of a cluster: FNV-1a of "namespace/name" modulo shards.
// It depends on nothing but the key, so every replica, of any version,
// computes the same assignment.
func Of(key types.NamespacedName, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key.Namespace + "/" + key.Name))
	return int(h.Sum32() % uint32(shards))
}

// FairShare is how many shards one of replicas replicas leads before it
// leaves the others theirs: ceil(shards / replicas).
func FairShare(shards, replicas int) int {
	return (shards + replicas - 1) / max(replicas, 1)
}

// LeaseName names shard i of shards. The count is in the name, so replicas
// configured with different counts never read each other's leases as their own.
func LeaseName(i, shards int) string { return fmt.Sprintf("datapilot-shard-%d-of-%d", i, shards) }

// Sharder runs one leader election per shard and says which clusters this
// replica owns. It is a manager.Runnable that runs on every replica.
type Sharder struct {
	// Shards is the number of shards, Replicas how many replicas are
	// expected to share them (the Deployment's replicas): each leads its
	// fair share first.
	Shards, Replicas int
	// Namespace holds the leases; Identity names this replica in them.
	Namespace, Identity string
	Leases              coordinationv1.LeasesGetter
	// LeaseDuration, RenewDeadline and RetryPeriod time each election as
	// they time the operator's single one.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Reader is the manager's cache: on acquiring a shard its clusters are
	// listed from it and sent on Events, so each is reconciled at once.
	Reader client.Reader
	// WaitForSync blocks until the cache is synced; no shard is contended
	// for before.
	WaitForSync func(context.Context) bool
	// OnChange, when set, is called with the number of shards led after
	// each change (a metric).
	OnChange func(led int)

	events chan event.GenericEvent
	once   sync.Once

	mu sync.Mutex
	// led holds the context of each shard this replica leads; it is
	// cancelled when the lease is lost.
	led  map[int]context.Context
	gate gate
}

var (
	_ manager.Runnable               = (*Sharder)(nil)
	_ manager.LeaderElectionRunnable = (*Sharder)(nil)
)

// NeedLeaderElection is false: every replica contends for the shards.
func (s *Sharder) NeedLeaderElection() bool { return false }

// Events carries the clusters of a shard just acquired.
func (s *Sharder) Events() <-chan event.GenericEvent {
	s.init()
	return s.events
}

func (s *Sharder) init() {
	s.once.Do(func() {
		s.events = make(chan event.GenericEvent, 1024)
		s.led = map[int]context.Context{}
		s.gate = gate{fair: FairShare(s.Shards, s.Replicas), grace: s.LeaseDuration, owned: map[int]bool{}, waiting: map[int]waiting{}}
	})
}

// Context is the context of the cluster's shard while this replica leads
// it: a reconcile run under it is cancelled when the lease is lost, before
// another replica can acquire it (RenewDeadline < LeaseDuration).
func (s *Sharder) Context(key types.NamespacedName) (context.Context, bool) {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, ok := s.led[Of(key, s.Shards)]
	if ok && ctx.Err() != nil {
		return nil, false
	}
	return ctx, ok
}

// Owns reports whether this replica leads the cluster's shard.
func (s *Sharder) Owns(key types.NamespacedName) bool {
	_, ok := s.Context(key)
	return ok
}

// Start contends for every shard until ctx is done, then releases the
// shards it leads (ReleaseOnCancel), so a graceful stop hands them over at
// the others' next retry.
func (s *Sharder) Start(ctx context.Context) error {
	s.init()
	if s.Shards < 1 || s.Leases == nil || s.Reader == nil || s.Identity == "" {
		return errors.New("sharding: Sharder needs Shards, Leases, Reader and Identity")
	}
	if s.WaitForSync != nil && !s.WaitForSync(ctx) {
		return errors.New("sharding: cache did not sync")
	}
	var wg sync.WaitGroup
	for i := range s.Shards {
		wg.Go(func() { s.contend(ctx, i) })
	}
	wg.Wait()
	return nil
}

// contend runs the election of shard i again each time it ends, until ctx
// is done: a replica that lost a shard stays a candidate for it.
func (s *Sharder) contend(ctx context.Context, i int) {
	log := logf.FromContext(ctx).WithName("sharding").WithValues("shard", i)
	lock := &gatedLock{Interface: &rl.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.Namespace, Name: LeaseName(i, s.Shards)},
		Client:     s.Leases,
		LockConfig: rl.ResourceLockConfig{Identity: s.Identity},
	}, shard: i, gate: &s.gate}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: LeaseName(i, s.Shards), ReleaseOnCancel: true,
			LeaseDuration: s.LeaseDuration, RenewDeadline: s.RenewDeadline, RetryPeriod: s.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leading context.Context) { s.acquired(leading, i) },
				OnStoppedLeading: func() { s.lost(i) },
			},
		})
		if err != nil {
			log.Error(err, "Cannot elect a leader for the shard")
			return
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			log.Info("Lost the shard's lease; contending again")
		}
	}
}

// acquired records the shard as led and queues its clusters.
func (s *Sharder) acquired(leading context.Context, i int) {
	s.mu.Lock()
	s.led[i] = leading
	n := len(s.led)
	s.mu.Unlock()
	// A renewal after a restarted election is no acquisition through the
	// gate; the gate counts the shard all the same.
	s.gate.take(i)
	s.changed(n)
	logf.FromContext(leading).WithName("sharding").Info("Leading shard", "shard", i, "of", s.Shards)
	var list v1.FlinkClusterList
	if err := s.Reader.List(leading, &list); err != nil {
		logf.FromContext(leading).Error(err, "Listing the shard's FlinkClusters", "shard", i)
		return
	}
	for j := range list.Items {
		fc := &list.Items[j]
		if Of(client.ObjectKeyFromObject(fc), s.Shards) != i {
			continue
		}
		select {
		case s.events <- event.GenericEvent{Object: fc}:
		case <-leading.Done():
			return
		}
	}
}

func (s *Sharder) lost(i int) {
	s.mu.Lock()
	delete(s.led, i)
	n := len(s.led)
	s.mu.Unlock()
	s.gate.release(i)
	s.changed(n)
}

func (s *Sharder) changed(n int) {
	if s.OnChange != nil {
		s.OnChange(n)
	}
}

// gate holds a replica to its fair share of the shards while a peer may
// still take them: a shard never led, or released by a replica that
// stopped, waits grace before a replica at its share takes it; a shard
// whose holder stopped renewing (it died) is taken at once, since the
// holder will not come back for it.
type gate struct {
	fair  int
	grace time.Duration
	now   func() time.Time

	mu      sync.Mutex
	owned   map[int]bool
	pending int
	// waiting is since when a shard at the fair share has been free, and
	// the record it was free in.
	waiting map[int]waiting
}

type waiting struct {
	since  time.Time
	record string
}

func (g *gate) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

// admit says whether this replica may acquire shard i, whose current
// record is prev (nil when the lease does not exist). An admitted
// acquisition must be settled.
func (g *gate) admit(i int, prev *rl.LeaderElectionRecord) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.owned)+g.pending < g.fair || prev != nil && prev.HolderIdentity != "" {
		g.pending++
		return true
	}
	rec := "absent"
	if prev != nil {
		rec = prev.RenewTime.String()
	}
	w, ok := g.waiting[i]
	if !ok || w.record != rec {
		g.waiting[i] = waiting{since: g.clock(), record: rec}
		return false
	}
	if g.clock().Sub(w.since) < g.grace {
		return false
	}
	g.pending++
	return true
}

func (g *gate) settle(i int, acquired bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending--
	if acquired {
		g.owned[i] = true
		delete(g.waiting, i)
	}
}

func (g *gate) take(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.owned[i] = true
	delete(g.waiting, i)
}

func (g *gate) release(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.owned, i)
}

// gatedLock is a LeaseLock whose acquisitions pass the gate; renewals
// pass through.
type gatedLock struct {
	rl.Interface
	shard int
	gate  *gate

	mu   sync.Mutex
	last *rl.LeaderElectionRecord
}

var errAtFairShare = errors.New("at its fair share of the shards; leaving this one to a peer for now")

func (l *gatedLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	l.last = rec
	if err != nil {
		l.last = nil
	}
	l.mu.Unlock()
	return rec, raw, err
}

func (l *gatedLock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return l.acquire(ctx, nil, func() error { return l.Interface.Create(ctx, ler) })
}

func (l *gatedLock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	l.mu.Lock()
	prev := l.last
	l.mu.Unlock()
	// client-go keeps the acquire time of a renewal; a new one is an acquisition.
	if !ler.AcquireTime.Equal(&ler.RenewTime) || prev != nil && prev.HolderIdentity == l.Identity() {
		return l.Interface.Update(ctx, ler)
	}
	return l.acquire(ctx, prev, func() error { return l.Interface.Update(ctx, ler) })
}

func (l *gatedLock) acquire(_ context.Context, prev *rl.LeaderElectionRecord, write func() error) error {
	if !l.gate.admit(l.shard, prev) {
		return errAtFairShare
	}
	err := write()
	l.gate.settle(l.shard, err == nil)
	return err
}

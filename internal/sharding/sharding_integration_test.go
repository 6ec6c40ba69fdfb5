package sharding_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/sharding"
	"github.com/datapilot/datapilot/internal/testenv"
	"github.com/datapilot/datapilot/internal/testwait"
)

// replica is one Sharder and what it reports.
type replica struct {
	s      *sharding.Sharder
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   map[types.NamespacedName]bool
}

func (r *replica) led() int {
	n := 0
	for i := range r.s.Shards {
		if r.s.Owns(keyInShard(i, r.s.Shards)) {
			n++
		}
	}
	return n
}

func (r *replica) requeued(k types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[k]
}

// keyInShard is some cluster key of shard i.
func keyInShard(i, shards int) types.NamespacedName {
	for n := 0; ; n++ {
		k := types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("fc-%d", n)}
		if sharding.Of(k, shards) == i {
			return k
		}
	}
}

// Two replicas on a real API server split four shards two and two; one
// that stops hands its two to the other, which requeues their clusters;
// no shard is ever led by both.
func TestShardsSplitAndMoveOnStop(t *testing.T) {
	_, cfg := testenv.Start(t)
	k8s, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	const shards = 4
	// One cluster per shard, for the requeue on acquisition.
	var keys []types.NamespacedName
	for i := range shards {
		k := keyInShard(i, shards)
		keys = append(keys, k)
		fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace}, Spec: v1.FlinkClusterSpec{
			Version: "1.17.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 1, Slots: 1}}}
		if err := k8s.Create(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	start := func(name string) *replica {
		r := &replica{seen: map[types.NamespacedName]bool{}, done: make(chan struct{})}
		r.s = &sharding.Sharder{Shards: shards, Replicas: 2, Namespace: corev1.NamespaceDefault, Identity: name,
			Leases: cs.CoordinationV1(), LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Reader: k8s}
		events := r.s.Events()
		rctx, cancel := context.WithCancel(ctx)
		r.cancel = cancel
		go func() {
			for {
				select {
				case e := <-events:
					r.mu.Lock()
					r.seen[client.ObjectKeyFromObject(e.Object)] = true
					r.mu.Unlock()
				case <-rctx.Done():
					return
				}
			}
		}()
		go func() {
			defer close(r.done)
			if err := r.s.Start(rctx); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
		return r
	}
	a, b := start("replica-a"), start("replica-b")
	overlap := make(chan string, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			for _, k := range keys {
				if a.s.Owns(k) && b.s.Owns(k) {
					select {
					case overlap <- k.String():
					default:
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	testwait.Until(t, 30*time.Second, func() error {
		if a.led() == 2 && b.led() == 2 {
			return nil
		}
		return fmt.Errorf("a leads %d shards and b %d, want 2 each", a.led(), b.led())
	})
	testwait.Until(t, 10*time.Second, func() error {
		for _, k := range keys {
			owner := a
			if b.s.Owns(k) {
				owner = b
			}
			if !owner.requeued(k) {
				return fmt.Errorf("%s was not requeued by the replica that acquired its shard", k)
			}
		}
		return nil
	})

	a.cancel()
	<-a.done
	testwait.Until(t, 30*time.Second, func() error {
		if b.led() != shards {
			return fmt.Errorf("after a stopped, b leads %d shards, want %d", b.led(), shards)
		}
		for _, k := range keys {
			if !b.requeued(k) {
				return fmt.Errorf("%s was not requeued by b after the takeover", k)
			}
		}
		return nil
	})
	stopWatch()
	select {
	case k := <-overlap:
		t.Errorf("%s was owned by both replicas at once", k)
	default:
	}
}

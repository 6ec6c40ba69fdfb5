package controller

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// staleRetry is how soon a reconcile that found the cache behind its own
// last write looks again. Our status writes do not wake the controller
// (predicates), so the retry is the only way back.
const staleRetry = 200 * time.Millisecond

// freshness tells a cached FlinkCluster that predates our own last status
// write. The lifecycle records intent (a savepoint trigger, a submission)
// in the status before acting; a reconcile that read the version before
// that write would decide the same step again with a new trigger ID, the
// duplicate savepoint of a lagging cache (the Spotify operator's #1051).
// Resource versions are opaque: only equality is used.
type freshness struct {
	mu sync.Mutex
	// superseded are the versions of each cluster that our writes replaced
	// and the cache has not moved past yet.
	superseded map[types.NamespacedName][]string
}

// wrote records a status write that turned version read into written.
func (f *freshness) wrote(obj client.Object, read, written string) {
	if read == "" || read == written {
		// A write the server found unchanged supersedes nothing.
		return
	}
	key := client.ObjectKeyFromObject(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.superseded == nil {
		f.superseded = map[types.NamespacedName][]string{}
	}
	f.superseded[key] = append(f.superseded[key], read)
}

// stale reports whether obj is a version one of our writes superseded.
// Any other version means the cache has caught up (or moved beyond, by
// another writer), and the record is dropped.
func (f *freshness) stale(obj client.Object) bool {
	key := client.ObjectKeyFromObject(obj)
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.superseded[key]
	if !ok {
		return false
	}
	if slices.Contains(old, obj.GetResourceVersion()) {
		return true
	}
	delete(f.superseded, key)
	return false
}

func (f *freshness) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.superseded, key)
}

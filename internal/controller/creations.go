package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// creationWait bounds how long a child this replica created may be missing
// from the cache before it is created again. Past it the create is sent
// anyway: if the object exists, the API server refuses it and write falls
// back to an apply, so the bound only decides how many writes a lagging
// cache costs, never whether a child is there.
const creationWait = 15 * time.Second

// creations remembers the children this replica created that its cache
// has not shown yet. Each kind's watch is its own stream: a reconcile woken
// by one child's create can run before another's reaches the cache, find
// it missing and POST it again, refused as AlreadyExists, then apply it.
// Two writes for nothing, and the object's fields then owned by both the
// create and the apply (TestCreatedChildrenDropWhatTheRenderingDrops saw
// that once in a full run; the bench saw ~3 Services per 1000 clusters
// created twice). kube-controller-manager's ReplicaSet controller keeps
// expectations for the same reason (ControllerExpectations); this is their
// one-object form, keyed by cluster so a deleted cluster's go with it.
type creations struct {
	mu sync.Mutex
	// sent holds, per cluster, the incarnation (UID) the children were
	// created for and when each ("Kind name") was.
	sent map[types.NamespacedName]*incarnation
}

type incarnation struct {
	uid types.UID
	at  map[string]time.Time
}

// created records the create of a child of cluster at now.
func (c *creations) created(cluster types.NamespacedName, uid types.UID, kind, name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent == nil {
		c.sent = map[types.NamespacedName]*incarnation{}
	}
	if e := c.sent[cluster]; e == nil || e.uid != uid {
		c.sent[cluster] = &incarnation{uid: uid, at: map[string]time.Time{}}
	}
	c.sent[cluster].at[kind+" "+name] = now
}

// awaited is how much longer a child the cache does not show (cached
// false) is taken to be there, as created, without a write: zero when it
// was not created here for this incarnation of the cluster, or longer
// than creationWait ago. A child the cache shows is forgotten.
func (c *creations) awaited(cluster types.NamespacedName, uid types.UID, kind, name string, cached bool, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.sent[cluster]
	if e == nil {
		return 0
	}
	if e.uid != uid {
		// The cluster was deleted and created again under its name.
		delete(c.sent, cluster)
		return 0
	}
	at, ok := e.at[kind+" "+name]
	if !ok {
		return 0
	}
	if left := at.Add(creationWait).Sub(now); !cached && left > 0 {
		return left
	}
	delete(e.at, kind+" "+name)
	if len(e.at) == 0 {
		delete(c.sent, cluster)
	}
	return 0
}

func (c *creations) forget(cluster types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sent, cluster)
}

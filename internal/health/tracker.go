package health

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Tracker holds the latest Verdict of every cluster. It is safe for
// concurrent use; the Poller writes it and the reconciler reads it.
type Tracker struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
}

type entry struct {
	// uid is the FlinkCluster's UID the entry describes.
	uid     types.UID
	verdict Verdict
	// readyAt is when a probe first saw the JobManager ready; zero until
	// then. restJudged: a probe of its REST API has since passed or failed
	// (not merely found it starting).
	readyAt    time.Time
	restJudged bool
	// notifyPending is set when a change could not be sent on Notify (the
	// channel was full); the next round sends it.
	notifyPending bool
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{entries: map[types.NamespacedName]*entry{}}
}

// Get returns the cluster's latest Verdict, and false when it has none.
func (t *Tracker) Get(key types.NamespacedName) (Verdict, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[key]
	if !ok {
		return Verdict{}, false
	}
	return e.verdict.clone(), true
}

// GetFor is Get for one incarnation of the cluster: false when the verdict
// is another's of the same name (deleted and created again, and not probed
// since), whose facts, its running jobs among them, are not this one's.
func (t *Tracker) GetFor(key types.NamespacedName, uid types.UID) (Verdict, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[key]
	if !ok || e.uid != uid {
		return Verdict{}, false
	}
	return e.verdict.clone(), true
}

// Forget drops a cluster, such as one being deleted.
func (t *Tracker) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, key)
}

// Len is the number of clusters tracked.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// retain forgets every cluster not in keep.
func (t *Tracker) retain(keep map[types.NamespacedName]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.entries {
		if !keep[k] {
			delete(t.entries, k)
		}
	}
}

// started is when a probe first saw the cluster's JobManager ready (zero
// when none has), and whether its REST API has been judged since.
func (t *Tracker) started(key types.NamespacedName, uid types.UID) (readyAt time.Time, restJudged bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.entries[key]; ok && e.uid == uid {
		return e.readyAt, e.restJudged
	}
	return time.Time{}, false
}

// update runs fn on the cluster's entry (a new one when absent) under the
// lock, so two rounds of one cluster never interleave their read and write.
func (t *Tracker) update(key types.NamespacedName, fn func(e *entry)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[types.NamespacedName]*entry{}
	}
	e, ok := t.entries[key]
	if !ok {
		e = &entry{}
		t.entries[key] = e
	}
	fn(e)
}

// clone copies the verdict's map and slice so callers cannot alias the
// Tracker's state.
func (v Verdict) clone() Verdict {
	out := v
	if v.Levels != nil {
		out.Levels = make(map[Level]LevelVerdict, len(v.Levels))
		for k, lv := range v.Levels {
			out.Levels[k] = lv
		}
	}
	if v.Jobs != nil {
		out.Jobs = append([]JobSummary(nil), v.Jobs...)
	}
	return out
}

package flinksim

import (
	"time"
)

// opKey is AsynchronousJobOperationKey: a trigger ID and the job it names.
type opKey struct{ job, trigger string }

// opResult is an operation's OperationResult: in progress until done, then
// either a value (a savepoint location, a checkpoint ID) or a failure.
type opResult struct {
	done     bool
	at       time.Time // when it completed
	location string
	id       int64
	failure  string
}

// opCache is CompletedOperationCache: operations registered under their
// keys, in progress until their result arrives, then kept for
// rest.async.store-duration after completion (expireAfterWrite when the
// result is put) and gone after that. A duration under one second keeps
// results forever: the cache only sets an expiry when
// cacheDuration.getSeconds() != 0. It lives in the Dispatcher's memory,
// so a new JobManager process starts with none.
type opCache struct {
	keep time.Duration
	ops  map[opKey]*opResult
}

func newOpCache(keep time.Duration) *opCache {
	return &opCache{keep: keep, ops: map[opKey]*opResult{}}
}

// evict drops the results whose time is up.
func (c *opCache) evict(now time.Time) {
	if c.keep < time.Second {
		return
	}
	for k, r := range c.ops {
		if r.done && !now.Before(r.at.Add(c.keep)) {
			delete(c.ops, k)
		}
	}
}

// expireAll drops every completed result now, as if its time were up;
// operations in flight stay, as they would in Flink.
func (c *opCache) expireAll() int {
	n := 0
	for k, r := range c.ops {
		if r.done {
			delete(c.ops, k)
			n++
		}
	}
	return n
}

// contains is CompletedOperationCache#containsOperation: in flight, or
// completed and not yet evicted.
func (c *opCache) contains(k opKey, now time.Time) bool {
	c.evict(now)
	_, ok := c.ops[k]
	return ok
}

// register is registerOngoingOperation.
func (c *opCache) register(k opKey) *opResult {
	r := &opResult{}
	c.ops[k] = r
	return r
}

func (c *opCache) get(k opKey, now time.Time) *opResult {
	c.evict(now)
	return c.ops[k]
}

// complete records an operation's result.
func (r *opResult) complete(at time.Time, location string, id int64, failure string) {
	if r.done {
		return
	}
	r.done, r.at, r.location, r.id, r.failure = true, at, location, id, failure
}

package flinksim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
)

// jobStore is a JobManager process's ExecutionGraphInfoStore, where its
// Dispatchers archive the jobs that reached a terminal state, as
// SessionClusterEntrypoint#createSerializableExecutionGraphStore builds it
// at start: FileExecutionGraphInfoStore (jobstore.type File, the default)
// or MemoryExecutionGraphInfoStore (Memory), both Guava caches that
// forget a job jobstore.expiration-time after it was archived and beyond
// jobstore.max-capacity jobs. The archived jobs themselves stay in their
// Dispatcher's jobs, marked with when they were archived.
type jobStore struct {
	memory     bool
	expiration time.Duration
	// capacity is the maximum number of archived jobs; <0 means no limit.
	capacity int
	// created is when the store's periodic cleanup was scheduled.
	created time.Time
	// The file store's JobsOverview counters: never decremented.
	finished, canceled, failed int32
}

// readJobStore reads the job store's options as the entrypoint does. The
// file store's Guava cache refuses a negative expiry or capacity; the
// memory store sets an expiry and a capacity only when they are positive.
func readJobStore(c *conf, now time.Time) (*jobStore, error) {
	typ, err := c.enum("jobstore.type", "File", "Memory")
	if err != nil {
		return nil, err
	}
	v, _ := c.value("jobstore.expiration-time")
	secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return nil, parseErr("jobstore.expiration-time", v, err)
	}
	capacity, err := c.integer("jobstore.max-capacity")
	if err != nil {
		return nil, err
	}
	s := &jobStore{memory: typ == "Memory", expiration: time.Duration(secs) * time.Second, capacity: capacity, created: now}
	switch {
	case s.memory:
		if s.capacity <= 0 {
			s.capacity = -1
		}
	case secs < 0:
		return nil, fmt.Errorf("java.lang.IllegalArgumentException: duration cannot be negative: %d MILLISECONDS", secs*1000)
	case capacity < 0:
		return nil, fmt.Errorf("java.lang.IllegalArgumentException: maximum size must not be negative")
	}
	return s, nil
}

// expired reports whether a job archived at `at` has expired by now
// (Guava's expireAfterWrite: written + expiry <= now).
func (s *jobStore) expired(at, now time.Time) bool {
	if s.memory && s.expiration <= 0 {
		return false
	}
	return !now.Before(at.Add(s.expiration))
}

// cleanupAt is the first run at or after t of the cleanup the store
// schedules every expiration-time from its creation
// (scheduleWithFixedDelay(cache::cleanUp)).
func (s *jobStore) cleanupAt(t time.Time) time.Time {
	if s.expiration <= 0 || !t.After(s.created) {
		return t
	}
	n := (t.Sub(s.created) + s.expiration - 1) / s.expiration
	return s.created.Add(max(1, n) * s.expiration)
}

// archive is Dispatcher#writeToExecutionGraphInfoStore for a job that
// reached a terminal state. The put runs the cache's maintenance first:
// expired jobs are removed (the file store's removal listener deletes
// their files); then a job beyond the capacity is evicted, the oldest
// archived first (Guava evicts the least recently used).
func (d *dispatcher) archive(c *cluster, j *job, at time.Time) {
	s := d.jm.jobStore
	for _, id := range slices.Clone(d.order) {
		if o := d.jobs[id]; !o.archivedAt.IsZero() && s.expired(o.archivedAt, at) {
			d.forget(c, o, at)
		}
	}
	j.archivedAt = at
	if !s.memory {
		switch j.state {
		case flink.JobFinished:
			s.finished++
		case flink.JobCanceled:
			s.canceled++
		case flink.JobFailed:
			s.failed++
		}
	}
	for s.capacity >= 0 {
		var oldest *job
		n := 0
		for _, id := range d.order {
			if o := d.jobs[id]; !o.archivedAt.IsZero() {
				n++
				if oldest == nil || o.archivedAt.Before(oldest.archivedAt) {
					oldest = o
				}
			}
		}
		if n <= s.capacity {
			break
		}
		d.forget(c, oldest, at)
	}
}

// expireJobs applies the store's expiry at now. The memory store's
// getIfPresent misses an expired job at once. The file store lists only
// live entries (jobDetailsCache.asMap), but serves an expired job's
// graph from its file until the removal listener deletes it: at the next
// scheduled cleanup, or at the next put. Cleanups Guava runs after every
// 64 reads are not modelled.
func (d *dispatcher) expireJobs(c *cluster, now time.Time) {
	s := d.jm.jobStore
	for _, id := range slices.Clone(d.order) {
		j := d.jobs[id]
		if j.archivedAt.IsZero() || !s.expired(j.archivedAt, now) {
			continue
		}
		if s.memory || !now.Before(s.cleanupAt(j.archivedAt.Add(s.expiration))) {
			d.forget(c, j, now)
			continue
		}
		j.unlisted = true
	}
}

// expireAll forgets every archived job now, as if its expiry and the
// store's cleanup had passed; it returns how many went.
func (d *dispatcher) expireAll(c *cluster, now time.Time) int {
	n := 0
	for _, id := range slices.Clone(d.order) {
		if j := d.jobs[id]; !j.archivedAt.IsZero() {
			d.forget(c, j, now)
			n++
		}
	}
	return n
}

// forget removes an archived job from the Dispatcher: GET /jobs/{jobid}
// answers 404 and no listing has it. The job result store keeps its
// entry.
func (d *dispatcher) forget(c *cluster, j *job, now time.Time) {
	if d.jobs[j.id] != j {
		return
	}
	delete(d.jobs, j.id)
	d.order = slices.DeleteFunc(d.order, func(id string) bool { return id == j.id })
	if h := c.history[j.id]; h.shows(j) {
		h.present = false
	}
	d.jm.logf(now, "INFO Job %s expired from the job store", j.id)
}

// storedOverview is ExecutionGraphInfoStore#getStoredJobsOverview: the
// file store's counters of every job it ever archived, the memory
// store's count of the jobs it still holds.
func (d *dispatcher) storedOverview() (finished, canceled, failed int32) {
	s := d.jm.jobStore
	if !s.memory {
		return s.finished, s.canceled, s.failed
	}
	for _, id := range d.order {
		j := d.jobs[id]
		if j.archivedAt.IsZero() {
			continue
		}
		switch j.state {
		case flink.JobFinished:
			finished++
		case flink.JobCanceled:
			canceled++
		case flink.JobFailed:
			failed++
		}
	}
	return finished, canceled, failed
}

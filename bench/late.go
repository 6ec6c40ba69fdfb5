package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// lateWork does, by workers goroutines, what comes after a cluster's pods
// turned ready (the floor's status write, the TaskManagers' budget of the
// baseline's shape that has one), for each of n
// clusters of ns as soon as the bench's watch has seen its three pods
// Ready, while the rest are still being created.
type lateWork struct {
	n            int
	done         atomic.Int64
	errs         chan error
	stop, fed    chan struct{}
	ready        chan string
	wg           sync.WaitGroup
	finishedOnce sync.Once
}

func whenReady(watch *readiness, ns string, n, workers int, f func(name string) error) *lateWork {
	w := &lateWork{n: n, errs: make(chan error, workers), stop: make(chan struct{}), fed: make(chan struct{}), ready: make(chan string, n)}
	for range workers {
		w.wg.Go(func() {
			for name := range w.ready {
				if err := f(name); err != nil {
					w.errs <- err
					return
				}
				w.done.Add(1)
			}
		})
	}
	// A poll, not a callback from the watch: the channel holds all n
	// names, so feeding never blocks.
	go func() {
		defer close(w.fed)
		sent := map[string]bool{}
		for len(sent) < n {
			for _, name := range watch.readyClusters(ns, 3) {
				if !sent[name] {
					sent[name] = true
					w.ready <- name
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

// left is how many clusters f has not been done for yet, or f's first
// error.
func (w *lateWork) left() (int, error) {
	select {
	case err := <-w.errs:
		return 0, err
	default:
		return w.n - int(w.done.Load()), nil
	}
}

// finish stops feeding and waits for the workers; it may be called again.
func (w *lateWork) finish() {
	w.finishedOnce.Do(func() {
		close(w.stop)
		<-w.fed
		close(w.ready)
		w.wg.Wait()
	})
}

package flinksim

import (
	"strings"
	"testing"
)

// A closed connection is forgotten by every cluster it reached, and a
// Service or JobManager pod named under no cluster's key reaches the
// cluster behind it until a later observation shows it gone: what the
// engine's indexes keep must be what a scan of every cluster found.
func TestEngineIndexes(t *testing.T) {
	e, _ := newTestEngine(t)
	other := ClusterKey{Namespace: key.Namespace, Name: "other"}
	behind := func(name string) Observation {
		o := simple(tms(1), nil).Observation()
		o.Services[0].Name = name
		return o
	}
	e.Observe(key, behind("demo-rest"))
	e.Observe(other, simple(tms(1), nil).Observation())
	svc := ClusterKey{Namespace: key.Namespace, Name: "demo-rest"}

	for _, k := range []ClusterKey{svc, other} {
		if _, _, err := e.dial(k, RESTPort, "conn-1"); err != nil {
			t.Fatalf("dial %s: %v", k, err)
		}
	}
	if _, _, err := e.dial(ClusterKey{Namespace: "elsewhere", Name: "demo-rest"}, RESTPort, "conn-2"); err == nil {
		t.Error("a Service of the same name in another namespace reached the cluster")
	}
	held := func() (n int) {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.clusters {
			if _, ok := c.conns["conn-1"]; ok {
				n++
			}
		}
		return n
	}
	if n := held(); n != 2 {
		t.Fatalf("conn-1 held by %d clusters, want 2", n)
	}
	e.ConnClosed("conn-1")
	if n := held(); n != 0 {
		t.Errorf("conn-1 still held by %d clusters after it closed", n)
	}

	// A pod address under a key that is no cluster's reaches the cluster
	// running a JobManager in that pod: of the two (both have a jm-1
	// here), the first by key.
	for range 5 {
		tgt, _, err := e.dialPod(ClusterKey{Namespace: key.Namespace, Name: "unknown"}, "jm-1", "jm-1")
		if err != nil || tgt.k != key {
			t.Fatalf("dial pod jm-1: %+v, %v, want %s", tgt, err, key)
		}
	}

	// Two clusters behind one Service name: the first by key, every time.
	e.Observe(other, behind("demo-rest"))
	for range 5 {
		tgt, _, err := e.dial(svc, RESTPort, "")
		if err != nil || tgt.k != svc {
			t.Fatalf("dial %s: %+v, %v", svc, tgt, err)
		}
		e.mu.Lock()
		owner := e.serviceOwner(svc)
		e.mu.Unlock()
		if owner == nil || owner.key != key {
			t.Fatalf("owner of %s: %v, want %s (the first by key)", svc, owner, key)
		}
	}

	// The Service is gone from both observations: nothing answers for it.
	e.Observe(key, simple(tms(1), nil).Observation())
	e.Observe(other, Observation{})
	if _, _, err := e.dial(svc, RESTPort, ""); err == nil || !strings.Contains(err.Error(), "no Service") {
		t.Errorf("dial %s after its Service went: %v, want no Service", svc, err)
	}
	if len(e.serviceClusters[svc]) != 0 {
		t.Errorf("index still holds %d clusters behind %s", len(e.serviceClusters[svc]), svc)
	}
	// other's JobManager is gone with its pod; key's answers for jm-1.
	if tgt, _, err := e.dialPod(ClusterKey{Namespace: key.Namespace, Name: "unknown"}, "jm-1", "jm-1"); err != nil || tgt.k != key {
		t.Errorf("dial pod jm-1 after other's went: %+v, %v", tgt, err)
	}
	if got := len(e.jobManagerPods[ClusterKey{Namespace: key.Namespace, Name: "jm-1"}]); got != 1 {
		t.Errorf("jm-1 indexed under %d clusters, want 1", got)
	}
}

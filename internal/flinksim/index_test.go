package flinksim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A closed connection is forgotten by every cluster it reached, and a
// Service or JobManager pod named under no cluster's key reaches the
// clusters behind it until a later observation shows them gone: what the
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

	// One client connection to the simulator's listener carries requests
	// to two Services: a connection to each.
	for _, k := range []ClusterKey{svc, other} {
		if _, _, err := e.dial(k, RESTPort, "conn-1"); err != nil {
			t.Fatalf("dial %s: %v", k, err)
		}
	}
	if _, _, err := e.dial(ClusterKey{Namespace: "elsewhere", Name: "demo-rest"}, RESTPort, "conn-2"); err == nil {
		t.Error("a Service of the same name in another namespace reached the cluster")
	}
	held := func(conn string) map[ClusterKey]bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		reached := map[ClusterKey]bool{}
		for _, r := range e.conns[conn] {
			reached[r.cluster] = true
		}
		return reached
	}
	if got := held("conn-1"); len(got) != 2 || !got[key] || !got[other] {
		t.Fatalf("conn-1 reached %v, want %s and %s", got, key, other)
	}
	e.ConnClosed("conn-1")
	if got := held("conn-1"); len(got) != 0 {
		t.Errorf("conn-1 still routed to %v after it closed", got)
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

	// Two clusters behind one Service name: kube-proxy knows no Flink
	// cluster and balances new connections over the JobManagers of both;
	// a connection stays on the JobManager it reached, and a request on it
	// is served by that JobManager's cluster.
	e.Observe(other, behind("demo-rest"))
	reached := map[ClusterKey]int{}
	for i := range 4 {
		conn := fmt.Sprintf("balanced-%d", i)
		tgt, _, err := e.dial(svc, RESTPort, conn)
		if err != nil {
			t.Fatalf("dial %s: %v", svc, err)
		}
		reached[tgt.cluster]++
		for range 3 {
			again, _, err := e.dial(svc, RESTPort, conn)
			if err != nil || again != tgt {
				t.Fatalf("%s again: %+v, %v, want %+v", conn, again, err, tgt)
			}
		}
		var served ClusterKey
		if err := e.request(tgt, "test", func(c *cluster, _ *process, _ time.Time) error {
			served = c.key
			return nil
		}); err != nil || served != tgt.cluster {
			t.Fatalf("request on %s served by %s (%v), want %s", conn, served, err, tgt.cluster)
		}
	}
	if reached[key] != 2 || reached[other] != 2 {
		t.Errorf("4 connections to %s reached %v, want 2 each of %s and %s", svc, reached, key, other)
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

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/sharding"
)

// benchShards is the sharded mode's shard count: two each.
const benchShards = 4

// shardResult is the sharded mode: two replicas, then one killed.
type shardResult struct {
	// owned is how many of the clusters already there (existing) are in
	// each replica's shards, from the leases; resynced its reconciles
	// since it took them (the acquisition's requeue, then the health
	// poller's first verdicts and the status writes' follow-ups).
	owned    map[string]int
	resynced map[string]float64
	existing int
	// created clusters under both replicas, and how long until all were
	// Available; per replica, the clusters it wrote for.
	created  int
	took     time.Duration
	wroteFor map[string]int
	// both counts the clusters written for by both replicas.
	both int
	// moved is the killed replica's clusters; takeoverLead is from the
	// kill to the survivor leading every shard, takeoverReconciled to its
	// having reconciled every moved cluster.
	moved                            int
	takeoverLead, takeoverReconciled time.Duration
	// writesAfterKill are the killed replica's writes after the kill and
	// the survivor's for the moved clusters.
	killedWritesAfter, survivorWritesMoved int
}

// shardedPhase runs two sharded replicas over the clusters there are
// (existing), creates c.shardedN session clusters under them, then kills
// one and times the survivor's takeover.
func shardedPhase(ctx context.Context, k8s client.Client, c config, watch *readiness, bin string, opArgs []string, audit string, existing int) (*shardResult, error) {
	res := &shardResult{owned: map[string]int{}, resynced: map[string]float64{}, wroteFor: map[string]int{}, existing: existing, created: c.shardedN}
	args := append(slices.Clone(opArgs), fmt.Sprintf("--shards=%d", benchShards), "--shard-replicas=2")
	// Both start at once: each takes its fair share, none all four.
	replicas := map[string]*operatorProc{}
	for _, name := range []string{"bench-a", "bench-b"} {
		p, err := startOperator(bin, false, []string{"POD_NAME=" + name}, args...)
		if err != nil {
			return nil, err
		}
		defer p.stop()
		replicas[name] = p
	}
	for _, p := range replicas {
		if err := p.waitMetrics(time.Minute); err != nil {
			return nil, err
		}
	}
	fmt.Println("Sharded: two replicas taking their shards and resyncing the clusters there are")
	reconciles := func(name string) float64 {
		m, err := scrape(replicas[name].metricsAddr)
		if err != nil {
			return -1
		}
		return m.sum("controller_runtime_reconcile_total", `controller="flinkcluster"`)
	}
	led := func(name string) float64 {
		m, err := scrape(replicas[name].metricsAddr)
		if err != nil {
			return -1
		}
		return m.sum("datapilot_shards_led")
	}
	if err := waitFor(ctx, 2*time.Minute, func() (int, error) {
		if led("bench-a")+led("bench-b") < benchShards {
			return existing + 1, nil
		}
		return max(0, existing-int(reconciles("bench-a")+reconciles("bench-b"))), nil
	}); err != nil {
		return nil, err
	}
	for name := range replicas {
		res.resynced[name] = reconciles(name)
	}
	holder, err := shardHolders(ctx, k8s)
	if err != nil {
		return nil, err
	}
	var there v1.FlinkClusterList
	if err := k8s.List(ctx, &there); err != nil {
		return nil, err
	}
	for _, fc := range there.Items {
		res.owned[holder[sharding.Of(client.ObjectKeyFromObject(&fc), benchShards)]]++
	}

	from := time.Now()
	fmt.Printf("Sharded: creating %d session clusters under both replicas\n", c.shardedN)
	p, err := operatorPhase(ctx, k8s, c, cpuMeter{}, watch, shardedNS, c.shardedN, false)
	if err != nil {
		return nil, err
	}
	res.took = p.took
	time.Sleep(5 * time.Second) // the last status writes land
	writers, err := writersByCluster(audit, shardedNS, from, time.Now())
	if err != nil {
		return nil, err
	}
	for _, ws := range writers {
		if len(ws) > 1 {
			res.both++
		}
		for w := range ws {
			res.wroteFor[w]++
		}
	}

	// Who leads what, from the leases; the victim is bench-a.
	if holder, err = shardHolders(ctx, k8s); err != nil {
		return nil, err
	}
	var all v1.FlinkClusterList
	if err := k8s.List(ctx, &all); err != nil {
		return nil, err
	}
	for _, fc := range all.Items {
		if holder[sharding.Of(client.ObjectKeyFromObject(&fc), benchShards)] == "bench-a" {
			res.moved++
		}
	}
	before := reconciles("bench-b")
	fmt.Printf("Sharded: killing bench-a (%d clusters)\n", res.moved)
	killed := time.Now()
	replicas["bench-a"].kill()
	if err := waitFor(ctx, 2*time.Minute, func() (int, error) {
		if res.takeoverLead == 0 && led("bench-b") == benchShards {
			res.takeoverLead = time.Since(killed)
		}
		done := reconciles("bench-b") - before
		if res.takeoverReconciled == 0 && done >= float64(res.moved) {
			res.takeoverReconciled = time.Since(killed)
		}
		if res.takeoverLead == 0 || res.takeoverReconciled == 0 {
			return max(1, res.moved-int(done)), nil
		}
		return 0, nil
	}); err != nil {
		return nil, fmt.Errorf("takeover: %w", err)
	}
	time.Sleep(2 * time.Second)
	after, err := writersByCluster(audit, "", killed, time.Now())
	if err != nil {
		return nil, err
	}
	for _, ws := range after {
		res.killedWritesAfter += ws["bench-a"]
	}
	for _, fc := range all.Items {
		if holder[sharding.Of(client.ObjectKeyFromObject(&fc), benchShards)] == "bench-a" {
			res.survivorWritesMoved += after[fc.Namespace+"/"+clusterOf(fc.Name)]["bench-b"]
		}
	}
	return res, nil
}

// shardHolders is each shard's holder (its POD_NAME), from the leases.
func shardHolders(ctx context.Context, k8s client.Client) (map[int]string, error) {
	holder := map[int]string{}
	for i := range benchShards {
		var l coordinationv1.Lease
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: sharding.LeaseName(i, benchShards)}, &l); err != nil {
			return nil, err
		}
		if l.Spec.HolderIdentity != nil {
			holder[i] = replicaName(*l.Spec.HolderIdentity)
		}
	}
	return holder, nil
}

// replicaName is the POD_NAME part of a replica's identity (name_uuid).
func replicaName(identity string) string {
	name, _, _ := strings.Cut(identity, "_")
	return name
}

// clusterOf is the cluster an object of the bench belongs to: every child
// and event is named after it ("fc-0001-jobmanager", "fc-0001.18b…").
func clusterOf(name string) string { return name[:min(len(name), len("fc-0000"))] }

// writersByCluster reads the sharded replicas' writes from the audit log:
// for each namespace/cluster (ns empty: any), the writes per replica,
// named in the user agent ("… replica/<POD_NAME>_<uuid>").
func writersByCluster(path, ns string, from, to time.Time) (map[string]map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, operatorAgent) || e.ObjectRef == nil ||
			e.ObjectRef.Namespace == "" || ns != "" && e.ObjectRef.Namespace != ns || e.ObjectRef.Resource == "leases" {
			continue
		}
		if at := e.StageTimestamp.Time; at.Before(from) || !at.Before(to) {
			continue
		}
		_, id, ok := strings.Cut(e.UserAgent, " replica/")
		if !ok {
			continue
		}
		k := e.ObjectRef.Namespace + "/" + clusterOf(e.ObjectRef.Name)
		if out[k] == nil {
			out[k] = map[string]int{}
		}
		out[k][replicaName(id)]++
	}
	return out, sc.Err()
}

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/sharding"
	"github.com/datapilot/datapilot/internal/testenv"
)

const shardTestShards = 4

// startReplica starts one sharded replica of the operator for ns and
// returns it once ready; the test's cleanup kills it.
func startReplica(t *testing.T, ns, name string) *testenv.Operator {
	t.Helper()
	log := filepath.Join(t.TempDir(), name+".log")
	op, err := testenv.StartOperator(testenv.OperatorStart{Bin: filepath.Join(root, "bin", "datapilot"), Log: log,
		// The identity in the leases and the user agent starts with POD_NAME.
		Env: []string{"POD_NAME=" + name},
		Args: func() ([]string, error) {
			return []string{"--kubeconfig", plat.KubeconfigPath(),
				"--leader-elect=true", "--leader-election-namespace=" + ns, "--watch-namespace=" + ns,
				fmt.Sprintf("--shards=%d", shardTestShards), "--shard-replicas=2", "--metrics-bind-address=0",
				"--flink-rest-override", sim.BaseURLTemplate(), "--flink-rest-pod-override", sim.PodURLTemplate(), "--reconcile-interval=1s",
				"--state-storage-uri=" + platform.StateStorageURI, "--jar-allowed-hosts=" + platform.JarHost}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		op.Kill()
		if t.Failed() {
			if raw, err := os.ReadFile(log); err == nil {
				lines := strings.Split(string(raw), "\n")
				t.Logf("--- last lines of %s ---\n%s", name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	})
	return op
}

// TestShardedReplicas runs two sharded replicas on their own (the shared
// operator stopped): each writes for the clusters of the shards it leads,
// about half, and no cluster gets writes from both; killing one moves its
// clusters to the other within 20 s (lease duration 12 s, then its next
// retry), judged from the API server's audit log.
func TestShardedReplicas(t *testing.T) {
	alone(t)
	op.stop()
	t.Cleanup(func() {
		if err := op.start(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	ns := newNamespace(t)
	const n = 16
	start := time.Now()
	a, b := startReplica(t, ns, "replica-a"), startReplica(t, ns, "replica-b")
	for i := range n {
		fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh-%02d", i), Namespace: ns}, Spec: v1.FlinkClusterSpec{
			Version: "1.17.1", JobManager: v1.JobManagerSpec{Replicas: 1}, TaskManager: v1.TaskManagerSpec{Replicas: 2, Slots: 2}}}
		if err := k8s.Create(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		waitCondition(t, ns, fmt.Sprintf("sh-%02d", i), v1.ConditionAvailable, metav1.ConditionTrue, 2*time.Minute)
	}

	// Who leads each shard, from the leases; two distinct holders, two
	// shards each (the fair share).
	holder := map[int]string{}
	byHolder := map[string]int{}
	for i := range shardTestShards {
		var l coordinationv1.Lease
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: sharding.LeaseName(i, shardTestShards)}, &l); err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			t.Fatalf("shard %d has no holder", i)
		}
		holder[i] = *l.Spec.HolderIdentity
		byHolder[holder[i]]++
	}
	if len(byHolder) != 2 {
		t.Fatalf("the shards are held by %v, want two replicas", byHolder)
	}
	for h, k := range byHolder {
		if k != 2 {
			t.Errorf("%s leads %d shards, want 2", h, k)
		}
	}
	owner := func(cluster string) string {
		return holder[sharding.Of(types.NamespacedName{Namespace: ns, Name: cluster}, shardTestShards)]
	}

	// Every cluster's writes came from the holder of its shard, and only
	// from it; each replica wrote for about half.
	converged := time.Now()
	writers := shardWriters(t, ns, start, converged)
	clustersOf := map[string][]string{}
	for i := range n {
		c := fmt.Sprintf("sh-%02d", i)
		w := writers[c]
		if len(w) != 1 || w[0].replica != owner(c) {
			t.Errorf("%s was written by %v, want its shard's holder %s alone", c, replicasOf(w), owner(c))
		}
		clustersOf[owner(c)] = append(clustersOf[owner(c)], c)
	}
	for h, cs := range clustersOf {
		if len(cs) < n/4 || len(cs) > 3*n/4 {
			t.Errorf("%s reconciles %d of %d clusters, want about half", h, len(cs), n)
		}
	}

	// Kill the holder of shard 0 without a chance to release its leases;
	// a spec change to each of its clusters must be applied by the other.
	victim := holder[0]
	proc := map[bool]*testenv.Operator{true: a, false: b}[strings.HasPrefix(victim, "replica-a_")]
	killed := time.Now()
	proc.Kill()
	for _, c := range clustersOf[victim] {
		patchSpec(t, ns, c, func(fc *v1.FlinkCluster) { fc.Spec.TaskManager.Replicas = 3 })
	}
	for _, c := range clustersOf[victim] {
		eventually(t, time.Minute, c+" TaskManagers scaled by the survivor", func() error {
			var sts appsv1.StatefulSet
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: resources.TaskManagerName(getFC(t, ns, c))}, &sts); err != nil {
				return err
			}
			if *sts.Spec.Replicas != 3 {
				return fmt.Errorf("%d replicas", *sts.Spec.Replicas)
			}
			return nil
		})
	}
	after := shardWriters(t, ns, killed, time.Now())
	var survivor string
	for h := range byHolder {
		if h != victim {
			survivor = h
		}
	}
	for _, c := range clustersOf[victim] {
		w := after[c]
		if len(w) == 0 {
			t.Errorf("%s: no write after the kill", c)
			continue
		}
		for _, x := range w {
			if x.replica != survivor {
				t.Errorf("%s: write by %s after the kill, want only the survivor %s", c, x.replica, survivor)
			}
		}
		if took := w[0].first.Sub(killed); took > 20*time.Second {
			t.Errorf("%s: the survivor's first write came %s after the kill, want within 20s", c, took.Round(time.Millisecond))
		} else {
			t.Logf("%s moved: the survivor's first write %s after the kill", c, took.Round(time.Millisecond))
		}
	}
	// The survivor's own clusters never saw the victim's writes.
	for _, c := range clustersOf[survivor] {
		for _, x := range after[c] {
			if x.replica != survivor {
				t.Errorf("%s: write by %s after the kill", c, x.replica)
			}
		}
	}
}

// write is one replica's writes for one cluster: when the first was.
type write struct {
	replica string
	first   time.Time
}

func replicasOf(ws []write) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.replica)
	}
	return out
}

// shardWriters reads the audit log: for each cluster in ns (by the name's
// "sh-NN" prefix, which every child and event carries), the replicas that
// wrote for it between from and to, in order of their first write. The
// replica is the identity in the operator's user agent ("replica/<id>").
func shardWriters(t *testing.T, ns string, from, to time.Time) map[string][]write {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type event struct {
		UserAgent string `json:"userAgent"`
		ObjectRef *struct {
			Resource  string `json:"resource"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"objectRef"`
		StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
	}
	out := map[string][]write{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, "datapilot/") || e.ObjectRef == nil ||
			e.ObjectRef.Namespace != ns || e.ObjectRef.Resource == "leases" || len(e.ObjectRef.Name) < 5 {
			continue
		}
		if at := e.StageTimestamp.Time; at.Before(from) || !at.Before(to) {
			continue
		}
		_, id, ok := strings.Cut(e.UserAgent, " replica/")
		if !ok {
			t.Fatalf("a sharded replica's write without its identity in the user agent %q", e.UserAgent)
		}
		c := e.ObjectRef.Name[:5]
		seen := false
		for _, w := range out[c] {
			seen = seen || w.replica == id
		}
		if !seen {
			out[c] = append(out[c], write{replica: id, first: e.StageTimestamp.Time})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

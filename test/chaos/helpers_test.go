package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/resources"
	"github.com/datapilot/datapilot/internal/testwait"
)

var nsSeq int

func newNamespace(t *testing.T) string {
	t.Helper()
	nsSeq++
	name := fmt.Sprintf("chaos-%s-%d", strings.ToLower(strings.TrimPrefix(t.Name(), "Test")), nsSeq)
	if len(name) > 60 {
		name = strings.Trim(name[:60], "-")
	}
	eventually(t, time.Minute, "create namespace", func() error {
		err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	t.Cleanup(func() {
		if t.Failed() {
			explain(t, name)
		}
	})
	return name
}

// explain logs, for a failed test, where each workload of ns stands as
// the API server has it, so a stall can be placed: the scheduler (pods
// unbound), kwok (pods bound, not Ready), kube-controller-manager (pods
// Ready, workload status behind) or the operator (workload ready, status
// behind).
func explain(t *testing.T, ns string) {
	ctx := context.Background()
	var deps appsv1.DeploymentList
	var sets appsv1.StatefulSetList
	var pods corev1.PodList
	if k8s.List(ctx, &deps, client.InNamespace(ns)) != nil || k8s.List(ctx, &sets, client.InNamespace(ns)) != nil ||
		k8s.List(ctx, &pods, client.InNamespace(ns)) != nil {
		return
	}
	for _, d := range deps.Items {
		t.Logf("deployment %s: generation %d observed %d, replicas %d updated %d ready %d", d.Name, d.Generation,
			d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas)
	}
	for _, s := range sets.Items {
		t.Logf("statefulset %s: generation %d observed %d, replicas %d updated %d ready %d, revisions %s/%s", s.Name, s.Generation,
			s.Status.ObservedGeneration, s.Status.Replicas, s.Status.UpdatedReplicas, s.Status.ReadyReplicas, s.Status.CurrentRevision, s.Status.UpdateRevision)
	}
	for _, p := range pods.Items {
		ready := "not ready"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = "ready"
			}
		}
		t.Logf("pod %s on %q: %s, %s, created %s, deleting %v", p.Name, p.Spec.NodeName, p.Status.Phase, ready,
			p.CreationTimestamp.Format(time.TimeOnly), p.DeletionTimestamp != nil)
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	testwait.Until(t, timeout, func() error {
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

func name(i int) string { return fmt.Sprintf("fc-%02d", i) }

func sessionCluster(ns string, i int) *v1.FlinkCluster {
	fc := &v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: ns}}
	fc.Spec = v1.FlinkClusterSpec{
		Version:       "1.17.2",
		JobManager:    v1.JobManagerSpec{Replicas: 1},
		TaskManager:   v1.TaskManagerSpec{Replicas: 2, Slots: 2},
		Checkpointing: &v1.CheckpointingSpec{Interval: "1s", Retention: 3},
	}
	return fc
}

func jobCluster(ns string, i int) *v1.FlinkCluster {
	fc := sessionCluster(ns, i)
	fc.Spec.Job = &v1.JobSpec{JarURI: jarURL, EntryClass: "org.example.Chaos", Parallelism: 2,
		State: v1.JobStateRunning, UpgradeMode: v1.UpgradeSavepoint, SavepointRetention: 5}
	fc.Spec.UpgradePolicy = &v1.UpgradePolicy{StableCheckpoints: 2, StabilityTimeout: "60s", SavepointTimeout: "30s", AutoRollback: ptr.To(true)}
	return fc
}

// createAll creates the clusters from parallel clients, as a burst from
// CI would; each create is retried while the control plane is down (an
// AlreadyExists after a lost response counts as created). onHalf runs once
// half of them exist.
func createAll(t *testing.T, objs []*v1.FlinkCluster, onHalf func()) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	half := make(chan struct{})
	errs := make(chan error, len(objs))
	for _, fc := range objs {
		wg.Go(func() {
			deadline := time.Now().Add(2 * time.Minute)
			for {
				err := k8s.Create(context.Background(), fc.DeepCopy())
				if err == nil || apierrors.IsAlreadyExists(err) {
					break
				}
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("create %s: %w", fc.Name, err)
					return
				}
				time.Sleep(200 * time.Millisecond) // retry backoff while the control plane is down
			}
			mu.Lock()
			created++
			if created == (len(objs)+1)/2 {
				close(half)
			}
			mu.Unlock()
		})
		if fc == objs[len(objs)/2] && onHalf != nil {
			<-half
			onHalf()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func burst(ns string, job bool) []*v1.FlinkCluster {
	var out []*v1.FlinkCluster
	for i := range *clusters {
		if job {
			out = append(out, jobCluster(ns, i))
		} else {
			out = append(out, sessionCluster(ns, i))
		}
	}
	return out
}

// waitConverged waits until every cluster of ns says Available at its
// generation (and, with a job, runs it, has recorded a stable spec and has
// its last child, the TaskManagers' budget, which the operator creates for
// a job cluster once a status said a TaskManager is ready; a session
// cluster running nothing has none).
func waitConverged(t *testing.T, ns string, n int, job bool, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "every cluster converged", func() error {
		var list v1.FlinkClusterList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d clusters, want %d", len(list.Items), n)
		}
		var budgets policyv1.PodDisruptionBudgetList
		if err := k8s.List(context.Background(), &budgets, client.InNamespace(ns)); err != nil {
			return err
		}
		if job && len(budgets.Items) < n {
			return fmt.Errorf("%d budgets, want %d", len(budgets.Items), n)
		}
		for _, fc := range list.Items {
			c := meta.FindStatusCondition(fc.Status.Conditions, v1.ConditionAvailable)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != fc.Generation || fc.Status.ObservedGeneration != fc.Generation {
				return fmt.Errorf("%s: Available %+v at generation %d", fc.Name, c, fc.Generation)
			}
			if job && (fc.Status.Job == nil || fc.Status.Job.State != string(flink.JobRunning) || fc.Status.LastStableSpec == nil || fc.Status.Upgrade != nil) {
				return fmt.Errorf("%s: job %+v, upgrade %+v, stable spec %v", fc.Name, fc.Status.Job, fc.Status.Upgrade, fc.Status.LastStableSpec != nil)
			}
		}
		return nil
	})
}

// checkNoDuplicates asserts that every cluster of ns has exactly its
// children, each once, owned by it, its status complete, and (for job
// clusters) exactly one job running in Flink.
func checkNoDuplicates(t *testing.T, ns string, job bool) {
	t.Helper()
	ctx := context.Background()
	var list v1.FlinkClusterList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	owned := func(objs []client.Object) map[string]int {
		out := map[string]int{}
		for _, o := range objs {
			if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "FlinkCluster" {
				out[string(ref.UID)]++
			}
		}
		return out
	}
	// A session cluster running nothing has no budget.
	budgets := 0
	if job {
		budgets = 1
	}
	lists := map[string]struct {
		list client.ObjectList
		want int
	}{
		// The JobManager's and the TaskManagers'; no Deployment.
		"Deployment": {&appsv1.DeploymentList{}, 0}, "StatefulSet": {&appsv1.StatefulSetList{}, 2},
		"Service": {&corev1.ServiceList{}, 1}, "ConfigMap": {&corev1.ConfigMapList{}, 1},
		"PodDisruptionBudget": {&policyv1.PodDisruptionBudgetList{}, budgets},
	}
	for kind, l := range lists {
		if err := k8s.List(ctx, l.list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(l.list)
		if err != nil {
			t.Fatal(err)
		}
		var objs []client.Object
		for _, it := range items {
			objs = append(objs, it.(client.Object))
		}
		counts := owned(objs)
		for _, fc := range list.Items {
			if counts[string(fc.UID)] != l.want {
				t.Errorf("%s: %d %ss, want %d", fc.Name, counts[string(fc.UID)], kind, l.want)
			}
		}
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	perCluster := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			perCluster[p.Labels[resources.LabelInstance]]++
		}
	}
	for _, fc := range list.Items {
		if perCluster[fc.Name] != 3 {
			t.Errorf("%s: %d pods, want 3", fc.Name, perCluster[fc.Name])
		}
		if fc.Status.JobManager.Ready != "1/1" || fc.Status.TaskManager.Ready != "2/2" || fc.Status.Selector == "" {
			t.Errorf("%s: status JobManager %q, TaskManager %q, selector %q", fc.Name, fc.Status.JobManager.Ready, fc.Status.TaskManager.Ready, fc.Status.Selector)
		}
		if !job {
			continue
		}
		live := liveJobs(t, simKey(ns, fc.Name))
		if len(live) != 1 || live[0].ID != fc.Status.Job.ID {
			t.Errorf("%s: jobs live in Flink %+v, want only %s", fc.Name, live, fc.Status.Job.ID)
		}
	}
}

func liveJobs(t *testing.T, key flinksim.ClusterKey) []flinksim.JobView {
	t.Helper()
	view, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	var live []flinksim.JobView
	for _, j := range view.Jobs {
		if j.Present && !j.State.Terminal() {
			live = append(live, j)
		}
	}
	return live
}

func simJob(t *testing.T, key flinksim.ClusterKey, id string) flinksim.JobView {
	t.Helper()
	view, err := sim.Engine.View(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range view.Jobs {
		if j.ID == id {
			return j
		}
	}
	t.Fatalf("the simulator has no job %s in %s", id, key)
	return flinksim.JobView{}
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// operatorWrites counts the operator's audited writes in ns since from, by
// resource.
func operatorWrites(t *testing.T, ns string, from, to time.Time) map[string]int {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type event struct {
		Verb      string `json:"verb"`
		UserAgent string `json:"userAgent"`
		ObjectRef *struct {
			Resource    string `json:"resource"`
			Subresource string `json:"subresource"`
			Namespace   string `json:"namespace"`
		} `json:"objectRef"`
		StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
	}
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, "datapilot/") || e.ObjectRef == nil || e.ObjectRef.Namespace != ns ||
			!writeVerbs[e.Verb] {
			continue
		}
		if at := e.StageTimestamp.Time; at.Before(from) || !at.Before(to) {
			continue
		}
		k := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			k += "/" + e.ObjectRef.Subresource
		}
		out[k]++
	}
	return out
}

// metric sums the operator's samples of name whose labels contain filter.
func metric(t *testing.T, name, filter string) float64 {
	t.Helper()
	resp, err := metricsClient.Get("https://" + op.metrics() + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1
	}
	raw, _ := io.ReadAll(resp.Body)
	total := 0.0
	for _, l := range strings.Split(string(raw), "\n") {
		series, value, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		metric, labels, _ := strings.Cut(series, "{")
		if metric != name || !strings.Contains(labels, filter) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			total += v
		}
	}
	return total
}

type auditEvent struct {
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	ObjectRef  *struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
}

// operatorReads returns the operator's audited lists and watches received
// since from, in the order received, one per request.
func operatorReads(t *testing.T, from time.Time) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, "datapilot/") || e.ObjectRef == nil ||
			(e.Verb != "watch" && e.Verb != "list") || e.RequestReceivedTimestamp.Before(&metav1.MicroTime{Time: from}) {
			continue
		}
		// A watch is audited when its response starts and when it ends;
		// the last stage has the final status.
		if i, ok := seen[e.AuditID]; ok {
			out[i] = e
			continue
		}
		seen[e.AuditID] = len(out)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestReceivedTimestamp.Before(&out[j].RequestReceivedTimestamp) })
	return out
}

// checkWatchesExpired asserts, from the audit log, that the operator's
// informer of each resource resumed its watch after from at a resource
// version below compacted, that the API server accepted it (HTTP 200; in
// this Kubernetes version a too-old watch is answered with one ERROR event
// of status 410, not an HTTP 410), and that the informer then relisted.
// Replaying that very request shows what the server answered it.
func checkWatchesExpired(t *testing.T, from time.Time, compacted int64, resources ...string) {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range resources {
		eventually(t, time.Minute, res+": an expired watch and a relist", func() error {
			var expired *auditEvent
			for _, e := range operatorReads(t, from) {
				if e.ObjectRef.Resource != res {
					continue
				}
				u, err := url.Parse(e.RequestURI)
				if err != nil {
					return err
				}
				q := u.Query()
				relist := e.Verb == "list" || q.Get("sendInitialEvents") == "true"
				if expired != nil && relist && e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusOK {
					t.Logf("%s: the operator watched from %s, below the compaction at %d, and relisted: %s", res, q.Get("resourceVersion"), compacted, e.RequestURI)
					return replayExpired(t, httpClient, expired.RequestURI)
				}
				rv, err := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
				if expired == nil && e.Verb == "watch" && !relist && err == nil && rv > 0 && rv < compacted &&
					e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusOK {
					expired = &e
				}
			}
			if expired == nil {
				return fmt.Errorf("no watch of the operator accepted at a resource version below %d since the restart", compacted)
			}
			return fmt.Errorf("the operator watched from a compacted revision (%s) but has not relisted", expired.RequestURI)
		})
	}
}

// replayExpired sends uri as the test's own watch and checks that the API
// server accepts it and sends one ERROR event of status 410 Expired.
func replayExpired(t *testing.T, c *http.Client, uri string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, restConfig.Host+uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ev struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil {
		return fmt.Errorf("replaying %s: HTTP %d, %w", uri, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK || ev.Type != "ERROR" || ev.Object.Code != http.StatusGone || ev.Object.Reason != metav1.StatusReasonExpired {
		t.Errorf("replaying the operator's watch %s: HTTP %d, first event %s %+v; want HTTP 200 and ERROR 410 Expired", uri, resp.StatusCode, ev.Type, ev.Object)
		return nil
	}
	t.Logf("replayed: HTTP %d, event %s %d %s %q", resp.StatusCode, ev.Type, ev.Object.Code, ev.Object.Reason, ev.Object.Message)
	return nil
}

// simKey is the simulator's key of a FlinkCluster: the JobManager Service
// in front of its JobManagers, through which it is reached.
func simKey(ns, name string) flinksim.ClusterKey {
	return flinksim.ClusterKey{Namespace: ns, Name: resources.JobManagerName(&v1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/operator"
	podready "github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/resources"
)

// readiness watches pods and FlinkClusters and records, as this process
// observes them, when each pod first turned Ready and when each cluster
// first said Available=True. Both go through the same watch delay, so their
// difference is the operator's lag.
type readiness struct {
	mu        sync.Mutex
	podReady  map[string]time.Time // namespace/pod
	podOf     map[string]string    // namespace/pod → namespace/cluster
	available map[string]time.Time // namespace/cluster
	// stable is when a job cluster was first Available with its job
	// RUNNING and its spec recorded stable: its converged state.
	stable map[string]time.Time // namespace/cluster
	// workloads is when each of a cluster's two workloads (the JobManager
	// StatefulSet, or Deployment in one baseline shape, and the TaskManager
	// StatefulSet) first reported ready in its status, which
	// kube-controller-manager writes after the pods turn Ready.
	workloads map[string]map[string]time.Time // namespace/cluster → kind/name → time
}

func watchReadiness(ctx context.Context, cfg *rest.Config, namespaces ...string) (*readiness, error) {
	r := &readiness{podReady: map[string]time.Time{}, podOf: map[string]string{}, available: map[string]time.Time{},
		stable: map[string]time.Time{}, workloads: map[string]map[string]time.Time{}}
	nss := map[string]cache.Config{}
	for _, ns := range namespaces {
		nss[ns] = cache.Config{}
	}
	c, err := cache.New(cfg, cache.Options{Scheme: operator.Scheme(), DefaultNamespaces: nss, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, err
	}
	pods, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	onPod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !podready.PodReady(p) {
			return
		}
		key := p.Namespace + "/" + p.Name
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, seen := r.podReady[key]; !seen {
			r.podReady[key] = time.Now()
			r.podOf[key] = p.Namespace + "/" + instanceOf(p.Labels)
		}
	}
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onPod, UpdateFunc: func(_, o any) { onPod(o) }}); err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		onWorkload := func(o any) {
			var kind, cluster string
			switch w := o.(type) {
			case *appsv1.Deployment:
				if w.Status.ReadyReplicas < 1 {
					return
				}
				kind, cluster = "Deployment/"+w.Name, w.Namespace+"/"+instanceOf(w.Labels)
			case *appsv1.StatefulSet:
				if w.Spec.Replicas == nil || w.Status.ReadyReplicas < *w.Spec.Replicas {
					return
				}
				kind, cluster = "StatefulSet/"+w.Name, w.Namespace+"/"+instanceOf(w.Labels)
			default:
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.workloads[cluster] == nil {
				r.workloads[cluster] = map[string]time.Time{}
			}
			if _, seen := r.workloads[cluster][kind]; !seen {
				r.workloads[cluster][kind] = time.Now()
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onWorkload, UpdateFunc: func(_, o any) { onWorkload(o) }}); err != nil {
			return nil, err
		}
	}
	fcs, err := c.GetInformer(ctx, &v1.FlinkCluster{})
	if err != nil {
		return nil, err
	}
	onFC := func(obj any) {
		fc, ok := obj.(*v1.FlinkCluster)
		if !ok || !meta.IsStatusConditionTrue(fc.Status.Conditions, v1.ConditionAvailable) {
			return
		}
		key := fc.Namespace + "/" + fc.Name
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, seen := r.available[key]; !seen {
			r.available[key] = time.Now()
		}
		if fc.Status.Job != nil && fc.Status.Job.State == "RUNNING" && fc.Status.LastStableSpec != nil {
			if _, seen := r.stable[key]; !seen {
				r.stable[key] = time.Now()
			}
		}
	}
	if _, err := fcs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onFC, UpdateFunc: func(_, o any) { onFC(o) }}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("readiness watch did not sync")
	}
	return r, nil
}

// instanceOf is the cluster a pod or workload belongs to: Datapilot's
// instance label, or the Spotify operator's "cluster" label (peer.go).
func instanceOf(labels map[string]string) string {
	if name := labels[resources.LabelInstance]; name != "" {
		return name
	}
	return labels["cluster"]
}

// lags are, for each cluster of ns with pods pods Ready and Available:
// total, the time from its last pod Ready to Available; controllers, from
// the last pod Ready to both workloads reporting ready (the workload
// controllers' share, which the baseline waits for too); operator, from
// then to Available. incomplete counts clusters without a full record.
func (r *readiness) lags(ns string, pods int) (total, controllers, operator []time.Duration, incomplete int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := map[string]time.Time{}
	count := map[string]int{}
	for pod, at := range r.podReady {
		cl := r.podOf[pod]
		if !strings.HasPrefix(cl, ns+"/") {
			continue
		}
		count[cl]++
		if at.After(last[cl]) {
			last[cl] = at
		}
	}
	for cl, avail := range r.available {
		if !strings.HasPrefix(cl, ns+"/") {
			continue
		}
		w := r.workloads[cl]
		if count[cl] < pods || len(w) < 2 {
			incomplete++
			continue
		}
		var ready time.Time
		for _, at := range w {
			if at.After(ready) {
				ready = at
			}
		}
		total = append(total, avail.Sub(last[cl]))
		controllers = append(controllers, ready.Sub(last[cl]))
		operator = append(operator, avail.Sub(ready))
	}
	for _, s := range [][]time.Duration{total, controllers, operator} {
		slices.Sort(s)
	}
	return total, controllers, operator, incomplete
}

// quantile is the nearest-rank quantile of sorted ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// promText is one scrape of a Prometheus text endpoint.
type promText []string

// metricsClient scrapes with a token the operator's filter allows.
var metricsClient *http.Client

func scrape(addr string) (promText, error) {
	resp, err := metricsClient.Get("https://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var lines promText
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// sum adds the samples of metric name whose labels contain every filter
// (such as `controller="flinkcluster"`).
func (p promText) sum(name string, filters ...string) float64 {
	total := 0.0
	for _, l := range p {
		// A label value may hold spaces (the Flink REST endpoint, "GET
		// /jobs/overview"): the value follows the closing brace.
		series, value, ok := strings.Cut(l, " ")
		if i := strings.LastIndex(l, "}"); i >= 0 {
			series, value, ok = l[:i+1], l[i+1:], true
		}
		if !ok {
			continue
		}
		metric, labels, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		match := true
		for _, f := range filters {
			if !strings.Contains(labels, f) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

// mean is a histogram's mean: _sum over _count.
func (p promText) mean(name string, filters ...string) time.Duration {
	n := p.sum(name+"_count", filters...)
	if n == 0 {
		return 0
	}
	return time.Duration(p.sum(name+"_sum", filters...) / n * float64(time.Second))
}

type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// apiLags are, for each cluster of ns, the time from the last status write
// of its pods by the node agent (kwok: the write that made the last of them
// Ready) to the first FlinkCluster status write by agent (an operator's
// user agent) after it, both as the API server logged them. That is the operator's share of the lag
// (its watch, queue, reconcile and write), without the bench's own two
// watches, which the lag from the bench's watch includes.
func apiLags(path, agent, ns string, to time.Time) []time.Duration {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	lastPod := map[string]time.Time{}
	statusWrites := map[string][]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ObjectRef == nil || e.ObjectRef.Namespace != ns || !e.StageTimestamp.Before(&metav1.MicroTime{Time: to}) {
			continue
		}
		at, o := e.StageTimestamp.Time, e.ObjectRef
		switch {
		case o.Resource == "pods" && o.Subresource == "status" && strings.HasPrefix(e.UserAgent, "kwok/"):
			cluster := o.Name
			for _, c := range []string{"-jobmanager-", "-taskmanager-"} {
				if i := strings.LastIndex(o.Name, c); i > 0 {
					cluster = o.Name[:i]
				}
			}
			if at.After(lastPod[cluster]) {
				lastPod[cluster] = at
			}
		case o.Resource == "flinkclusters" && o.Subresource == "status" && strings.HasPrefix(e.UserAgent, agent):
			statusWrites[o.Name] = append(statusWrites[o.Name], at)
		}
	}
	var out []time.Duration
	for cluster, ready := range lastPod {
		first := time.Time{}
		for _, at := range statusWrites[cluster] {
			if !at.Before(ready) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if !first.IsZero() {
			out = append(out, first.Sub(ready))
		}
	}
	slices.Sort(out)
	return out
}

// notFound marks, in countWrites' byKind, writes the API server answered
// 404: into a namespace already deleted, say.
const notFound = " (404)"

// countWrites counts audited writes by user agent prefix, namespace (empty:
// any) and time window (zero: open), optionally by verb and resource.
func countWrites(path, agentPrefix, namespace string, from, to time.Time, byKind map[string]int) int {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, agentPrefix) {
			continue
		}
		if namespace != "" && (e.ObjectRef == nil || e.ObjectRef.Namespace != namespace) {
			continue
		}
		at := e.StageTimestamp.Time
		if (!from.IsZero() && at.Before(from)) || (!to.IsZero() && !at.Before(to)) {
			continue
		}
		n++
		if byKind != nil && e.ObjectRef != nil {
			k := e.Verb + " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				k += "/" + e.ObjectRef.Subresource
			}
			if e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusNotFound {
				k += notFound
			}
			byKind[k]++
		}
	}
	return n
}

// The phases end on what the bench's watch has seen, not on LISTs: a LIST
// of a thousand FlinkClusters (JSON) or of their workloads every 250 ms
// loaded the API server whose time is measured.

// converged counts the clusters of ns the watch has seen Available (job
// clusters: with the job running and the spec recorded stable, the
// lifecycle's steady state).
func (r *readiness) converged(ns string, job bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.available
	if job {
		seen = r.stable
	}
	return countIn(seen, ns)
}

// podsReady counts the clusters of ns of which the watch has seen pods pods
// Ready: the baseline's end, the first moment anything could say the
// cluster is ready. (Until 2026-12-05 the baseline ended when both
// workloads' status said so, kube-controller-manager's write after the
// pods; since the operator counts the pods itself, that would have given
// it the controllers' lag for free.)
func (r *readiness) podsReady(ns string, pods int) int { return len(r.readyClusters(ns, pods)) }

// readyClusters names the clusters of ns of which the watch has seen pods
// pods Ready.
func (r *readiness) readyClusters(ns string, pods int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := map[string]int{}
	for pod := range r.podReady {
		if cl := r.podOf[pod]; strings.HasPrefix(cl, ns+"/") {
			count[cl]++
		}
	}
	var out []string
	for cl, c := range count {
		if c >= pods {
			out = append(out, strings.TrimPrefix(cl, ns+"/"))
		}
	}
	return out
}

func countIn[V any](m map[string]V, ns string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, ns+"/") {
			n++
		}
	}
	return n
}

// opDelta is what the operator's own metrics counted over one phase,
// between a scrape before it and one after: the reconciles and Flink REST
// requests per cluster, and the phase's mean reconcile time and queue
// wait (the run's means, in the table's later rows, mix every phase,
// the idle window and other rounds). ok is false when a scrape failed or
// the operator restarted in between (its counters began again).
type opDelta struct {
	ok                           bool
	reconciles, flinkRequests    float64
	reconcileMean, queueWaitMean time.Duration
}

func deltaOf(before, after promText, clusters int) opDelta {
	diff := func(name string, filters ...string) float64 {
		return after.sum(name, filters...) - before.sum(name, filters...)
	}
	reconciles := diff("controller_runtime_reconcile_total", `controller="flinkcluster"`)
	requests := diff("datapilot_flink_rest_requests_total")
	if before == nil || after == nil || clusters == 0 || reconciles < 0 || requests < 0 {
		return opDelta{}
	}
	mean := func(name, filter string) time.Duration {
		n := diff(name+"_count", filter)
		if n <= 0 {
			return 0
		}
		return time.Duration(diff(name+"_sum", filter) / n * float64(time.Second))
	}
	return opDelta{ok: true, reconciles: reconciles / float64(clusters), flinkRequests: requests / float64(clusters),
		reconcileMean: mean("controller_runtime_reconcile_time_seconds", `controller="flinkcluster"`),
		queueWaitMean: mean("workqueue_queue_duration_seconds", `name="flinkcluster"`)}
}

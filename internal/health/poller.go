package health

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/readiness"
	"github.com/datapilot/datapilot/internal/teardown"
	"github.com/datapilot/datapilot/internal/workload"
)

// What health needs; the reconciler's markers grant the same.
// +kubebuilder:rbac:groups=data.example.com,resources=flinkclusters,verbs=list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Namespaces (get) are granted where internal/teardown reads them.

// Defaults of a Poller.
const (
	DefaultInterval     = 30 * time.Second
	DefaultWorkers      = 8
	DefaultProbeTimeout = 5 * time.Second
	// EventAction is the action of the Warning Events of failed probes.
	EventAction = "HealthCheck"
)

// Metrics are the probe counters.
type Metrics struct {
	// Probes counts probes that reached a verdict (passed or failed), by level.
	Probes *prometheus.CounterVec
	// Failures counts failed probes, by level: exactly the probes that
	// record a Warning Event.
	Failures *prometheus.CounterVec
}

// NewMetrics creates the counters and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_health_probes_total",
			Help: "Health probes of FlinkClusters that passed or failed, by level (JobManager, Rest, Jobs).",
		}, []string{"level"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_health_probe_failures_total",
			Help: "Failed health probes of FlinkClusters, by level (JobManager, Rest, Jobs).",
		}, []string{"level"}),
	}
	for _, l := range Levels {
		m.Probes.WithLabelValues(string(l))
		m.Failures.WithLabelValues(string(l))
	}
	if reg != nil {
		reg.MustRegister(m.Probes, m.Failures)
	}
	return m
}

// Poller probes every FlinkCluster each Interval, keeps the Verdicts in
// Tracker, records a Warning Event per failed probe and sends the clusters
// whose Verdict changed on Notify. It is a manager.Runnable that runs on the
// leader only.
type Poller struct {
	// Reader is the manager's cache: FlinkClusters and the JobManager
	// Deployments are read from it, never from the API server.
	Reader client.Reader
	// Pods, when set, is the cache the clusters' pods are read from, so a
	// JobManager pod counts as ready as soon as it is, as the reconciler
	// counts it; nil counts the Deployment's status alone.
	Pods *readiness.Cache
	// Resolver locates each cluster's REST API.
	Resolver flink.Resolver
	// HTTPClient sends the REST requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Interval between rounds (RECONCILE_INTERVAL); DefaultInterval when zero.
	Interval time.Duration
	// Pace, when set, gives the interval of each round instead: the
	// adaptive interval (internal/pacing) that slows polling while
	// reconciles are slow.
	Pace interface{ Interval() time.Duration }
	// Tracker receives the Verdicts; required.
	Tracker *Tracker
	// Recorder records the Warning Events; nil records none.
	Recorder recorder.EventRecorder
	// Notify receives the FlinkCluster whose Verdict changed. Sends never
	// block: give it a buffer (a few hundred). A send that finds the
	// channel full is retried on the cluster's next round, and the
	// reconciler reads the latest Verdict from the Tracker anyway, so no
	// change is lost, only delayed. Nil sends nothing.
	Notify chan<- event.GenericEvent
	// Metrics counts probes; nil counts nothing.
	Metrics *Metrics
	// Workers bounds the clusters probed at once; DefaultWorkers when zero.
	Workers int
	// ProbeTimeout bounds each REST request; DefaultProbeTimeout when zero.
	ProbeTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Teardown, when set, says whether a cluster's namespace is being
	// deleted: a cluster there whose probes fail is forgotten, not
	// reported.
	Teardown *teardown.Checker
	// Owns, when set, is the replica's share of the clusters (the shards
	// it leads, internal/sharding): the poller then runs on every replica
	// and probes only those.
	Owns func(types.NamespacedName) bool
}

var (
	_ manager.Runnable               = (*Poller)(nil)
	_ manager.LeaderElectionRunnable = (*Poller)(nil)
)

// NeedLeaderElection: only the leader probes and records Events, unless
// the replicas share the clusters (Owns).
func (p *Poller) NeedLeaderElection() bool { return p.Owns == nil }

func (p *Poller) interval() time.Duration {
	if p.Pace != nil {
		return p.Pace.Interval()
	}
	if p.Interval > 0 {
		return p.Interval
	}
	return DefaultInterval
}

func (p *Poller) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Start runs a round at once and then one each Interval, until ctx is done.
// Rounds never overlap: a round that outlasts the interval delays the next.
func (p *Poller) Start(ctx context.Context) error {
	if p.Reader == nil || p.Tracker == nil {
		return errors.New("health: Poller needs a Reader and a Tracker")
	}
	log := logf.FromContext(ctx).WithName("health")
	ctx = logf.IntoContext(ctx, log)
	for {
		// The interval is read per round: it may change (Pace).
		next := time.Now().Add(p.interval())
		p.round(ctx)
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// round probes every cluster once. The clusters' start times are spread
// over the first half of the interval, each at a random point of its own
// slot, so a thousand clusters are not probed in the same millisecond; at
// most Workers probe at once.
func (p *Poller) round(ctx context.Context) {
	log := logf.FromContext(ctx)
	// The cache's own objects, not copies: the round holds every cluster
	// for half the interval, and deep copies of 1200 FlinkClusters were
	// 3 of the operator's 37 MB live heap. A probe only reads its cluster.
	var list v1.FlinkClusterList
	if err := p.Reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing FlinkClusters for the health round")
		return
	}
	if p.Owns != nil {
		list.Items = slices.DeleteFunc(list.Items, func(fc v1.FlinkCluster) bool { return !p.Owns(client.ObjectKeyFromObject(&fc)) })
	}
	live := make(map[types.NamespacedName]bool, len(list.Items))
	for i := range list.Items {
		live[client.ObjectKeyFromObject(&list.Items[i])] = true
	}
	p.Tracker.retain(live)

	workers := p.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	work := make(chan *v1.FlinkCluster)
	var wg sync.WaitGroup
	for range min(workers, max(1, len(list.Items))) {
		wg.Go(func() {
			for fc := range work {
				if cur := p.current(ctx, fc); cur != nil {
					p.ProbeOnce(ctx, cur)
				}
			}
		})
	}
	defer func() {
		close(work)
		wg.Wait()
	}()

	n := len(list.Items)
	if n == 0 {
		return
	}
	slot := p.interval() / 2 / time.Duration(n)
	start := time.Now()
	for i := range list.Items {
		fc := &list.Items[i]
		at := start.Add(time.Duration(i) * slot)
		if slot > 0 {
			at = at.Add(rand.N(slot))
		}
		if d := time.Until(at); d > 0 {
			timer := time.NewTimer(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case work <- fc:
		}
	}
}

// current is the cluster as the cache has it as its probe begins: the round
// listed it up to half an interval before, and an upgrade begun since
// decides how its failures count. Nil, and forgotten, when it is gone. The
// cache's own object, not a copy, as the round's list.
func (p *Poller) current(ctx context.Context, fc *v1.FlinkCluster) *v1.FlinkCluster {
	cur := &v1.FlinkCluster{}
	switch err := p.Reader.Get(ctx, client.ObjectKeyFromObject(fc), cur, client.UnsafeDisableDeepCopy); {
	case apierrors.IsNotFound(err):
		p.Tracker.Forget(client.ObjectKeyFromObject(fc))
		return nil
	case err != nil:
		return fc
	}
	return cur
}

// ProbeOnce runs one round for one cluster: it probes the levels, folds
// them into the cluster's Verdict in the Tracker, records a Warning Event
// and the failure metric for every failed probe, and sends the cluster on
// Notify when the Verdict changed (or an earlier change could not be sent).
// A cluster being deleted, or one whose probes fail while its namespace is
// being deleted (whose children go in no order, often before it), is
// forgotten and returns the zero Verdict.
func (p *Poller) ProbeOnce(ctx context.Context, fc *v1.FlinkCluster) Verdict {
	key := client.ObjectKeyFromObject(fc)
	if fc.DeletionTimestamp != nil {
		p.Tracker.Forget(key)
		return Verdict{}
	}
	now := p.now()
	st := p.start(ctx, fc, now)
	a := p.ask(ctx, fc, st.seenReady)
	answered := p.now()
	if ctx.Err() != nil {
		// Shutting down: the REST calls were cut short by us, not by Flink.
		v, _ := p.Tracker.Get(key)
		return v
	}
	var (
		probes   []Probe
		jobs     []JobSummary
		jobsSeen bool
		next     Verdict
		notify   bool
	)
	p.Tracker.update(key, func(e *entry) {
		if e.uid != fc.UID {
			// A new incarnation under the same name starts afresh.
			*e = entry{uid: fc.UID}
		}
		// The start is judged as the answers are folded in, not as the
		// probe began: a reconcile's probe and the round's overlap, and
		// the other may have seen the JobManager ready or the REST API
		// answer meanwhile, or the grace ended while this one waited.
		st = st.since(e)
		probes, jobs, jobsSeen = judge(fc, a, st.seenReady, st.restStarting(answered), answered)
		var changed bool
		first := len(e.verdict.Levels) == 0
		next, changed = Evaluate(e.verdict, probes, Threshold(fc), now)
		if first && next.Levels[LevelJobManager].Reason == ReasonJobManagerStarting {
			// A new cluster's JobManager is starting: nothing for a
			// reconcile to act on, and one woken now writes the status
			// mid-creation. The reconcile that sees it ready carries this.
			changed = false
		}
		if jobsSeen {
			next.Jobs, next.JobsObservedAt = jobs, now
		}
		if a.overview != nil {
			next.RunsJobs = a.overview.JobsRunning > 0
			// A job that starts changes no condition of a session
			// cluster, but makes its TaskManagers' budget due (the
			// controller's budgetDue); a job cluster's budget does
			// not wait for it.
			changed = changed || fc.Spec.Job == nil && next.RunsJobs && !e.verdict.RunsJobs
		}
		for _, pr := range probes {
			if pr.Level == LevelJobManager && pr.OK && e.readyAt.IsZero() {
				e.readyAt = now
			}
			if pr.Level == LevelRest && !pr.Unknown {
				e.restJudged = true
			}
		}
		e.verdict = next
		notify = changed || e.notifyPending
		e.notifyPending = false
	})
	if failed(probes) && p.Teardown.Terminating(ctx, fc.Namespace) {
		// The namespace's deletion took the children first; asked only
		// on a failure, so a healthy round reads nothing more.
		p.Tracker.Forget(key)
		return Verdict{}
	}

	for _, pr := range probes {
		if pr.Unknown {
			continue
		}
		if p.Metrics != nil {
			p.Metrics.Probes.WithLabelValues(string(pr.Level)).Inc()
		}
		if pr.OK {
			continue
		}
		if p.Metrics != nil {
			p.Metrics.Failures.WithLabelValues(string(pr.Level)).Inc()
		}
		if p.Recorder != nil {
			p.Recorder.Eventf(fc, nil, corev1.EventTypeWarning, pr.Reason, EventAction, "%s", pr.Message)
		}
	}

	if notify && p.Notify != nil {
		select {
		case p.Notify <- event.GenericEvent{Object: fc}:
		default:
			logf.FromContext(ctx).V(1).Info("Health notification channel full; retrying next round", "flinkcluster", key.String())
			p.Tracker.update(key, func(e *entry) { e.notifyPending = true })
		}
	}
	return next.clone()
}

// failed reports whether a probe reached a failing verdict.
func failed(probes []Probe) bool {
	return slices.ContainsFunc(probes, func(pr Probe) bool { return !pr.OK && !pr.Unknown })
}

// RestStarting reports whether the cluster's REST API may still be
// starting: no probe has judged it since the JobManager first turned
// ready, which was moments ago (RestStartGrace) or not yet seen by a probe.
func (p *Poller) RestStarting(fc *v1.FlinkCluster) bool {
	now := p.now()
	return p.start(context.Background(), fc, now).restStarting(now)
}

// start is what is known of a cluster's start: when its JobManager turned
// ready (zero when not seen), whether it has been ready (seen by a probe,
// or recorded in status before an operator restart), and whether a probe
// has judged its REST API since.
type start struct {
	readyAt   time.Time
	seenReady bool
	judged    bool
}

// start reads the cluster's start. A JobManager that turned ready moments
// ago may not answer through its Service yet (kube-proxy routes it once the
// EndpointSlice controller has published the pod): until its REST API
// first answers (or fails otherwise), that is a start, not a failure.
func (p *Poller) start(ctx context.Context, fc *v1.FlinkCluster, now time.Time) start {
	var s start
	s.readyAt, s.judged = p.Tracker.started(client.ObjectKeyFromObject(fc), fc.UID)
	if s.readyAt.IsZero() && !s.judged {
		if _, c, err := p.jobManager(ctx, fc); err == nil {
			s.readyAt = startedAt(c.ReadySince, now)
		}
	}
	s.seenReady = !s.readyAt.IsZero() || everReady(fc)
	return s
}

// since adds what other probes recorded in the cluster's entry meanwhile.
func (s start) since(e *entry) start {
	if s.readyAt.IsZero() && !e.readyAt.IsZero() {
		s.readyAt, s.seenReady = e.readyAt, true
	}
	s.judged = s.judged || e.restJudged
	return s
}

// restStarting: the REST API may still be starting at the time.
func (s start) restStarting(at time.Time) bool {
	return !s.judged && (!s.seenReady || at.Sub(s.readyAt) < RestStartGrace)
}

// startedAt is when a JobManager this process has not seen turn ready did,
// by its pod's Ready condition (readiness.Counts.ReadySince; zero when the
// pods do not tell). An operator that restarts again and again would
// otherwise time each start from its own first look and hold a cluster
// whose REST API never answers as starting for ever. The condition's time
// has whole seconds, so the pod turned ready up to one second after it; it
// is the node's clock, so a time ahead of ours counts from now. Once this
// process has seen the JobManager ready, its own clock times the start.
func startedAt(readySince, now time.Time) time.Time {
	if readySince.IsZero() {
		return time.Time{}
	}
	if at := readySince.Add(time.Second); at.Before(now) {
		return at
	}
	return now
}

// answers is what one probe read: the JobManager from the cache, and the
// REST API's answers when the JobManager passed.
type answers struct {
	jm     workload.JobManager
	counts readiness.Counts
	jmErr  error
	// restErr is the REST API's failure; required says the cluster's jobs
	// are probed, and jobs is then its GET /jobs/overview.
	restErr  error
	required bool
	jobs     *flink.MultipleJobsDetails
	// overview is GET /overview's answer; nil when it did not answer.
	overview *flink.ClusterOverview
}

// ask reads the JobManager and, when it passes, asks the REST API.
func (p *Poller) ask(ctx context.Context, fc *v1.FlinkCluster, seenReady bool) answers {
	var a answers
	a.jm, a.counts, a.jmErr = p.jobManager(ctx, fc)
	if a.jmErr != nil || !jobManagerProbe(a.jm, a.counts.Ready, seenReady).OK {
		return a
	}
	fl := flink.NewClient(p.Resolver.BaseURL(fc.Namespace, fc.Name), p.HTTPClient)
	fl.MaxRetries = 0
	fl.RequestTimeout = p.ProbeTimeout
	if fl.RequestTimeout <= 0 {
		fl.RequestTimeout = DefaultProbeTimeout
	}
	if ov, err := fl.Overview(ctx); err != nil {
		a.restErr = err
	} else {
		a.overview = ov
	}
	if _, a.required = jobsRequired(fc); a.restErr == nil && a.required {
		// A REST API that answers /overview but not /jobs/overview does not
		// answer: that is level 2's failure.
		a.jobs, a.restErr = fl.JobsOverview(ctx)
	}
	return a
}

// judge makes the levels' probes of what one probe read, bottom-up. It
// returns the jobs when GET /jobs/overview answered.
func judge(fc *v1.FlinkCluster, a answers, seenReady, restStarting bool, now time.Time) (probes []Probe, jobs []JobSummary, jobsSeen bool) {
	upgrading := fc.Status.Upgrade != nil
	add := func(pr Probe) Probe {
		if upgrading {
			pr = duringUpgrade(pr)
		}
		probes = append(probes, pr)
		return pr
	}

	var l1 Probe
	if a.jmErr != nil {
		l1 = add(Probe{Level: LevelJobManager, Unknown: true, Reason: ReasonJobManagerUnknown,
			Message: sentence("Reading the JobManager failed: " + a.jmErr.Error())})
	} else {
		l1 = add(jobManagerProbe(a.jm, a.counts.Ready, seenReady))
	}
	if !l1.OK {
		add(unknownAbove(LevelRest, l1))
		add(unknownAbove(LevelJobs, l1))
		return probes, nil, false
	}
	l3, _ := jobsRequired(fc)
	l2 := add(restProbe(a.restErr, restStarting))
	if !l2.OK {
		add(unknownAbove(LevelJobs, l2))
		return probes, nil, false
	}
	if !a.required {
		add(l3)
		return probes, nil, false
	}
	jobs = summarize(a.jobs.Jobs)
	add(jobsProbe(fc, jobs, now))
	return probes, jobs, true
}

// jobManager reads the cluster's JobManager workload from the cache, none
// when it does not exist or belongs to another incarnation of the cluster,
// and counts its pods (readiness).
func (p *Poller) jobManager(ctx context.Context, fc *v1.FlinkCluster) (workload.JobManager, readiness.Counts, error) {
	jm, err := workload.Read(ctx, p.Reader, fc)
	if err != nil || !jm.Exists() {
		return workload.JobManager{}, readiness.Counts{}, err
	}
	if owner := metav1.GetControllerOf(jm.Object()); owner != nil && fc.UID != "" && owner.UID != fc.UID {
		return workload.JobManager{}, readiness.Counts{}, nil
	}
	return jm, readiness.JobManagers(jm, p.Pods.Pods(fc.Namespace, fc.Name)), nil
}

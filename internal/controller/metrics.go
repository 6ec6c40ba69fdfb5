package controller

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/datapilot/datapilot/api/v1"
	"github.com/datapilot/datapilot/internal/lifecycle"
)

// Metrics are Datapilot's own Prometheus metrics; controller-runtime adds
// controller_runtime_reconcile_total and _time_seconds by itself.
type Metrics struct {
	Clusters     *prometheus.GaugeVec
	Applies      *prometheus.CounterVec
	StatusWrites prometheus.Counter
	Savepoints   *prometheus.CounterVec
	SavepointAge *prometheus.HistogramVec
	Submissions  prometheus.Counter
	Upgrades     *prometheus.CounterVec
	Rollbacks    *prometheus.CounterVec
	JobsLost     prometheus.Counter
	Autopilot    *autopilotMetrics

	// UpgradeDuration and RollbackDuration time upgrades from their start,
	// and rollbacks from theirs, to their end, by result.
	UpgradeDuration  *prometheus.HistogramVec
	RollbackDuration *prometheus.HistogramVec

	// Per cluster, from the status each reconcile computes: its phase, its
	// conditions and when its state was last saved. They are made at
	// scrape time from series (clusterCollector), not kept as gauges: a
	// gauge vector holds every series' label pairs, 6 KB per cluster, a
	// copy of what series already says.
	clusters *clusterCollector

	mu     sync.Mutex
	series map[types.NamespacedName]*clusterSeries
}

// clusterSeries is what one cluster's series say, from its last status.
// A changed phase or condition is simply not exported again, so no stale
// 1 is left behind.
type clusterSeries struct {
	phase      v1.Phase
	conditions []conditionSeries
	// lastSavepoint and lastCheckpoint are Unix seconds, 0 until the
	// status first carries them; a status without them keeps them.
	lastSavepoint, lastCheckpoint float64
}

type conditionSeries struct{ typ, status, reason string }

// Results the lifecycle counters and histograms are created with, so every
// series exists at zero before its first event.
var (
	upgradeResults  = []string{"started", "succeeded", "failed", "superseded"}
	rollbackResults = []string{"succeeded", "failed"}
)

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "datapilot_flinkclusters",
			Help: "FlinkClusters by phase.",
		}, []string{"phase"}),
		Applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_child_applies_total",
			Help: "Server-side applies of child objects, by kind and reason (create, update, repair).",
		}, []string{"kind", "reason"}),
		StatusWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "datapilot_status_writes_total",
			Help: "FlinkCluster status patches.",
		}),
		Savepoints: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_savepoints_total",
			Help: "Savepoints and upgrade checkpoints, by reason and result (triggered, trigger_error, completed, failed).",
		}, []string{"reason", "result"}),
		SavepointAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "datapilot_savepoint_duration_seconds",
			Help:    "Time from trigger to completion of savepoints, by reason.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
		}, []string{"reason"}),
		Submissions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "datapilot_job_submissions_total",
			Help: "Jobs submitted to Flink.",
		}),
		Upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_upgrades_total",
			Help: "State-safe upgrades, by result (started, succeeded, failed, superseded).",
		}, []string{"result"}),
		Rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "datapilot_rollbacks_total",
			Help: "Automatic rollbacks to the last stable spec, by result (succeeded, failed).",
		}, []string{"result"}),
		JobsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "datapilot_jobs_lost_total",
			Help: "Jobs Flink lost (a JobManager restart without high availability), restored from the newest state held.",
		}),
		UpgradeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "datapilot_upgrade_duration_seconds",
			Help:    "Time from the start of a state-safe upgrade to its end, by result (succeeded, failed, superseded).",
			Buckets: prometheus.ExponentialBuckets(2, 2, 12),
		}, []string{"result"}),
		RollbackDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "datapilot_rollback_duration_seconds",
			Help:    "Time from the start of an automatic rollback to its end, by result (succeeded, failed).",
			Buckets: prometheus.ExponentialBuckets(2, 2, 12),
		}, []string{"result"}),
		series: map[types.NamespacedName]*clusterSeries{},
	}
	m.clusters = newClusterCollector(m)
	m.Autopilot = newAutopilotMetrics(reg)
	reg.MustRegister(m.Clusters, m.Applies, m.StatusWrites, m.Savepoints, m.SavepointAge, m.Submissions, m.Upgrades, m.Rollbacks, m.JobsLost,
		m.UpgradeDuration, m.RollbackDuration, m.clusters)
	for _, p := range []v1.Phase{v1.PhasePending, v1.PhaseRunning, v1.PhaseScaling, v1.PhaseUpdating, v1.PhaseDegraded, v1.PhaseTerminating} {
		m.Clusters.WithLabelValues(string(p)).Set(0)
	}
	for _, r := range upgradeResults {
		m.Upgrades.WithLabelValues(r)
		if r != "started" {
			m.UpgradeDuration.WithLabelValues(r)
		}
	}
	for _, r := range rollbackResults {
		m.Rollbacks.WithLabelValues(r)
		m.RollbackDuration.WithLabelValues(r)
	}
	return m
}

// observe moves one cluster's count to its current phase and records the
// series of the status st.
func (m *Metrics) observe(fc *v1.FlinkCluster, st *v1.FlinkClusterStatus) {
	key := client.ObjectKeyFromObject(fc)
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.series[key]
	switch {
	case cs == nil:
		cs = &clusterSeries{}
		m.series[key] = cs
		m.Clusters.WithLabelValues(string(st.Phase)).Inc()
	case cs.phase != st.Phase:
		m.Clusters.WithLabelValues(string(cs.phase)).Dec()
		m.Clusters.WithLabelValues(string(st.Phase)).Inc()
	}
	cs.phase = st.Phase
	cs.conditions = cs.conditions[:0]
	for _, c := range st.Conditions {
		// One series per type, as the API's list map keys them: a
		// duplicate would fail the whole scrape.
		if !slices.ContainsFunc(cs.conditions, func(o conditionSeries) bool { return o.typ == c.Type }) {
			cs.conditions = append(cs.conditions, conditionSeries{typ: c.Type, status: string(c.Status), reason: c.Reason})
		}
	}
	if j := st.Job; j != nil && j.LastSavepoint != nil && j.LastSavepoint.CompletedAt != nil {
		cs.lastSavepoint = float64(j.LastSavepoint.CompletedAt.Unix())
	}
	if j := st.Job; j != nil && j.LastCheckpoint != nil {
		cs.lastCheckpoint = float64(j.LastCheckpoint.ObservedAt.Unix())
	}
}

// Retain drops from the counts every cluster keep refuses: a replica
// sharing the clusters (internal/sharding) keeps only those of the shards
// it leads, so the counts summed over replicas count each cluster once.
func (m *Metrics) Retain(keep func(types.NamespacedName) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.series {
		if !keep(key) {
			m.dropLocked(key)
		}
	}
}

// forget drops a deleted cluster from the counts and its series.
func (m *Metrics) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(key)
}

// dropLocked removes one cluster from the phase counts and the series.
// Called with mu held.
func (m *Metrics) dropLocked(key types.NamespacedName) {
	if cs, ok := m.series[key]; ok {
		m.Clusters.WithLabelValues(string(cs.phase)).Dec()
		delete(m.series, key)
	}
}

// clusterCollector exports the per-cluster series from Metrics.series at
// each scrape.
type clusterCollector struct {
	m                                          *Metrics
	phase, condition, lastSavepoint, lastCheck *prometheus.Desc
}

func newClusterCollector(m *Metrics) *clusterCollector {
	return &clusterCollector{
		m: m,
		phase: prometheus.NewDesc("datapilot_flinkcluster_phase",
			"1 for each FlinkCluster's current phase.", []string{"namespace", "name", "phase"}, nil),
		condition: prometheus.NewDesc("datapilot_flinkcluster_condition",
			"1 for each condition a FlinkCluster's status carries, with its status and reason.",
			[]string{"namespace", "name", "type", "status", "reason"}, nil),
		lastSavepoint: prometheus.NewDesc("datapilot_flinkcluster_last_savepoint_timestamp_seconds",
			"When Flink reported the FlinkCluster's job's latest savepoint complete (status.job.lastSavepoint.completedAt), Unix seconds.",
			[]string{"namespace", "name"}, nil),
		lastCheck: prometheus.NewDesc("datapilot_flinkcluster_last_checkpoint_timestamp_seconds",
			"When the operator first saw the FlinkCluster's job's latest completed checkpoint (status.job.lastCheckpoint.observedAt), Unix seconds.",
			[]string{"namespace", "name"}, nil),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.phase
	ch <- c.condition
	ch <- c.lastSavepoint
	ch <- c.lastCheck
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	// A series that cannot be made (a label value that is not UTF-8) is
	// left out: a panic here would end the process, not one scrape.
	emit := func(d *prometheus.Desc, v float64, labels ...string) {
		if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...); err == nil {
			ch <- m
		}
	}
	for key, cs := range c.m.series {
		ns, name := key.Namespace, key.Name
		emit(c.phase, 1, ns, name, string(cs.phase))
		for _, cd := range cs.conditions {
			emit(c.condition, 1, ns, name, cd.typ, cd.status, cd.reason)
		}
		if cs.lastSavepoint != 0 {
			emit(c.lastSavepoint, cs.lastSavepoint, ns, name)
		}
		if cs.lastCheckpoint != 0 {
			emit(c.lastCheck, cs.lastCheckpoint, ns, name)
		}
	}
}

// count feeds the lifecycle metrics from the transitions a step made at
// now; an upgrade's and a rollback's durations count from the start that
// prev, the upgrade in flight before the step, recorded for them.
func (m *Metrics) count(prev *v1.UpgradeStatus, ts []lifecycle.Transition, now time.Time) {
	for _, t := range ts {
		switch t.Kind {
		case lifecycle.UpgradeStarted:
			m.Upgrades.WithLabelValues("started").Inc()
		case lifecycle.UpgradeSucceeded:
			m.upgradeEnded(prev, "succeeded", now)
		case lifecycle.UpgradeFailed:
			m.upgradeEnded(prev, "failed", now)
		case lifecycle.UpgradeSuperseded:
			m.upgradeEnded(prev, "superseded", now)
		case lifecycle.RollbackSucceeded:
			m.rollbackEnded(prev, "succeeded", now)
		case lifecycle.RollbackFailed:
			m.rollbackEnded(prev, "failed", now)
		case lifecycle.SavepointCompleted:
			m.Savepoints.WithLabelValues(string(t.Reason), "completed").Inc()
			m.SavepointAge.WithLabelValues(string(t.Reason)).Observe(t.Took.Seconds())
		case lifecycle.SavepointFailed:
			m.Savepoints.WithLabelValues(string(t.Reason), "failed").Inc()
		case lifecycle.JobLost:
			m.JobsLost.Inc()
		}
	}
}

func (m *Metrics) upgradeEnded(up *v1.UpgradeStatus, result string, now time.Time) {
	m.Upgrades.WithLabelValues(result).Inc()
	if up != nil {
		m.UpgradeDuration.WithLabelValues(result).Observe(now.Sub(up.StartedAt.Time).Seconds())
	}
}

// rollbackEnded times a rollback from the start of the upgrade's
// RollingBack phase; a rollback that had not reached it is counted only.
func (m *Metrics) rollbackEnded(up *v1.UpgradeStatus, result string, now time.Time) {
	m.Rollbacks.WithLabelValues(result).Inc()
	if up != nil && up.Phase == v1.UpgradeRollingBack {
		m.RollbackDuration.WithLabelValues(result).Observe(now.Sub(up.PhaseStartedAt.Time).Seconds())
	}
}

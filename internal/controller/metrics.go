package controller

import (
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
	// conditions and when its state was last saved (see clusterSeries).
	ClusterPhase       *prometheus.GaugeVec
	ClusterCondition   *prometheus.GaugeVec
	LastSavepointTime  *prometheus.GaugeVec
	LastCheckpointSeen *prometheus.GaugeVec

	mu     sync.Mutex
	phases map[types.NamespacedName]v1.Phase
	series map[types.NamespacedName]clusterSeries
}

// clusterSeries are the label sets a cluster's gauges were last set with,
// so a changed phase or condition deletes its old series instead of
// leaving a stale 1 behind.
type clusterSeries struct {
	phase      v1.Phase
	conditions map[string][2]string // type -> status, reason
}

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
		ClusterPhase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "datapilot_flinkcluster_phase",
			Help: "1 for each FlinkCluster's current phase.",
		}, []string{"namespace", "name", "phase"}),
		ClusterCondition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "datapilot_flinkcluster_condition",
			Help: "1 for each condition a FlinkCluster's status carries, with its status and reason.",
		}, []string{"namespace", "name", "type", "status", "reason"}),
		LastSavepointTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "datapilot_flinkcluster_last_savepoint_timestamp_seconds",
			Help: "When Flink reported the FlinkCluster's job's latest savepoint complete (status.job.lastSavepoint.completedAt), Unix seconds.",
		}, []string{"namespace", "name"}),
		LastCheckpointSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "datapilot_flinkcluster_last_checkpoint_timestamp_seconds",
			Help: "When the operator first saw the FlinkCluster's job's latest completed checkpoint (status.job.lastCheckpoint.observedAt), Unix seconds.",
		}, []string{"namespace", "name"}),
		phases: map[types.NamespacedName]v1.Phase{},
		series: map[types.NamespacedName]clusterSeries{},
	}
	m.Autopilot = newAutopilotMetrics(reg)
	reg.MustRegister(m.Clusters, m.Applies, m.StatusWrites, m.Savepoints, m.SavepointAge, m.Submissions, m.Upgrades, m.Rollbacks, m.JobsLost,
		m.UpgradeDuration, m.RollbackDuration, m.ClusterPhase, m.ClusterCondition, m.LastSavepointTime, m.LastCheckpointSeen)
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

// observe moves one cluster's count to its current phase and sets its
// gauges from the status st.
func (m *Metrics) observe(fc *v1.FlinkCluster, st *v1.FlinkClusterStatus) {
	key := client.ObjectKeyFromObject(fc)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setClusterSeries(key, st)
	p := st.Phase
	if old, ok := m.phases[key]; ok {
		if old == p {
			return
		}
		m.Clusters.WithLabelValues(string(old)).Dec()
	}
	m.phases[key] = p
	m.Clusters.WithLabelValues(string(p)).Inc()
}

// setClusterSeries sets one cluster's gauges, deleting the series of a
// phase or condition it no longer has. Called with mu held.
func (m *Metrics) setClusterSeries(key types.NamespacedName, st *v1.FlinkClusterStatus) {
	ns, name := key.Namespace, key.Name
	old := m.series[key]
	now := clusterSeries{phase: st.Phase, conditions: map[string][2]string{}}
	if old.phase != "" && old.phase != now.phase {
		m.ClusterPhase.DeleteLabelValues(ns, name, string(old.phase))
	}
	m.ClusterPhase.WithLabelValues(ns, name, string(now.phase)).Set(1)
	for _, c := range st.Conditions {
		now.conditions[c.Type] = [2]string{string(c.Status), c.Reason}
	}
	for t, sr := range old.conditions {
		if now.conditions[t] != sr {
			m.ClusterCondition.DeleteLabelValues(ns, name, t, sr[0], sr[1])
		}
	}
	for t, sr := range now.conditions {
		m.ClusterCondition.WithLabelValues(ns, name, t, sr[0], sr[1]).Set(1)
	}
	m.series[key] = now
	if j := st.Job; j != nil && j.LastSavepoint != nil && j.LastSavepoint.CompletedAt != nil {
		m.LastSavepointTime.WithLabelValues(ns, name).Set(float64(j.LastSavepoint.CompletedAt.Unix()))
	}
	if j := st.Job; j != nil && j.LastCheckpoint != nil {
		m.LastCheckpointSeen.WithLabelValues(ns, name).Set(float64(j.LastCheckpoint.ObservedAt.Unix()))
	}
}

// Retain drops from the counts every cluster keep refuses: a replica
// sharing the clusters (internal/sharding) keeps only those of the shards
// it leads, so the counts summed over replicas count each cluster once.
func (m *Metrics) Retain(keep func(types.NamespacedName) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, old := range m.phases {
		if !keep(key) {
			m.Clusters.WithLabelValues(string(old)).Dec()
			delete(m.phases, key)
		}
	}
	for key := range m.series {
		if !keep(key) {
			m.dropSeries(key)
		}
	}
}

// forget drops a deleted cluster from the counts and its series.
func (m *Metrics) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.series[key]; ok {
		m.dropSeries(key)
	}
	if old, ok := m.phases[key]; ok {
		m.Clusters.WithLabelValues(string(old)).Dec()
		delete(m.phases, key)
	}
}

// dropSeries deletes one cluster's per-cluster series. Called with mu held.
func (m *Metrics) dropSeries(key types.NamespacedName) {
	match := prometheus.Labels{"namespace": key.Namespace, "name": key.Name}
	for _, g := range []*prometheus.GaugeVec{m.ClusterPhase, m.ClusterCondition, m.LastSavepointTime, m.LastCheckpointSeen} {
		g.DeletePartialMatch(match)
	}
	delete(m.series, key)
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

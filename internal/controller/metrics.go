package controller

import (
	"sync"

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

	mu     sync.Mutex
	phases map[types.NamespacedName]v1.Phase
}

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
		phases: map[types.NamespacedName]v1.Phase{},
	}
	m.Autopilot = newAutopilotMetrics(reg)
	reg.MustRegister(m.Clusters, m.Applies, m.StatusWrites, m.Savepoints, m.SavepointAge, m.Submissions, m.Upgrades, m.Rollbacks, m.JobsLost)
	for _, p := range []v1.Phase{v1.PhasePending, v1.PhaseRunning, v1.PhaseScaling, v1.PhaseUpdating, v1.PhaseDegraded, v1.PhaseTerminating} {
		m.Clusters.WithLabelValues(string(p)).Set(0)
	}
	return m
}

// observe moves one cluster's count to its current phase.
func (m *Metrics) observe(fc *v1.FlinkCluster, p v1.Phase) {
	key := client.ObjectKeyFromObject(fc)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.phases[key]; ok {
		if old == p {
			return
		}
		m.Clusters.WithLabelValues(string(old)).Dec()
	}
	m.phases[key] = p
	m.Clusters.WithLabelValues(string(p)).Inc()
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
}

// forget drops a deleted cluster from the counts.
func (m *Metrics) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.phases[key]; ok {
		m.Clusters.WithLabelValues(string(old)).Dec()
		delete(m.phases, key)
	}
}

// count feeds the lifecycle metrics from the transitions a step made.
func (m *Metrics) count(ts []lifecycle.Transition) {
	for _, t := range ts {
		switch t.Kind {
		case lifecycle.UpgradeStarted:
			m.Upgrades.WithLabelValues("started").Inc()
		case lifecycle.UpgradeSucceeded:
			m.Upgrades.WithLabelValues("succeeded").Inc()
		case lifecycle.UpgradeFailed:
			m.Upgrades.WithLabelValues("failed").Inc()
		case lifecycle.UpgradeSuperseded:
			m.Upgrades.WithLabelValues("superseded").Inc()
		case lifecycle.RollbackSucceeded:
			m.Rollbacks.WithLabelValues("succeeded").Inc()
		case lifecycle.RollbackFailed:
			m.Rollbacks.WithLabelValues("failed").Inc()
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

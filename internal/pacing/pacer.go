// Package pacing holds the adaptive Flink polling interval of the reference
// design: while the p95 of recent reconcile times is above a threshold (15 s
// by default), the operator is overloaded and polls each cluster's Flink REST
// API every Degraded interval (60 s) instead of RECONCILE_INTERVAL, and goes
// back once the p95 falls below the threshold again.
package pacing

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the settings.
const (
	DefaultThreshold = 15 * time.Second
	DefaultDegraded  = 60 * time.Second
	DefaultWindow    = time.Minute
	// maxSamples bounds memory; at more reconciles per window the oldest go.
	maxSamples = 4096
)

// Degrade is the decision: poll slowly while the p95 exceeds the threshold.
// A window without reconciles has a p95 of zero: an idle operator is not
// overloaded.
func Degrade(p95, threshold time.Duration) bool { return p95 > threshold }

// over says whether the nearest-rank 95th percentile of ds is above
// threshold, as Degrade(P95(ds), threshold) does, without sorting: fewer
// than rank samples are at most threshold. Every reconcile asks it, over
// up to maxSamples samples; sorting a copy of them each time was a
// fifteenth of the operator's CPU at N = 1000 (its profile: P95).
func over(ds []time.Duration, threshold time.Duration) bool {
	if len(ds) == 0 {
		return false
	}
	atMost := 0
	for _, d := range ds {
		if d <= threshold {
			atMost++
		}
	}
	return atMost < rank95(len(ds))
}

// rank95 is the 1-based nearest rank of the 95th percentile of n samples:
// ceil(0.95 n).
func rank95(n int) int { return (95*n + 99) / 100 }

// P95 is the nearest-rank 95th percentile of ds (zero for none).
func P95(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[rank95(len(s))-1]
}

// Metrics are the pacer's gauges.
type Metrics struct {
	Interval prometheus.Gauge
	P95      prometheus.Gauge
}

// NewMetrics creates the gauges and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Interval: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "datapilot_flink_poll_interval_seconds",
			Help: "Interval at which each cluster's Flink REST API is polled: RECONCILE_INTERVAL, or the degraded interval while reconciles are slow.",
		}),
		P95: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "datapilot_reconcile_time_p95_seconds",
			Help: "95th percentile of reconcile times over the pacing window, which the polling interval follows.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Interval, m.P95)
	}
	return m
}

// Pacer turns observed reconcile times into the polling interval. The zero
// value is not usable: set Base.
type Pacer struct {
	// Base is RECONCILE_INTERVAL.
	Base time.Duration
	// Degraded is the interval while reconciles are slow; DefaultDegraded when zero.
	Degraded time.Duration
	// Threshold is the p95 above which polling degrades; DefaultThreshold when zero.
	Threshold time.Duration
	// Window is how far back reconcile times count; DefaultWindow when zero.
	Window time.Duration
	// OnChange is called, outside any lock, when polling degrades or recovers.
	OnChange func(degraded bool, p95 time.Duration, interval time.Duration)
	// Metrics, when set, follow the interval and the p95.
	Metrics *Metrics
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu       sync.Mutex
	at       []time.Time
	took     []time.Duration
	degraded bool
	// gaugedAt is when the p95 gauge was last set: it is sorted out at
	// most every gaugeEvery, and when the decision changes. The last
	// reconciles of a burst reach the gauge at the next evaluation (a
	// reconcile, or the poller's next Interval), never the decision late.
	gaugedAt time.Time
}

// gaugeEvery bounds how often the p95 gauge is computed.
const gaugeEvery = time.Second

// Observe records one reconcile's duration and re-evaluates.
func (p *Pacer) Observe(d time.Duration) {
	p.mu.Lock()
	p.at = append(p.at, p.now())
	p.took = append(p.took, d)
	if len(p.at) > maxSamples {
		p.at, p.took = p.at[len(p.at)-maxSamples:], p.took[len(p.took)-maxSamples:]
	}
	p.mu.Unlock()
	p.evaluate()
}

// Interval is the polling interval now.
func (p *Pacer) Interval() time.Duration {
	if p.evaluate() {
		return p.degradedInterval()
	}
	return p.Base
}

// evaluate drops samples older than the window, decides, and reports a change.
func (p *Pacer) evaluate() bool {
	p.mu.Lock()
	now := p.now()
	cutoff := now.Add(-p.window())
	i := 0
	for i < len(p.at) && p.at[i].Before(cutoff) {
		i++
	}
	p.at, p.took = p.at[i:], p.took[i:]
	next := over(p.took, p.threshold())
	changed := next != p.degraded
	p.degraded = next
	var p95 time.Duration
	gauge := changed || p.gaugedAt.IsZero() || now.Sub(p.gaugedAt) >= gaugeEvery
	if gauge {
		p95, p.gaugedAt = P95(p.took), now
	}
	p.mu.Unlock()

	interval := p.Base
	if next {
		interval = p.degradedInterval()
	}
	if p.Metrics != nil && gauge {
		p.Metrics.P95.Set(p95.Seconds())
		p.Metrics.Interval.Set(interval.Seconds())
	}
	if changed && p.OnChange != nil {
		p.OnChange(next, p95, interval)
	}
	return next
}

func (p *Pacer) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Pacer) window() time.Duration    { return orDefault(p.Window, DefaultWindow) }
func (p *Pacer) threshold() time.Duration { return orDefault(p.Threshold, DefaultThreshold) }

// degradedInterval is never faster than Base: a Base above the degraded
// interval stays as configured.
func (p *Pacer) degradedInterval() time.Duration {
	return max(p.Base, orDefault(p.Degraded, DefaultDegraded))
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

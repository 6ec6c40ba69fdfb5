package flinksim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// The workload model: what a job's records would do if it ran code. A
// cluster's workload names the job graph's vertices (a chain, the first
// one the source), what one subtask of each can process, and the rate at
// which records arrive at the source (a Kafka topic, say). From rate
// against capacity follow the numbers Flink's task metrics report: busy,
// idle and back-pressured time, records in and out, and the source's
// pending records, which is the backlog the workload keeps whether or not
// a job consumes it.

// Workload is a cluster's simulated traffic and the job graph that
// processes it. Set it before the job is submitted: the program builds
// its graph from it (a job submitted without one has the single vertex
// "Source: simulated -> Sink: simulated"). A later change of the rate or
// capacities applies at once to the running job, vertex by vertex in
// order.
type Workload struct {
	// Vertices is the job graph, source first, in the order records flow.
	Vertices []VertexModel `json:"vertices"`
	// Rate is the rate at which records arrive at the source.
	Rate RateShape `json:"rate"`
	// TimeScale runs the workload's own clock this many times faster than
	// the wall clock (default 1): the rate's shape, the backlog and the
	// 60 s windows of Flink's rate and time metrics are measured on it.
	// Flink's configured timers (checkpoints, restarts, the metric
	// fetcher's interval) are not scaled. A test knob, as the
	// simulator-only durations of EngineOptions are.
	TimeScale float64 `json:"timeScale,omitempty"`
	// Backlog, when set, replaces the records pending at the source.
	Backlog *float64 `json:"backlog,omitempty"`
	// Source is the kind of the first vertex's source, which decides the
	// metrics it registers: SourceKafka (the default) or SourceLegacy.
	Source string `json:"source,omitempty"`
}

// The kinds of source a workload's job reads with.
const (
	// SourceKafka is the FLIP-27 KafkaSource: its reader counts what it
	// reads as the task's records in and registers pendingRecords once it
	// has read records (KafkaSourceReaderMetrics#maybeAddRecordsLagMetric).
	SourceKafka = "kafka"
	// SourceLegacy is a SourceFunction (the legacy FlinkKafkaConsumer, say):
	// its task has no input, so numRecordsInPerSecond is 0 and only the
	// source operator's numRecordsOutPerSecond counts what it reads; it
	// has no pendingRecords.
	SourceLegacy = "legacy"
)

func (w Workload) legacySource() bool { return w.Source == SourceLegacy }

// VertexModel is one job vertex (an operator chain).
type VertexModel struct {
	// Name is the vertex's name; operators chained in it are joined by
	// " -> ", as Flink names chains ("Source: orders -> Filter").
	Name string `json:"name"`
	// CapacityPerSubtask is how many records per second one subtask
	// processes at full busy time; 0 means it never limits.
	CapacityPerSubtask float64 `json:"capacityPerSubtask,omitempty"`
	// Selectivity is records out per record in (default 1).
	Selectivity float64 `json:"selectivity,omitempty"`
	// MaxParallelism is the vertex's maximum parallelism; 0 means Flink's
	// default for the parallelism it is submitted with.
	MaxParallelism int `json:"maxParallelism,omitempty"`
	// TotalCapacity, when set, bounds what all its subtasks together
	// process per second, whatever their number: a downstream system (a
	// database's write limit) that more subtasks do not relieve; they
	// stay busy waiting on it.
	TotalCapacity float64 `json:"totalCapacity,omitempty"`
	// Skew is the share of the vertex's input, beyond an even share, that
	// goes to its first subtask (a hot key): 0 is even, 1 all on one.
	Skew float64 `json:"skew,omitempty"`
	// UID is the head operator's uid (DataStream#uid), from which its
	// operator ID is hashed; empty means Flink's generated hash of the
	// vertex's place in the graph. Changing the vertices or their uids
	// between a savepoint and the next submission is how a test builds a
	// job graph the savepoint does not fit.
	UID string `json:"uid,omitempty"`
	// Stateless says the vertex's operators keep no state, so a snapshot
	// holds none for them; by default every vertex has state (a source's
	// offsets, a window's contents).
	Stateless bool `json:"stateless,omitempty"`
}

// RateShape is the source's arrival rate over the workload's time since
// the workload was set.
type RateShape struct {
	// Kind is constant (Base), ramp or drop (Base until After, then
	// linearly to Peak over Ramp), spike (Peak from After for Period, Base
	// otherwise) or oscillate (between Base and Peak with Period, from
	// After).
	Kind string `json:"kind"`
	// Base and Peak are records per second.
	Base float64 `json:"base"`
	Peak float64 `json:"peak,omitempty"`
	// After, Ramp and Period are durations such as "30s".
	After  Duration `json:"after,omitempty"`
	Ramp   Duration `json:"ramp,omitempty"`
	Period Duration `json:"period,omitempty"`
}

// Duration is a time.Duration written as a string in JSON ("30s").
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// validate refuses a workload the model cannot run.
func (w Workload) validate() error {
	if len(w.Vertices) == 0 {
		return fmt.Errorf("a workload needs at least one vertex (its source)")
	}
	for i, v := range w.Vertices {
		switch {
		case strings.TrimSpace(v.Name) == "":
			return fmt.Errorf("vertex %d has no name", i)
		case v.CapacityPerSubtask < 0, v.TotalCapacity < 0, v.Selectivity < 0, v.MaxParallelism < 0, v.MaxParallelism > 32768:
			return fmt.Errorf("vertex %q: capacity, selectivity and maxParallelism must not be negative (maxParallelism at most 32768)", v.Name)
		case v.Skew < 0 || v.Skew > 1:
			return fmt.Errorf("vertex %q: skew is between 0 and 1", v.Name)
		}
	}
	switch w.Rate.Kind {
	case "constant", "ramp", "drop", "spike", "oscillate":
	default:
		return fmt.Errorf("rate kind %q is not constant, ramp, drop, spike or oscillate", w.Rate.Kind)
	}
	if w.Rate.Base < 0 || w.Rate.Peak < 0 {
		return fmt.Errorf("rates must not be negative")
	}
	if (w.Rate.Kind == "spike" || w.Rate.Kind == "oscillate") && w.Rate.Period.Duration <= 0 {
		return fmt.Errorf("a %s rate needs a period", w.Rate.Kind)
	}
	if w.TimeScale < 0 || w.TimeScale > 1000 {
		return fmt.Errorf("timeScale is between 1 and 1000")
	}
	if w.Backlog != nil && *w.Backlog < 0 {
		return fmt.Errorf("backlog must not be negative")
	}
	switch w.Source {
	case "", SourceKafka, SourceLegacy:
	default:
		return fmt.Errorf("source %q is not %s or %s", w.Source, SourceKafka, SourceLegacy)
	}
	return nil
}

// at is the arrival rate s seconds (workload time) after the workload was
// set.
func (r RateShape) at(s float64) float64 {
	after, ramp, period := r.After.Seconds(), r.Ramp.Seconds(), r.Period.Seconds()
	switch r.Kind {
	case "ramp", "drop":
		switch {
		case s < after:
			return r.Base
		case s >= after+ramp:
			return r.Peak
		}
		return r.Base + (r.Peak-r.Base)*(s-after)/ramp
	case "spike":
		if s >= after && s < after+period {
			return r.Peak
		}
		return r.Base
	case "oscillate":
		if s < after {
			return r.Base
		}
		return r.Base + (r.Peak-r.Base)*(1-math.Cos(2*math.Pi*(s-after)/period))/2
	}
	return r.Base
}

// workload is a cluster's workload in motion: its clock, the source's
// backlog and what it last did.
type workload struct {
	w Workload
	// setAt and base map wall time to workload seconds: base + (t -
	// setAt) × scale. The shape's own time starts at base.
	setAt      time.Time
	base       float64
	clock      float64 // workload seconds stepped so far
	backlog    float64
	rate       float64 // the last step's arrival rate
	throughput float64 // the last step's records read by the source
}

func (wl *workload) scale() float64 {
	if wl.w.TimeScale <= 0 {
		return 1
	}
	return wl.w.TimeScale
}

func (wl *workload) clockAt(t time.Time) float64 {
	return wl.base + t.Sub(wl.setAt).Seconds()*wl.scale()
}

// SetWorkload gives a cluster its traffic; see Workload. Setting it again
// keeps the backlog (unless Backlog is given) and restarts the shape.
func (e *Engine) SetWorkload(k ClusterKey, w Workload) error {
	if err := w.validate(); err != nil {
		return errorf(http.StatusBadRequest, "Flink REST simulator: %v", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.get(k)
	now := e.now()
	e.advance(c, now)
	next := &workload{w: w, setAt: now}
	if old := c.workload; old != nil {
		// advance stepped the old clock to now: the new shape starts here.
		next.base, next.clock, next.backlog = old.clock, old.clock, old.backlog
	}
	if w.Backlog != nil {
		next.backlog = *w.Backlog
	}
	c.workload = next
	c.logf(now, "workload set: %s rate, %d vertices", w.Rate.Kind, len(w.Vertices))
	return nil
}

// consumer is the job that reads the workload's source: the first job of
// the ResourceManager's Dispatcher whose tasks run.
func (c *cluster) consumer() *job {
	rm := c.resourceManager()
	if rm == nil || rm.d == nil {
		return nil
	}
	for _, id := range rm.d.order {
		if j := rm.d.jobs[id]; j.runningTasks() {
			return j
		}
	}
	return nil
}

// Model, not Flink (the README's "Workload model"): stepWorkload, Flow, capacity,
// selectivity, hotShare and busy are the rate-against-capacity physics
// that stand in for user code; only what they feed, the task metrics, is
// Flink's.
//
// stepWorkload moves the workload's clock to wall time t in whole
// seconds, with the jobs as they are: each second the source reads what
// the slowest vertex lets through, and what it cannot read waits.
func (e *Engine) stepWorkload(c *cluster, t time.Time) {
	wl := c.workload
	if wl == nil {
		return
	}
	target := wl.clockAt(t)
	if target-wl.clock > 7*24*3600 {
		// Nothing asked for a week of workload time: jump, as a real
		// source's metrics would have rolled over long ago.
		wl.clock = math.Floor(target) - 120
	}
	j := c.consumer()
	for wl.clock+1 <= target {
		wl.clock++
		wl.rate = wl.w.Rate.at(wl.clock - wl.base)
		wl.throughput = 0
		if j == nil {
			wl.backlog += wl.rate
			continue
		}
		wl.throughput = j.flow(wl, int64(wl.clock))
	}
}

// flow is one second of the job's processing (see Flow): it records the
// second's task metrics and returns the records read.
func (j *job) flow(wl *workload, second int64) float64 {
	parallelism := make([]int, len(j.vertices))
	for i, v := range j.vertices {
		parallelism[i] = v.parallelism
	}
	read, backlog, out := Flow(wl.w.Vertices, parallelism, wl.rate, wl.backlog)
	wl.backlog = backlog
	for i, v := range j.vertices {
		o := out[i]
		v.record(sample{at: second, in: o.In, out: o.Out, busyHot: o.BusyHot, busyOther: o.BusyOther, bpHot: o.BPHot, bpOther: o.BPOther})
	}
	return read
}

// VertexSecond is one second of a vertex's work: its records in and out
// (the vertex's totals) and the busy and back-pressured time, in ms, of
// its hottest subtask and of each other one.
type VertexSecond struct {
	In, Out                            float64
	BusyHot, BusyOther, BPHot, BPOther float64
}

// Flow is one second of a job graph's processing on the workload model,
// the vertices at the given parallelism (a vertex beyond the models has
// no limit): the source reads what arrives and what waits, limited by the
// vertex that saturates first (its hottest subtask at full busy time),
// with every vertex upstream of it back-pressured. It returns the records
// read, the backlog left, and each vertex's second. bench/autopilot
// drives it directly.
func Flow(models []VertexModel, parallelism []int, rate, backlog float64) (float64, float64, []VertexSecond) {
	model := func(i int) VertexModel {
		if i < len(models) {
			return models[i]
		}
		return VertexModel{}
	}
	// gain is records reaching vertex i per record read at the source.
	gain := 1.0
	limit, bottleneck := math.Inf(1), -1
	for i, p := range parallelism {
		m := model(i)
		if c := m.capacity(p); c > 0 {
			capIn := c / hotShare(m.Skew, p)
			if src := capIn / gain; src < limit {
				limit, bottleneck = src, i
			}
		}
		gain *= selectivity(m)
	}
	demand := rate + backlog
	read := math.Min(demand, limit)
	left := math.Max(0, backlog+rate-read)
	pressured := read < demand && bottleneck >= 0
	gain = 1
	out := make([]VertexSecond, len(parallelism))
	for i, p := range parallelism {
		m := model(i)
		in := read * gain
		s := VertexSecond{In: in, Out: in * selectivity(m)}
		hot := hotShare(m.Skew, p)
		c := m.capacity(p)
		s.BusyHot = busy(in*hot, c)
		if p > 1 {
			s.BusyOther = busy(in*(1-hot)/float64(p-1), c)
		}
		if pressured && i < bottleneck {
			// Output buffers full: what is not busy waits on the
			// downstream vertex (backPressuredTimeMsPerSecond).
			s.BPHot, s.BPOther = 1000-s.BusyHot, 1000-s.BusyOther
		}
		out[i] = s
		gain *= selectivity(m)
	}
	return read, left, out
}

// capacity is what one of p subtasks processes per second at full busy
// time: CapacityPerSubtask, within an even share of TotalCapacity; 0 when
// nothing limits it.
func (m VertexModel) capacity(p int) float64 {
	c := m.CapacityPerSubtask
	if m.TotalCapacity > 0 {
		share := m.TotalCapacity / float64(max(1, p))
		if c <= 0 || share < c {
			c = share
		}
	}
	return c
}

func selectivity(m VertexModel) float64 {
	if m.Selectivity == 0 {
		return 1
	}
	return m.Selectivity
}

// hotShare is the first subtask's share of a vertex's input.
func hotShare(skew float64, parallelism int) float64 {
	p := float64(max(1, parallelism))
	return 1/p + skew*(1-1/p)
}

// busy is a subtask's busy time in ms per second at a load.
func busy(load, capacity float64) float64 {
	if capacity <= 0 {
		return 0
	}
	return math.Min(1000, 1000*load/capacity)
}

// sample is one second of a vertex's work: its records in and out (the
// vertex's totals) and the busy and back-pressured time of its hottest
// subtask and of each other one.
type sample struct {
	at                                 int64
	in, out                            float64
	busyHot, busyOther, bpHot, bpOther float64
}

// meterWindow is the time span of Flink's rate and time metrics: MeterView
// (numRecordsInPerSecond, numRecordsOutPerSecond) and TimerGauge
// (busy/idle/backPressuredTimeMsPerSecond) average over 60 s by default
// (MeterView.DEFAULT_TIME_SPAN_IN_SECONDS, TimerGauge.
// DEFAULT_TIME_SPAN_IN_SECONDS).
const meterWindow = 60

// viewUpdateInterval is how often the ViewUpdater refreshes those views
// (View.UPDATE_INTERVAL_SECONDS), so their values move in 5 s steps.
const viewUpdateInterval = 5

func (v *vertex) record(s sample) {
	v.samples = append(v.samples, s)
	v.consumed = v.consumed || s.in > 0
	// Keep a window beyond the last view update.
	if n, keep := len(v.samples), meterWindow+viewUpdateInterval; n > keep {
		v.samples = v.samples[n-keep:]
	}
}

// window averages the vertex's samples of the meterWindow seconds up to
// the last view update at or before second: rates over the whole window
// (a MeterView counts nothing before its task started, so a new task's
// rate climbs over its first minute), times over the seconds the task has
// run (TimerGauge before its window is full).
func (v *vertex) window(second int64) (w sample, ok bool) {
	end := second - second%viewUpdateInterval
	n := 0
	for _, s := range v.samples {
		if s.at > end || s.at <= end-meterWindow {
			continue
		}
		n++
		w.in += s.in
		w.out += s.out
		w.busyHot += s.busyHot
		w.busyOther += s.busyOther
		w.bpHot += s.bpHot
		w.bpOther += s.bpOther
	}
	if n == 0 {
		return sample{}, false
	}
	w.in, w.out = w.in/meterWindow, w.out/meterWindow
	w.busyHot, w.busyOther, w.bpHot, w.bpOther = w.busyHot/float64(n), w.busyOther/float64(n), w.bpHot/float64(n), w.bpOther/float64(n)
	return w, true
}

// WorkloadView is what the workload last did.
type WorkloadView struct {
	// Clock is the workload's time in seconds since it was first set.
	Clock float64 `json:"clock"`
	// Rate and Throughput are the last second's arrivals and records read.
	Rate       float64 `json:"rate"`
	Throughput float64 `json:"throughput"`
	// Backlog is the records waiting at the source (its pendingRecords).
	Backlog float64 `json:"backlog"`
}

func (wl *workload) view() *WorkloadView {
	if wl == nil {
		return nil
	}
	return &WorkloadView{Clock: wl.clock, Rate: wl.rate, Throughput: wl.throughput, Backlog: wl.backlog}
}

// Command autopilot benchmarks the autopilot's decisions (go run
// ./bench/autopilot): on the Flink REST simulator's workload model, driven
// directly second by second (flinksim.Flow: no control plane, no REST, a
// simulated clock, deterministic), it runs a four-vertex job under load
// shapes and compares Datapilot's policy (internal/autopilot's Evaluate and
// Decide, as the operator calls them) with a fixed parallelism sized for
// the peak, the Apache Flink autoscaler of flink-kubernetes-operator
// release 1.15.0 with its defaults (see apache.go) and an oracle that
// knows the load.
// It writes the table to bench/AUTOPILOT.md.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/datapilot/datapilot/internal/autopilot"
	"github.com/datapilot/datapilot/internal/flinksim"
)

func main() {
	out := flag.String("out", "bench/AUTOPILOT.md", "results file to write")
	flag.StringVar(&trace, "trace", "", "print the rescales of the policies whose name contains this")
	b := flag.Int("boundary", 0, "Datapilot's spec.autoscaler.utilizationBoundaryPercent (0: the default, 20)")
	flag.StringVar(&climbHorizon, "climb-horizon", "", "Datapilot's spec.autoscaler.climbHorizon (empty: the default, 1h)")
	flag.Parse()
	boundary = int32(*b)
	start := time.Now()
	var rows []result
	for _, sh := range shapes() {
		for _, mk := range policies {
			rows = append(rows, simulate(sh, mk(sh)))
		}
	}
	md := report(rows, time.Since(start)) + goals(rows)
	fmt.Print(md)
	// The notes below the marker are written by hand: kept.
	if old, err := os.ReadFile(*out); err == nil {
		if i := strings.Index(string(old), notesMarker); i >= 0 {
			md += "\n" + string(old[i:])
		}
	}
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench/autopilot:", err)
		os.Exit(1)
	}
}

// The job graph: a Kafka source of 24 partitions, a parse-and-filter
// keeping half, a keyed enrichment and a sink; max parallelism 720 (the
// Apache autoscaler's documentation recommends a highly divisible one).
const (
	partitions = 24
	maxKeys    = 720
	// downtime is what one rescale costs: a savepoint, the stop, the
	// resubmission and the deployment, with the source reading nothing.
	downtime = 60
	// lagThreshold is the lag a team tolerates, in seconds of arrivals.
	lagThreshold = 120.0
	// slots per TaskManager; policy bounds for every policy.
	slots, maxTMs, maxParallelism = 4, 16, 64
	// sampleEvery is Datapilot's spec.autoscaler.interval default.
	sampleEvery = 15
)

func graph() []flinksim.VertexModel {
	return []flinksim.VertexModel{
		{Name: "Source: orders", CapacityPerSubtask: 5000, MaxParallelism: maxKeys},
		{Name: "Parse -> Filter", CapacityPerSubtask: 2000, Selectivity: 0.5, MaxParallelism: maxKeys},
		{Name: "Enrich", CapacityPerSubtask: 300, MaxParallelism: maxKeys},
		{Name: "Sink: warehouse", CapacityPerSubtask: 1500, MaxParallelism: maxKeys},
	}
}

// shape is one load: its rate over time, its graph, and when its step
// (if any) happens.
type shape struct {
	name   string
	hours  float64
	rate   func(s float64) float64
	models []flinksim.VertexModel
	// stepAt is the second of a step change, for the actions to converge;
	// negative for none.
	stepAt []float64
}

func shapes() []shape {
	h := 3600.0
	skewed := graph()
	skewed[2].Skew = 0.05
	capped := graph()
	// The warehouse takes at most 3000 records/s, however many writers.
	capped[3].TotalCapacity = 3000
	return []shape{
		{name: "diurnal day", hours: 24, models: graph(), rate: func(s float64) float64 {
			return 2000 + 8000*(1-math.Cos(2*math.Pi*s/(24*h)))/2
		}},
		{name: "step up and down", hours: 10, models: graph(), stepAt: []float64{2 * h, 6 * h}, rate: func(s float64) float64 {
			if s >= 2*h && s < 6*h {
				return 9000
			}
			return 3000
		}},
		{name: "spike", hours: 6, models: graph(), rate: func(s float64) float64 {
			if s >= 2*h && s < 2*h+600 {
				return 9000
			}
			return 3000
		}},
		{name: "slow ramp", hours: 10, models: graph(), rate: func(s float64) float64 {
			return 2000 + 8000*math.Min(1, s/(8*h))
		}},
		{name: "skewed key", hours: 6, models: skewed, rate: func(float64) float64 { return 5000 }},
		{name: "vertex that stops scaling", hours: 6, models: capped, stepAt: []float64{h}, rate: func(s float64) float64 {
			if s >= h {
				return 8000
			}
			return 5000
		}},
	}
}

// policy decides, from what the job reported, the parallelism of each
// vertex; nil keeps it.
type policy interface {
	name() string
	// every is how often it decides, in seconds.
	every() int
	decide(j *jobState) []int
	// restarted says the rescale it asked for is done.
	restarted(j *jobState)
}

var policies = []func(shape) policy{
	func(sh shape) policy { return newDatapilot() },
	func(sh shape) policy { return newApache() },
	func(sh shape) policy { return fixedForPeak(sh) },
	func(sh shape) policy { return &oracle{sh: sh} },
}

// jobState is the simulated job as a policy sees it.
type jobState struct {
	now        float64 // seconds since the start
	models     []flinksim.VertexModel
	par        []int
	backlog    float64
	history    []autopilot.Sample
	runningAt  float64 // when the job last started running
	ring       [][]flinksim.VertexSecond
	lastRate   float64
	restartEnd float64
}

// trace selects the policies whose rescales are printed.
var trace string

// boundary is Datapilot's utilization boundary, in percent (0: default).
var boundary int32

// climbHorizon is Datapilot's climb horizon ("": default).
var climbHorizon string

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (j *jobState) at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func vertexID(i int) string { return fmt.Sprintf("%032x", i+1) }

// sample is what the operator's Sampler would read now: Flink's 60 s
// meters and timer gauges over the seconds since the tasks started, as
// the simulator's metrics window computes them (rates over the whole
// minute, times over the seconds run).
func (j *jobState) sample() autopilot.Sample {
	s := autopilot.Sample{Time: j.at(j.now), JobID: "job"}
	n := min(len(j.ring), 60)
	if n == 0 {
		return s
	}
	recent := j.ring[len(j.ring)-n:]
	for i, m := range j.models {
		var in, out, hot, other, bpHot, bpOther float64
		for _, sec := range recent {
			v := sec[i]
			in, out, hot, other, bpHot, bpOther = in+v.In, out+v.Out, hot+v.BusyHot, other+v.BusyOther, bpHot+v.BPHot, bpOther+v.BPOther
		}
		in, out = in/60, out/60
		hot, other, bpHot, bpOther = hot/float64(n), other/float64(n), bpHot/float64(n), bpOther/float64(n)
		p := float64(j.par[i])
		vs := autopilot.VertexSample{ID: vertexID(i), Name: m.Name, Parallelism: int32(j.par[i]), MaxParallelism: int32(m.MaxParallelism),
			BusyAvg: (hot + (p-1)*other) / p, BusyMax: math.Max(hot, other), BackPressured: (bpHot + (p-1)*bpOther) / p,
			RecordsIn: in, RecordsOut: out}
		if j.par[i] == 1 {
			vs.BusyMax = hot
		}
		if i == 0 {
			vs.Source, vs.Read, vs.Lag, vs.LagKnown, vs.Partitions = true, in, j.backlog, true, partitions
		}
		s.Vertices = append(s.Vertices, vs)
	}
	return s
}

// result is one policy on one shape.
type result struct {
	shape, policy string
	rescales      int
	slotHours     float64
	lagAbove      float64 // seconds with lag above the threshold
	maxLag        float64 // records
	maxLagSeconds float64
	downtime      float64
	// converge is the rescales after each step, until the next one.
	converge []int
	// downWithBacklog counts scale-downs decided with the lag above the
	// threshold.
	downWithBacklog int
}

func simulate(sh shape, pol policy) result {
	j := &jobState{models: sh.models, par: sizeFor(sh.models, sh.rate(0))}
	if f, ok := pol.(*fixed); ok {
		j.par = f.par
	}
	r := result{shape: sh.name, policy: pol.name(), converge: make([]int, len(sh.stepAt))}
	end := sh.hours * 3600
	down := 0
	for j.now = 0; j.now < end; j.now++ {
		rate := sh.rate(j.now)
		j.lastRate = rate
		r.slotHours += float64(widest(j.par)) / 3600
		if down > 0 {
			j.backlog += rate
			if down--; down == 0 {
				j.runningAt, j.ring = j.now+1, nil
				pol.restarted(j)
			}
		} else {
			var out []flinksim.VertexSecond
			_, j.backlog, out = flinksim.Flow(j.models, j.par, rate, j.backlog)
			j.ring = append(j.ring, out)
			if len(j.ring) > 120 {
				j.ring = j.ring[len(j.ring)-60:]
			}
		}
		lagSeconds := j.backlog / math.Max(rate, 1)
		if lagSeconds > lagThreshold {
			r.lagAbove++
		}
		r.maxLag, r.maxLagSeconds = math.Max(r.maxLag, j.backlog), math.Max(r.maxLagSeconds, lagSeconds)
		if down > 0 || int(j.now)%pol.every() != 0 {
			continue
		}
		if int(j.now)%sampleEvery == 0 && len(j.ring) > 0 {
			j.history = autopilot.Append(j.history, j.sample(), 30*time.Minute)
		}
		next := pol.decide(j)
		if next == nil || equal(next, j.par) {
			continue
		}
		if lagSeconds > lagThreshold && shrinks(j.par, next) {
			r.downWithBacklog++
		}
		r.rescales++
		if trace != "" && strings.Contains(pol.name(), trace) {
			fmt.Fprintf(os.Stderr, "%s / %s at %s (rate %.0f, lag %.0f s): %v → %v\n", sh.name, pol.name(), time.Duration(j.now)*time.Second, rate, lagSeconds, j.par, next)
		}
		for i, at := range sh.stepAt {
			next := end
			if i+1 < len(sh.stepAt) {
				next = sh.stepAt[i+1]
			}
			if j.now >= at && j.now < next {
				r.converge[i]++
			}
		}
		r.downtime += downtime
		j.par, down = next, downtime
	}
	return r
}

func widest(par []int) int {
	w := 0
	for _, p := range par {
		w = max(w, p)
	}
	// Whole TaskManagers of `slots` slots.
	return (w + slots - 1) / slots * slots
}

func equal(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shrinks(from, to []int) bool {
	for i := range from {
		if to[i] < from[i] {
			return true
		}
	}
	return false
}

// sizeFor is each vertex's parallelism for a steady rate at 70% busy,
// rounded up as the autopilot rounds (partitions for the source, key
// groups for the others): what the oracle and the fixed policy run. A
// vertex that more subtasks do not relieve (a total capacity) bounds
// what flows through every vertex, upstream of it too (backpressure), so
// each is sized for no more than that.
func sizeFor(models []flinksim.VertexModel, rate float64) []int {
	out := make([]int, len(models))
	gain := 1.0
	for _, m := range models {
		if m.TotalCapacity > 0 {
			rate = math.Min(rate, m.TotalCapacity/gain)
		}
		gain *= selectivity(m)
	}
	in := rate
	for i, m := range models {
		p := 1
		for p < maxParallelism && !fits(m, p, in) {
			p++
		}
		n := maxKeys
		if i == 0 {
			n = partitions
		}
		for q := p; q <= maxParallelism; q++ {
			if n%q == 0 {
				p = q
				break
			}
		}
		out[i] = p
		in *= selectivity(m)
	}
	return out
}

func selectivity(m flinksim.VertexModel) float64 {
	if m.Selectivity == 0 {
		return 1
	}
	return m.Selectivity
}

// fits says p subtasks take in at 70% busy, the hottest one included,
// or that more would not take in more (a total capacity).
func fits(m flinksim.VertexModel, p int, in float64) bool {
	_, _, out := flinksim.Flow([]flinksim.VertexModel{m}, []int{p}, in, 0)
	if out[0].BusyHot <= 700 {
		return true
	}
	if m.TotalCapacity > 0 {
		_, _, more := flinksim.Flow([]flinksim.VertexModel{m}, []int{p + 1}, in, 0)
		return more[0].In <= out[0].In
	}
	return false
}

// fixed runs the parallelism sized for the shape's peak, all the time.
type fixed struct{ par []int }

func fixedForPeak(sh shape) *fixed {
	peak := 0.0
	for s := 0.0; s < sh.hours*3600; s += 60 {
		peak = math.Max(peak, sh.rate(s))
	}
	return &fixed{par: sizeFor(sh.models, peak)}
}

func (f *fixed) name() string           { return "fixed for the peak" }
func (f *fixed) every() int             { return 60 }
func (f *fixed) decide(*jobState) []int { return nil }
func (f *fixed) restarted(*jobState)    {}

// oracle knows the load: every 5 minutes it sizes each vertex for the
// highest rate of the next 30 minutes (and the downtime before it), and
// gives subtasks back only when the next hour needs fewer.
type oracle struct{ sh shape }

func (o *oracle) name() string        { return "oracle" }
func (o *oracle) every() int          { return 300 }
func (o *oracle) restarted(*jobState) {}

func (o *oracle) decide(j *jobState) []int {
	peakOver := func(d float64) float64 {
		p := 0.0
		for s := j.now; s <= j.now+d; s += 30 {
			p = math.Max(p, o.sh.rate(s))
		}
		return p
	}
	soon := sizeFor(j.models, peakOver(1800+downtime))
	hour := sizeFor(j.models, peakOver(3600))
	next := append([]int(nil), j.par...)
	change := false
	for i := range next {
		switch {
		case soon[i] > next[i]:
			next[i], change = soon[i], true
		case hour[i] < next[i]:
			next[i], change = hour[i], true
		}
	}
	if !change || j.backlog > j.lastRate*lagThreshold {
		if change && !shrinks(j.par, next) {
			return next
		}
		return nil
	}
	return next
}

func report(rows []result, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Autopilot decisions\n\n")
	fmt.Fprintf(&b, "`go run ./bench/autopilot` (%s of simulated load in %s of wall time; deterministic). ", simulatedHours(rows), took.Round(time.Millisecond))
	fmt.Fprintf(&b, "The simulator's workload model (`flinksim.Flow`) driven second by second: a Kafka source of %d partitions → parse-and-filter (half pass) → keyed Enrich (300 records/s per subtask) → sink; max parallelism %d, TaskManagers of %d slots, at most %d subtasks per vertex; each rescale costs %d s without processing (a savepoint and a resubmission). ", partitions, maxKeys, slots, maxParallelism, downtime)
	fmt.Fprintf(&b, "Lag above the threshold: the backlog is more than %.0f s of arrivals. Slot-hours: whole TaskManagers for the widest vertex (one slot-sharing group).\n\n", lagThreshold)
	b.WriteString("| Shape | Policy | Rescales | Slot-hours | × oracle | Lag above threshold | Max lag | Downtime | Rescales after each step | Scale-downs with lag above threshold |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	oracleSlots := map[string]float64{}
	for _, r := range rows {
		if r.policy == "oracle" {
			oracleSlots[r.shape] = r.slotHours
		}
	}
	for _, r := range rows {
		conv := "–"
		if len(r.converge) > 0 {
			conv = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.converge)), ", "), "[]")
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.2f | %s | %.0f records (%.0f s) | %s | %s | %d |\n", r.shape, r.policy, r.rescales, r.slotHours, r.slotHours/oracleSlots[r.shape],
			(time.Duration(r.lagAbove) * time.Second).String(), r.maxLag, r.maxLagSeconds, (time.Duration(r.downtime) * time.Second).String(), conv, r.downWithBacklog)
	}
	return b.String()
}

// notesMarker starts the hand-written part of the results file.
const notesMarker = "<!-- notes: written by hand, kept by go run ./bench/autopilot -->"

// goals checks the goals for Datapilot on every shape.
func goals(rows []result) string {
	by := map[string]map[string]result{}
	for _, r := range rows {
		if by[r.shape] == nil {
			by[r.shape] = map[string]result{}
		}
		by[r.shape][r.policy] = r
	}
	var b strings.Builder
	b.WriteString("\n### Goals (Datapilot)\n\n| Shape | Fewer rescales than Apache | No more time above the lag threshold | ≤ 3 actions after a step | ≤ 4 rescales over the day | No scale-down with the lag above the threshold | Slot-hours ≤ 1.25 × oracle |\n|---|---|---|---|---|---|---|\n")
	mark := func(ok bool, detail string) string {
		if ok {
			return "yes (" + detail + ")"
		}
		return "**no** (" + detail + ")"
	}
	for _, sh := range shapes() {
		d, a, o := by[sh.name]["Datapilot"], by[sh.name][newApache().name()], by[sh.name]["oracle"]
		steps, day := "–", "–"
		if len(d.converge) > 0 {
			worst := 0
			for _, c := range d.converge {
				worst = max(worst, c)
			}
			steps = mark(worst <= 3, fmt.Sprintf("%v", d.converge))
		}
		if sh.name == "diurnal day" {
			day = mark(d.rescales <= 4, fmt.Sprintf("%d", d.rescales))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", sh.name,
			mark(d.rescales < a.rescales, fmt.Sprintf("%d against %d", d.rescales, a.rescales)),
			mark(d.lagAbove <= a.lagAbove, fmt.Sprintf("%s against %s", time.Duration(d.lagAbove)*time.Second, time.Duration(a.lagAbove)*time.Second)),
			steps, day,
			mark(d.downWithBacklog == 0, fmt.Sprintf("%d", d.downWithBacklog)),
			mark(d.slotHours <= 1.25*o.slotHours, fmt.Sprintf("%.2f×", d.slotHours/o.slotHours)))
	}
	return b.String()
}

func simulatedHours(rows []result) string {
	seen := map[string]bool{}
	total := 0.0
	for _, sh := range shapes() {
		if !seen[sh.name] {
			seen[sh.name] = true
			total += sh.hours
		}
	}
	return fmt.Sprintf("%.0f h × %d policies", total, len(policies))
}

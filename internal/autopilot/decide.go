package autopilot

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// Results of a decision, as status.autoscaler.decisions records them.
const (
	ResultRecommended = "Recommended"
	ResultApplied     = "Applied"
	ResultRefused     = "Refused"
	ResultSucceeded   = "Succeeded"
	ResultFailed      = "Failed"
)

// Reasons besides the recommendation kinds.
const (
	ReasonPaused        = "Paused"
	ReasonPending       = "ScaleDownPending"
	ReasonCapReached    = "CapReached"
	ReasonUnschedulable = "Unschedulable"
	ReasonIneffective   = "Ineffective"
	ReasonRescaleFailed = "RescaleFailed"
	ReasonBlocked       = "Blocked"
	ReasonInFlight      = "Rescaling"
)

// ineffectiveGain is the share of the expected throughput gain a
// scale-up must deliver to count as having helped. The Apache autoscaler
// flags a scaling whose gain is below 10% of the expected one (its
// scaling.effectiveness.threshold); we ask for 30% before scaling up again.
const ineffectiveGain = 0.3

// Capacity is what the platform can schedule, checked before a scale-up
// that adds TaskManagers.
type Capacity struct {
	// Fit is how many more TaskManager pods fit now.
	Fit int32
	// Why names what bounds it (node resources, a quota).
	Why string
}

// Input is everything one decision depends on.
type Input struct {
	Policy Policy
	Now    time.Time
	Rec    Recommendation
	Status v1.AutoscalerStatus
	// Paused names what forbids a rescale now (an upgrade, a rollback, a
	// Degraded cluster, a job not running); empty when nothing does.
	Paused string
	// Capacity, when checked; nil when no TaskManager is added.
	Capacity *Capacity
}

// Outcome is one decision: the next status, the target to apply (apply
// mode only), the condition and the events.
type Outcome struct {
	Status v1.AutoscalerStatus
	// Apply is the parallelism to rescale to; zero for none.
	Apply     int32
	Condition Condition
	Events    []Event
	// Recorded is true when the decision went into status.autoscaler.decisions.
	Recorded bool
}

// Condition is the Autoscaling condition.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Event is an event to emit.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// MaxDecisions bounds status.autoscaler.decisions.
const MaxDecisions = 10

// Decide gates a recommendation: nothing while paused or a rescale is in
// flight, a band (in Evaluate), the scale-down delay with merging, the
// cap per hour, blocks on rescales that failed or did not help, and the
// schedulability of new TaskManagers. Each gate acts on the vertices it
// concerns: a vertex blocked or skewed keeps its parallelism while the
// others change.
func Decide(in Input) Outcome {
	o := Outcome{Status: *in.Status.DeepCopy()}
	st, rec, p := &o.Status, in.Rec, in.Policy
	rec.PerVertex = slices.Clone(rec.PerVertex)
	current := rec.From
	switch {
	case st.Pending != nil:
		o.cond(metav1.ConditionTrue, ReasonInFlight, fmt.Sprintf("Rescaling from %d to %d: %s", st.Pending.From, st.Pending.To, st.Pending.Message))
		return o
	case in.Paused != "":
		o.cond(metav1.ConditionFalse, ReasonPaused, "No rescale while "+in.Paused)
		return o
	}
	liftBlock(st, rec, in.Now)
	summary := rec.Summary
	if summary == "" {
		summary = rec.Message
	}
	switch rec.Kind {
	case Collecting, NoThroughput:
		o.cond(metav1.ConditionFalse, string(rec.Kind), summary)
		return o
	case Keep, Skewed:
		if st.PendingScaleDown != nil {
			o.event(false, "ScaleDownCancelled", "The scale-down to %d pending since %s is cancelled: %s", st.PendingScaleDown.Parallelism, st.PendingScaleDown.Since.UTC().Format(time.RFC3339), rec.Message)
			st.PendingScaleDown = nil
		}
		switch {
		case rec.Kind == Skewed && (len(st.Decisions) == 0 || st.Decisions[0].Reason != string(Skewed)):
			o.record(in, rec, string(Skewed), ResultRefused, rec.From, rec.Message)
			o.event(true, string(Skewed), "%s", rec.Message)
		case rec.Kind == Keep && capped(rec.PerVertex):
			// The target is out of reach: said once, as CapReached.
			o.refuse(in, rec, ReasonCapReached, rec.Message)
			return o
		}
		o.cond(metav1.ConditionFalse, string(rec.Kind), summary)
		return o
	case Up:
		st.PendingScaleDown = nil
		if why, vertices, ok := ineffective(st, rec); ok {
			until := p.blockFor()
			if len(vertices) > 0 {
				until = p.ineffectiveFor()
			}
			st.Blocked = &v1.AutoscalerBlock{Reason: ReasonIneffective, Message: why, Parallelism: current,
				ArrivalRate: rec.Inputs.ArrivalRate, Until: metav1.NewTime(in.Now.Add(until)), Vertices: vertices}
			o.record(in, rec, ReasonIneffective, ResultRefused, rec.From, why)
			o.event(true, ReasonIneffective, "%s", why)
			o.cond(metav1.ConditionFalse, ReasonIneffective, why)
			if len(vertices) == 0 {
				return o
			}
		}
		if msg, blocked := applyBlock(st.Blocked, &rec); blocked {
			if o.Condition.Reason != ReasonIneffective {
				o.cond(metav1.ConditionFalse, ReasonBlocked, msg)
			}
			return o
		}
		to := rec.To
		if addTMs := p.TaskManagers(to) - p.TaskManagers(current); addTMs > 0 && in.Capacity != nil && in.Capacity.Fit < addTMs {
			fit := p.TaskManagers(current) + in.Capacity.Fit
			fitTo := min(fit*p.Slots, to)
			if fitTo <= current && !shrinksAny(rec.PerVertex) {
				msg := fmt.Sprintf("Scaling up to %d needs %d more TaskManagers and none can be scheduled: %s", to, addTMs, in.Capacity.Why)
				o.refuse(in, rec, ReasonUnschedulable, msg)
				return o
			}
			to = max(fitTo, current)
			capAt(&rec, to)
			rec.Message += fmt.Sprintf("; only %d of %d more TaskManagers fit (%s), so to %d", in.Capacity.Fit, addTMs, in.Capacity.Why, to)
		}
		o.rescale(in, rec, to)
		return o
	case Down:
		ps := st.PendingScaleDown
		if ps == nil {
			st.PendingScaleDown = &v1.PendingScaleDown{Since: metav1.NewTime(in.Now.Truncate(time.Second)), Parallelism: rec.To, Vertices: Parallelisms(rec.PerVertex)}
			o.event(false, ReasonPending, "Scale-down from %d to %d recommended; applied after %s if it holds: %s", current, rec.To, p.ScaleDownDelay, rec.Message)
			o.cond(metav1.ConditionFalse, ReasonPending, fmt.Sprintf("Scale-down to %d waits until %s: %s", rec.To, in.Now.Add(p.ScaleDownDelay).UTC().Format(time.RFC3339), summary))
			return o
		}
		// Merged: the least reduction recommended during the delay wins,
		// vertex by vertex. A recommendation within a metric window of
		// the first still averages samples from before the delay (a
		// spike that has passed, the higher rate of a load that has
		// since fallen): the merge starts from the first one past it
		// (until then the first is held, and the status does not move).
		switch {
		case ps.MergedFrom != nil:
			ps.Parallelism = max(ps.Parallelism, rec.To)
			ps.Vertices = mergeHighest(ps.Vertices, rec.PerVertex)
		case in.Now.Sub(ps.Since.Time) >= p.Window || in.Now.Sub(ps.Since.Time) >= p.ScaleDownDelay:
			from := metav1.NewTime(in.Now.Truncate(time.Second))
			ps.Parallelism, ps.Vertices, ps.MergedFrom = rec.To, Parallelisms(rec.PerVertex), &from
		}
		if in.Now.Sub(ps.Since.Time) < p.ScaleDownDelay {
			o.cond(metav1.ConditionFalse, ReasonPending, fmt.Sprintf("Scale-down to %d (the highest recommended since %s) waits until %s: %s",
				ps.Parallelism, ps.Since.UTC().Format(time.RFC3339), ps.Since.Add(p.ScaleDownDelay).UTC().Format(time.RFC3339), summary))
			return o
		}
		to := ps.Parallelism
		merged := ps.Vertices
		st.PendingScaleDown = nil
		if len(rec.PerVertex) > 0 {
			applyMerged(&rec, merged)
			to = rec.To
		}
		rec.Message = fmt.Sprintf("Recommended for %s (merged to the highest, %d): %s", p.ScaleDownDelay, to, rec.Message)
		if to >= current && !shrinksAny(rec.PerVertex) {
			o.cond(metav1.ConditionFalse, string(Keep), summary)
			return o
		}
		if why, ok := worthIt(p, rec, to); !ok {
			o.cond(metav1.ConditionFalse, string(Keep), why)
			return o
		}
		o.rescale(in, rec, to)
		return o
	}
	o.cond(metav1.ConditionFalse, string(rec.Kind), rec.Message)
	return o
}

// rescale applies (or, in recommend mode, reports) a new parallelism,
// within the cap per hour. A target a vertex cannot reach (its need is
// above its bound) is said as CapReached.
func (o *Outcome) rescale(in Input, rec Recommendation, to int32) {
	st, p := &o.Status, in.Policy
	reason := string(rec.Kind)
	if capped(rec.PerVertex) {
		reason = ReasonCapReached
		rec.Message += "; the target is out of reach: " + cappedNames(rec.PerVertex)
	}
	if n := appliedSince(st.Decisions, in.Now.Add(-time.Hour)); n >= p.MaxPerHour {
		msg := fmt.Sprintf("%s to %d recommended, but %d rescales were applied in the last hour (spec.autoscaler.maxRescalesPerHour): %s", rec.Kind, to, n, rec.Summary)
		o.refuse(in, rec, ReasonCapReached, msg)
		return
	}
	targets := Parallelisms(rec.PerVertex)
	if p.Uniform {
		// The job's parallelism alone: a vertex its program pinned keeps
		// its own, and the gate checks only the widest.
		targets = nil
	}
	if p.Mode == v1.AutoscalerRecommend {
		// A recommendation is recorded once until it changes: its
		// direction, the running parallelism, or its target; a target
		// that moves with every sample is recorded again only after a
		// stabilization interval.
		last := lastRecommended(st.Decisions)
		same := last != nil && last.Reason == reason && last.From == rec.From
		if !same || (!sameTargets(last, to, targets) && in.Now.Sub(last.Time.Time) >= p.Stabilization) {
			o.record(in, rec, reason, ResultRecommended, to, rec.Message)
			o.event(false, "Recommended", "%s from %d to %d recommended (mode recommend: nothing changes): %s", reason, rec.From, to, rec.Message)
		}
		o.cond(metav1.ConditionFalse, "Recommended", fmt.Sprintf("%s from %d recommended (mode recommend; see status.autoscaler.decisions)", reason, rec.From))
		return
	}
	d := o.record(in, rec, reason, ResultApplied, to, rec.Message)
	st.Pending = d.DeepCopy()
	st.Parallelism, st.TaskManagers, st.Vertices = to, p.TaskManagers(to), nil
	if len(targets) > 0 {
		st.Vertices = targets
	}
	o.Apply = to
	o.event(false, reason, "%s from %d to %d (%d TaskManagers): %s", reason, rec.From, to, st.TaskManagers, rec.Message)
	o.cond(metav1.ConditionTrue, ReasonInFlight, fmt.Sprintf("Rescaling from %d to %d: %s", rec.From, to, rec.Message))
}

// worthIt says a scale-down is worth a restart: it frees as large a
// share of the TaskManagers as a vertex leaving the band below frees at
// least, going from the band's lower edge to the target:
// boundary/target, 2/7 with the defaults (at most a half). A smaller one
// is left to grow: on a load still falling the next one frees more in
// one restart, and on a load that stopped the saving is small. A job at
// its floor of TaskManagers can free none: for it the share is of its
// subtasks (which share the slots, but not the CPU, memory and network
// buffers).
func worthIt(p Policy, rec Recommendation, to int32) (string, bool) {
	share := min(p.Boundary/p.Target, 0.5)
	enough := func(from, left int32) bool { return from > left && float64(from-left) >= share*float64(from)-1e-9 }
	fromTMs, toTMs := p.TaskManagers(rec.From), p.TaskManagers(to)
	if enough(fromTMs, toTMs) {
		return "", true
	}
	var from, left int32
	for _, n := range rec.PerVertex {
		from, left = from+n.From, left+n.To
	}
	if fromTMs <= p.FloorTMs && len(rec.PerVertex) > 0 && enough(from, left) {
		return "", true
	}
	return fmt.Sprintf("The scale-down from %d to %d frees %d of %d TaskManagers and %d of %d subtasks, less than %.0f%%: not worth a restart",
		rec.From, to, fromTMs-toTMs, fromTMs, from-left, from, share*100), false
}

// lastRecommended is the newest decision, when it is a recommendation.
func lastRecommended(ds []v1.AutoscalerDecision) *v1.AutoscalerDecision {
	if len(ds) == 0 || ds[0].Result != ResultRecommended {
		return nil
	}
	return &ds[0]
}

// sameTargets says a decision recorded the job target to and, vertex by
// vertex, targets.
func sameTargets(d *v1.AutoscalerDecision, to int32, targets []v1.VertexParallelism) bool {
	if d.To != to || len(d.Vertices) != len(targets) {
		return false
	}
	for i, t := range targets {
		if d.Vertices[i].ID != t.ID || d.Vertices[i].To != t.Parallelism {
			return false
		}
	}
	return true
}

// capped says some vertex needs more than its bound allows.
func capped(needs []VertexNeed) bool {
	return slices.ContainsFunc(needs, func(n VertexNeed) bool { return n.Capped })
}

func shrinksAny(needs []VertexNeed) bool {
	return slices.ContainsFunc(needs, func(n VertexNeed) bool { return n.To < n.From })
}

// capAt bounds every vertex's target by to (the slots that fit).
func capAt(rec *Recommendation, to int32) {
	for i := range rec.PerVertex {
		if n := &rec.PerVertex[i]; n.To > to {
			n.To, n.Bound = max(to, n.From), "the TaskManagers that fit"
		}
	}
	rec.To = min(rec.To, to)
}

// mergeHighest keeps, vertex by vertex, the highest target.
func mergeHighest(prev []v1.VertexParallelism, needs []VertexNeed) []v1.VertexParallelism {
	out := Parallelisms(needs)
	for i := range out {
		for _, q := range prev {
			if q.ID == out[i].ID {
				out[i].Parallelism = max(out[i].Parallelism, q.Parallelism)
			}
		}
	}
	return out
}

// applyMerged sets each vertex's target to the merged one, never above
// what it runs at (a scale-down only lowers).
func applyMerged(rec *Recommendation, merged []v1.VertexParallelism) {
	rec.To = 0
	for i := range rec.PerVertex {
		n := &rec.PerVertex[i]
		for _, q := range merged {
			if q.ID == n.ID && q.Parallelism > n.To {
				n.To = min(q.Parallelism, n.From)
			}
		}
		rec.To = max(rec.To, n.To)
	}
}

// applyBlock keeps the vertices a block holds at what they run: a vertex
// the block names (or every vertex, for a block of the job) does not grow
// to the parallelism it names or beyond. It says whether nothing is left
// to grow, and why.
func applyBlock(b *v1.AutoscalerBlock, rec *Recommendation) (string, bool) {
	if b == nil {
		return "", false
	}
	msg := fmt.Sprintf("Not scaling up to %d: %s (until %s, or until the arrival rate moves 50%% from %d records/s)", rec.To, b.Message, b.Until.UTC().Format(time.RFC3339), b.ArrivalRate)
	holds := func(limit, from, to int32) bool {
		return to >= limit && (b.Reason == ReasonRescaleFailed || from >= limit)
	}
	if len(b.Vertices) == 0 || len(rec.PerVertex) == 0 {
		return msg, holds(b.Parallelism, rec.From, rec.To)
	}
	held := ""
	for i := range rec.PerVertex {
		n := &rec.PerVertex[i]
		for _, q := range b.Vertices {
			if q.ID == n.ID && n.To > n.From && holds(q.Parallelism, n.From, n.To) {
				n.To, n.Bound, n.Capped = n.From, BoundBlocked, false
				held = n.Name
			}
		}
	}
	grows := false
	for i := range rec.PerVertex {
		n := &rec.PerVertex[i]
		if held != "" && n.To > n.From {
			// A held vertex that still wants more bounds what the job
			// gets through: more subtasks elsewhere would wait on it.
			n.To, n.Bound, n.Capped = n.From, "blocked: the job's throughput is bounded by "+held, false
		}
		grows = grows || (n.To > n.From && !n.InBand)
	}
	rec.To = 0
	for i := range rec.PerVertex {
		n := &rec.PerVertex[i]
		if !grows && n.InBand && n.To > n.From {
			// Resized alongside a scale-up that is blocked: no rescale
			// of its own.
			n.To, n.Bound = n.From, BoundBand
		}
		rec.To = max(rec.To, n.To)
	}
	return msg, !grows
}

// refuse records a rescale that cannot be made, once per reason.
func (o *Outcome) refuse(in Input, rec Recommendation, reason, msg string) {
	st := &o.Status
	if len(st.Decisions) == 0 || st.Decisions[0].Reason != reason || st.Decisions[0].To != rec.To {
		o.record(in, rec, reason, ResultRefused, rec.To, msg)
		o.event(true, reason, "%s", msg)
	}
	o.cond(metav1.ConditionFalse, reason, msg)
}

func (o *Outcome) record(in Input, rec Recommendation, reason, result string, to int32, msg string) *v1.AutoscalerDecision {
	st, p := &o.Status, in.Policy
	d := v1.AutoscalerDecision{
		Time: metav1.NewTime(in.Now.Truncate(time.Second)), From: rec.From, To: to,
		FromTaskManagers: p.TaskManagers(rec.From), ToTaskManagers: p.TaskManagers(to),
		Reason: reason, Message: msg, Result: result, Inputs: rec.Inputs,
	}
	if len(rec.PerVertex) > 0 {
		d.Vertices = VertexDecisions(rec.PerVertex)
	}
	st.Decisions = append([]v1.AutoscalerDecision{d}, st.Decisions...)
	if len(st.Decisions) > MaxDecisions {
		st.Decisions = st.Decisions[:MaxDecisions]
	}
	o.Recorded = true
	return &st.Decisions[0]
}

func (o *Outcome) cond(status metav1.ConditionStatus, reason, msg string) {
	o.Condition = Condition{Status: status, Reason: reason, Message: msg}
}

func (o *Outcome) event(warning bool, reason, format string, args ...any) {
	o.Events = append(o.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// appliedSince counts the rescales applied after t.
func appliedSince(ds []v1.AutoscalerDecision, t time.Time) int {
	n := 0
	for _, d := range ds {
		if d.Time.After(t) && (d.Result == ResultApplied || d.Result == ResultSucceeded || d.Result == ResultFailed) {
			n++
		}
	}
	return n
}

// ineffective reports whether the last rescale, a scale-up that
// completed, failed to raise what it scaled: the job still wants more,
// yet the rate rose by less than ineffectiveGain of what the added
// parallelism should have given (capped by the demand it was sized for).
// With the vertices recorded, each vertex scaled up is judged by its own
// processing rate (see ineffectiveVertices), and the ones that did not
// help are returned, each at the parallelism it runs at (the block's
// limit) with the processing rate it has there.
func ineffective(st *v1.AutoscalerStatus, rec Recommendation) (string, []v1.BlockedVertex, bool) {
	if len(st.Decisions) == 0 {
		return "", nil, false
	}
	last := st.Decisions[0]
	if last.Result != ResultSucceeded || last.To <= last.From || last.To != rec.From {
		return "", nil, false
	}
	if len(last.Vertices) > 0 && len(rec.PerVertex) > 0 {
		return ineffectiveVertices(last, rec)
	}
	before := float64(last.Inputs.SourceRate)
	gain, expected, ok := gainOf(before, float64(rec.Inputs.SourceRate), float64(last.From), float64(last.To), float64(last.Inputs.TargetRate))
	if !ok {
		return "", nil, false
	}
	return fmt.Sprintf("The scale-up from %d to %d did not help: the sources emit %d records/s, against %d before and %.0f expected (%.0f%% of the expected gain); not scaling up again",
		last.From, last.To, rec.Inputs.SourceRate, last.Inputs.SourceRate, expected, gain*100), nil, true
}

// gainOf is the share of the expected gain a rescale from..to delivered;
// ok when it is below ineffectiveGain.
func gainOf(before, now, from, to, target float64) (gain, expected float64, ok bool) {
	expected = min(before*to/max(from, 1), target)
	if expected <= before {
		return 0, expected, false
	}
	gain = (now - before) / (expected - before)
	return gain, expected, gain < ineffectiveGain
}

// ineffectiveVertices judges each vertex scaled up by its processing
// rate (what all its subtasks process at full busy time, its records in
// over its busy time), as the Apache autoscaler does
// (JobVertexScaler#detectIneffectiveScaleUp compares true processing
// rates): what it takes in follows the demand, which after a step
// change says nothing of what the subtasks added, while a processing
// rate that stays where it was says they add nothing (a bottleneck
// downstream, an external system that more writers do not relieve).
func ineffectiveVertices(last v1.AutoscalerDecision, rec Recommendation) (string, []v1.BlockedVertex, bool) {
	var out []v1.BlockedVertex
	var why []string
	for _, d := range last.Vertices {
		if d.To <= d.From || d.ProcessingRate <= 0 {
			continue
		}
		for _, n := range rec.PerVertex {
			if n.ID != d.ID || n.From != d.To || n.To <= n.From || math.IsInf(n.ProcessingRate, 1) {
				continue
			}
			before, now := float64(d.ProcessingRate)*float64(d.From), n.ProcessingRate*float64(n.From)
			expected := before * float64(d.To) / float64(d.From)
			if gain := (now - before) / (expected - before); gain < ineffectiveGain {
				out = append(out, v1.BlockedVertex{VertexParallelism: v1.VertexParallelism{ID: n.ID, Name: n.Name, Parallelism: n.From}, ProcessingRate: round(now)})
				why = append(why, fmt.Sprintf("%s %d→%d processes %.0f records/s at full busy time, against %.0f before and %.0f expected (%.0f%% of the expected gain)",
					n.Name, d.From, d.To, now, before, expected, gain*100))
			}
		}
	}
	if len(out) == 0 {
		return "", nil, false
	}
	return "The scale-up did not help: " + strings.Join(why, "; ") + "; not scaling them up again", out, true
}

// liftBlock drops a block whose time is up or whose load moved on, or
// one on vertices of which one now processes 50% more than when it was
// blocked (what held it back was relieved).
func liftBlock(st *v1.AutoscalerStatus, rec Recommendation, now time.Time) {
	b := st.Blocked
	if b == nil {
		return
	}
	moved := rec.Kind != Collecting && b.ArrivalRate > 0 &&
		(float64(rec.Inputs.ArrivalRate) > 1.5*float64(b.ArrivalRate) || float64(rec.Inputs.ArrivalRate) < 0.5*float64(b.ArrivalRate))
	for _, q := range b.Vertices {
		for _, n := range rec.PerVertex {
			if q.ID == n.ID && q.ProcessingRate > 0 && !math.IsInf(n.ProcessingRate, 1) && n.ProcessingRate*float64(n.From) >= 1.5*float64(q.ProcessingRate) {
				moved = true
			}
		}
	}
	if !now.Before(b.Until.Time) || moved {
		st.Blocked = nil
	}
}

// Running is the job as Flink runs it now, for Settle.
type Running struct {
	// Parallelism is its highest vertex parallelism; zero when it does
	// not run.
	Parallelism int32
	// Vertices are its vertices' parallelism, by vertex ID.
	Vertices map[string]int32
	// Since is when it last turned RUNNING.
	Since time.Time
}

// at says the job runs at a decision's targets: its highest parallelism,
// and each vertex the decision set at its own.
func (r Running) at(to int32, vertices []v1.VertexParallelism) bool {
	if r.Parallelism != to {
		return false
	}
	for _, v := range vertices {
		if got, ok := r.Vertices[v.ID]; ok && got != v.Parallelism {
			return false
		}
	}
	return true
}

// Settle closes the rescale in flight once the lifecycle is done with it:
// Succeeded when the job runs at the new parallelism (every vertex at its
// own), with the downtime it cost; Failed (reverted and blocked) when the
// lifecycle rolled it back or gave up. It returns the event to emit, if
// any.
//
// revertTo is the parallelism of the spec the rollback returned to (zero
// when it carried none of the autopilot's).
func Settle(st *v1.AutoscalerStatus, p Policy, now time.Time, running Running, upgradeInFlight, failed bool, why string, revertTo int32) *Event {
	pd := st.Pending
	if pd == nil {
		return nil
	}
	decision := func() *v1.AutoscalerDecision {
		for i := range st.Decisions {
			if st.Decisions[i].Time.Equal(&pd.Time) && st.Decisions[i].To == pd.To {
				return &st.Decisions[i]
			}
		}
		return &v1.AutoscalerDecision{}
	}
	targets := st.Vertices
	switch {
	case failed:
		decision().Result = ResultFailed
		st.Pending = nil
		st.Parallelism, st.TaskManagers, st.Vertices = revertTo, 0, nil
		if revertTo > 0 {
			st.TaskManagers = p.TaskManagers(revertTo)
		}
		st.Blocked = &v1.AutoscalerBlock{Reason: ReasonRescaleFailed, Parallelism: pd.To, ArrivalRate: pd.Inputs.ArrivalRate,
			Message: fmt.Sprintf("the rescale from %d to %d failed and was rolled back (%s)", pd.From, pd.To, why), Until: metav1.NewTime(now.Add(p.blockFor())),
			Vertices: grown(pd.Vertices)}
		return &Event{Warning: true, Reason: ReasonRescaleFailed, Message: fmt.Sprintf("The rescale from %d to %d failed and was rolled back to %d: %s; it is not repeated until the load changes", pd.From, pd.To, pd.From, why)}
	case !upgradeInFlight && running.at(pd.To, targets):
		d := decision()
		d.Result = ResultSucceeded
		// The job did not process records from the decision until it ran
		// again (the savepoint, the stop, the restart), or, when Flink
		// reports no new start, until now.
		end := now
		if running.Since.After(pd.Time.Time) {
			end = running.Since
		}
		d.DowntimeSeconds = max(int64(end.Sub(pd.Time.Time).Seconds()), 1)
		st.Pending = nil
		return &Event{Reason: "Rescaled", Message: fmt.Sprintf("The job runs at parallelism %d (was %d) after %ds of downtime", pd.To, pd.From, d.DowntimeSeconds)}
	}
	return nil
}

// grown are the vertices a decision scaled up, each at its new target.
func grown(ds []v1.VertexDecision) []v1.BlockedVertex {
	var out []v1.BlockedVertex
	for _, d := range ds {
		if d.To > d.From {
			out = append(out, v1.BlockedVertex{VertexParallelism: v1.VertexParallelism{ID: d.ID, Name: d.Name, Parallelism: d.To}})
		}
	}
	return out
}

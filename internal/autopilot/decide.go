package autopilot

import (
	"fmt"
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
// schedulability of new TaskManagers.
func Decide(in Input) Outcome {
	o := Outcome{Status: *in.Status.DeepCopy()}
	st, rec, p := &o.Status, in.Rec, in.Policy
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
		if rec.Kind == Skewed && (len(st.Decisions) == 0 || st.Decisions[0].Reason != string(Skewed)) {
			o.record(in, rec, string(Skewed), ResultRefused, rec.From, rec.Message)
			o.event(true, string(Skewed), "%s", rec.Message)
		}
		o.cond(metav1.ConditionFalse, string(rec.Kind), summary)
		return o
	case Up:
		st.PendingScaleDown = nil
		if why, ok := ineffective(st, rec); ok {
			st.Blocked = &v1.AutoscalerBlock{Reason: ReasonIneffective, Message: why, Parallelism: current,
				ArrivalRate: rec.Inputs.ArrivalRate, Until: metav1.NewTime(in.Now.Add(p.blockFor()))}
			o.record(in, rec, ReasonIneffective, ResultRefused, rec.From, why)
			o.event(true, ReasonIneffective, "%s", why)
			o.cond(metav1.ConditionFalse, ReasonIneffective, why)
			return o
		}
		if b := st.Blocked; b != nil && rec.To >= b.Parallelism && (b.Reason == ReasonRescaleFailed || current >= b.Parallelism) {
			msg := fmt.Sprintf("Not scaling up to %d: %s (until %s, or until the arrival rate moves 50%% from %d records/s)", rec.To, b.Message, b.Until.UTC().Format(time.RFC3339), b.ArrivalRate)
			o.cond(metav1.ConditionFalse, ReasonBlocked, msg)
			return o
		}
		to := rec.To
		if addTMs := p.TaskManagers(to) - p.TaskManagers(current); addTMs > 0 && in.Capacity != nil && in.Capacity.Fit < addTMs {
			fit := p.TaskManagers(current) + in.Capacity.Fit
			fitTo := min(fit*p.Slots, to)
			if fitTo <= current {
				msg := fmt.Sprintf("Scaling up to %d needs %d more TaskManagers and none can be scheduled: %s", to, addTMs, in.Capacity.Why)
				o.refuse(in, rec, ReasonUnschedulable, msg)
				return o
			}
			to = fitTo
			rec.Message += fmt.Sprintf("; only %d of %d more TaskManagers fit (%s), so to %d", in.Capacity.Fit, addTMs, in.Capacity.Why, to)
		}
		o.rescale(in, rec, to)
		return o
	case Down:
		ps := st.PendingScaleDown
		if ps == nil {
			st.PendingScaleDown = &v1.PendingScaleDown{Since: metav1.NewTime(in.Now.Truncate(time.Second)), Parallelism: rec.To}
			o.event(false, ReasonPending, "Scale-down from %d to %d recommended; applied after %s if it holds: %s", current, rec.To, p.ScaleDownDelay, rec.Message)
			o.cond(metav1.ConditionFalse, ReasonPending, fmt.Sprintf("Scale-down to %d waits until %s: %s", rec.To, in.Now.Add(p.ScaleDownDelay).UTC().Format(time.RFC3339), summary))
			return o
		}
		// Merged: the least reduction recommended during the delay wins.
		ps.Parallelism = max(ps.Parallelism, rec.To)
		if in.Now.Sub(ps.Since.Time) < p.ScaleDownDelay {
			o.cond(metav1.ConditionFalse, ReasonPending, fmt.Sprintf("Scale-down to %d (the highest recommended since %s) waits until %s: %s",
				ps.Parallelism, ps.Since.UTC().Format(time.RFC3339), ps.Since.Add(p.ScaleDownDelay).UTC().Format(time.RFC3339), summary))
			return o
		}
		to := ps.Parallelism
		rec.Message = fmt.Sprintf("Recommended for %s (merged to the highest, %d): %s", p.ScaleDownDelay, to, rec.Message)
		st.PendingScaleDown = nil
		if to >= current {
			o.cond(metav1.ConditionFalse, string(Keep), summary)
			return o
		}
		o.rescale(in, rec, to)
		return o
	}
	o.cond(metav1.ConditionFalse, string(rec.Kind), rec.Message)
	return o
}

// rescale applies (or, in recommend mode, reports) a new parallelism,
// within the cap per hour.
func (o *Outcome) rescale(in Input, rec Recommendation, to int32) {
	st, p := &o.Status, in.Policy
	reason := string(rec.Kind)
	if n := appliedSince(st.Decisions, in.Now.Add(-time.Hour)); n >= p.MaxPerHour {
		msg := fmt.Sprintf("%s to %d recommended, but %d rescales were applied in the last hour (spec.autoscaler.maxRescalesPerHour): %s", reason, to, n, rec.Summary)
		o.refuse(in, rec, ReasonCapReached, msg)
		return
	}
	if p.Mode == v1.AutoscalerRecommend {
		// A recommendation is recorded again only when its direction or
		// the running parallelism changes, or after a stabilization
		// interval: the target moves with every sample.
		last := st.Decisions
		if len(last) == 0 || last[0].Result != ResultRecommended || last[0].Reason != reason || last[0].From != rec.From ||
			in.Now.Sub(last[0].Time.Time) >= p.Stabilization {
			o.record(in, rec, reason, ResultRecommended, to, rec.Message)
			o.event(false, "Recommended", "%s from %d to %d recommended (mode recommend: nothing changes): %s", reason, rec.From, to, rec.Message)
		}
		o.cond(metav1.ConditionFalse, "Recommended", fmt.Sprintf("%s from %d recommended (mode recommend; see status.autoscaler.decisions)", reason, rec.From))
		return
	}
	d := o.record(in, rec, reason, ResultApplied, to, rec.Message)
	st.Pending = d.DeepCopy()
	st.Parallelism, st.TaskManagers = to, p.TaskManagers(to)
	o.Apply = to
	o.event(false, reason, "%s from %d to %d (%d TaskManagers): %s", reason, rec.From, to, st.TaskManagers, rec.Message)
	o.cond(metav1.ConditionTrue, ReasonInFlight, fmt.Sprintf("Rescaling from %d to %d: %s", rec.From, to, rec.Message))
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
// completed, failed to raise the sources' rate: the job still wants more,
// yet the rate rose by less than ineffectiveGain of what the added
// parallelism should have given (capped by the demand it was sized for).
func ineffective(st *v1.AutoscalerStatus, rec Recommendation) (string, bool) {
	if len(st.Decisions) == 0 {
		return "", false
	}
	last := st.Decisions[0]
	if last.Result != ResultSucceeded || last.To <= last.From || last.To != rec.From {
		return "", false
	}
	before := float64(last.Inputs.SourceRate)
	expected := min(before*float64(last.To)/float64(max(last.From, 1)), float64(last.Inputs.TargetRate))
	if expected <= before {
		return "", false
	}
	gain := (float64(rec.Inputs.SourceRate) - before) / (expected - before)
	if gain >= ineffectiveGain {
		return "", false
	}
	return fmt.Sprintf("The scale-up from %d to %d did not help: the sources emit %d records/s, against %d before and %.0f expected (%.0f%% of the expected gain); not scaling up again",
		last.From, last.To, rec.Inputs.SourceRate, last.Inputs.SourceRate, expected, gain*100), true
}

// liftBlock drops a block whose time is up or whose load moved on.
func liftBlock(st *v1.AutoscalerStatus, rec Recommendation, now time.Time) {
	b := st.Blocked
	if b == nil {
		return
	}
	moved := rec.Kind != Collecting && b.ArrivalRate > 0 &&
		(float64(rec.Inputs.ArrivalRate) > 1.5*float64(b.ArrivalRate) || float64(rec.Inputs.ArrivalRate) < 0.5*float64(b.ArrivalRate))
	if !now.Before(b.Until.Time) || moved {
		st.Blocked = nil
	}
}

// Settle closes the rescale in flight once the lifecycle is done with it:
// Succeeded when the job runs at the new parallelism, Failed (reverted
// and blocked) when the lifecycle rolled it back or gave up. It returns
// the event to emit, if any.
//
// revertTo is the parallelism of the spec the rollback returned to (zero
// when it carried none of the autopilot's).
func Settle(st *v1.AutoscalerStatus, p Policy, now time.Time, running int32, upgradeInFlight, failed bool, why string, revertTo int32) *Event {
	pd := st.Pending
	if pd == nil {
		return nil
	}
	setResult := func(r string) {
		for i := range st.Decisions {
			if st.Decisions[i].Time.Equal(&pd.Time) && st.Decisions[i].To == pd.To {
				st.Decisions[i].Result = r
				return
			}
		}
	}
	switch {
	case failed:
		setResult(ResultFailed)
		st.Pending = nil
		st.Parallelism, st.TaskManagers = revertTo, 0
		if revertTo > 0 {
			st.TaskManagers = p.TaskManagers(revertTo)
		}
		st.Blocked = &v1.AutoscalerBlock{Reason: ReasonRescaleFailed, Parallelism: pd.To, ArrivalRate: pd.Inputs.ArrivalRate,
			Message: fmt.Sprintf("the rescale from %d to %d failed and was rolled back (%s)", pd.From, pd.To, why), Until: metav1.NewTime(now.Add(p.blockFor()))}
		return &Event{Warning: true, Reason: ReasonRescaleFailed, Message: fmt.Sprintf("The rescale from %d to %d failed and was rolled back to %d: %s; it is not repeated until the load changes", pd.From, pd.To, pd.From, why)}
	case !upgradeInFlight && running == pd.To:
		setResult(ResultSucceeded)
		st.Pending = nil
		return &Event{Reason: "Rescaled", Message: fmt.Sprintf("The job runs at parallelism %d (was %d)", pd.To, pd.From)}
	}
	return nil
}

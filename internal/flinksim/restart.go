package flinksim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// restartStrategy is a RestartBackoffTimeStrategy: after notifyFailure,
// canRestart says whether the job restarts and backoff after how long
// (ExecutionFailureHandler#handleFailure calls them in that order).
type restartStrategy interface {
	notifyFailure(now time.Time)
	canRestart(now time.Time) bool
	backoff(now time.Time) time.Duration
	String() string
}

// newRestartStrategy follows RestartBackoffTimeStrategyFactoryLoader:
// restart-strategy.type if set, else, when the job checkpoints,
// fixed-delay with Integer.MAX_VALUE attempts and 1 s delay (1.17, 1.18) or
// exponential-delay with its options' defaults (1.19 on: FLIP-364), else no
// restarts. For a job submitted through /jars/run the job's configuration is
// the cluster's (JarRunHandler copies it), so the cluster's keys decide.
func newRestartStrategy(c *conf, checkpointing bool) (restartStrategy, error) {
	name, set := c.raw("restart-strategy.type")
	if !set {
		switch {
		case !checkpointing:
			return noRestart{}, nil
		case !c.version.AtLeast(1, 19):
			return &fixedDelay{attempts: math.MaxInt32, delay: time.Second}, nil
		}
		return exponentialFromDefaults(c)
	}
	switch strings.ToLower(name) {
	case "none", "off", "disable":
		return noRestart{}, nil
	case "fixeddelay", "fixed-delay":
		attempts, err := c.integer("restart-strategy.fixed-delay.attempts")
		if err != nil {
			return nil, err
		}
		delay, _, err := c.duration("restart-strategy.fixed-delay.delay")
		if err != nil {
			return nil, err
		}
		return &fixedDelay{attempts: attempts, delay: delay}, nil
	case "failurerate", "failure-rate":
		n, err := c.integer("restart-strategy.failure-rate.max-failures-per-interval")
		if err != nil {
			return nil, err
		}
		interval, _, err := c.duration("restart-strategy.failure-rate.failure-rate-interval")
		if err != nil {
			return nil, err
		}
		delay, _, err := c.duration("restart-strategy.failure-rate.delay")
		if err != nil {
			return nil, err
		}
		return &failureRate{max: n, interval: interval, delay: delay}, nil
	case "exponentialdelay", "exponential-delay":
		return exponentialFromConf(c, c.value)
	}
	return nil, fmt.Errorf("java.lang.IllegalArgumentException: Unknown restart strategy %s.", name)
}

// exponentialFromDefaults is the default exponential-delay strategy: the
// options' default values, whatever the configuration says
// (RestartBackoffTimeStrategyFactoryLoader#getDefaultRestartStrategyFactory).
func exponentialFromDefaults(c *conf) (restartStrategy, error) {
	return exponentialFromConf(c, func(option string) (string, bool) {
		o := c.minor.Options[option]
		return strings.Trim(o.Default, `"`), o.Default != "(none)"
	})
}

func exponentialFromConf(c *conf, value func(string) (string, bool)) (restartStrategy, error) {
	read := &conf{version: c.version, minor: c.minor, values: map[string]string{}}
	for _, k := range []string{"initial-backoff", "max-backoff", "backoff-multiplier", "reset-backoff-threshold", "jitter-factor", "attempts-before-reset-backoff"} {
		if v, ok := value("restart-strategy.exponential-delay." + k); ok {
			read.values["restart-strategy.exponential-delay."+k] = v
		}
	}
	e := &exponentialDelay{v119: c.version.AtLeast(1, 19), attempts: math.MaxInt32}
	var err error
	if e.initial, _, err = read.duration("restart-strategy.exponential-delay.initial-backoff"); err != nil {
		return nil, err
	}
	if e.max, _, err = read.duration("restart-strategy.exponential-delay.max-backoff"); err != nil {
		return nil, err
	}
	if e.multiplier, err = read.float("restart-strategy.exponential-delay.backoff-multiplier"); err != nil {
		return nil, err
	}
	if e.reset, _, err = read.duration("restart-strategy.exponential-delay.reset-backoff-threshold"); err != nil {
		return nil, err
	}
	if e.jitter, err = read.float("restart-strategy.exponential-delay.jitter-factor"); err != nil {
		return nil, err
	}
	if e.v119 {
		if e.attempts, err = read.integer("restart-strategy.exponential-delay.attempts-before-reset-backoff"); err != nil {
			return nil, err
		}
	}
	e.current = e.initial
	return e, nil
}

// noRestart is NoRestartBackoffTimeStrategy.
type noRestart struct{}

func (noRestart) notifyFailure(time.Time)         {}
func (noRestart) canRestart(time.Time) bool       { return false }
func (noRestart) backoff(time.Time) time.Duration { return 0 }
func (noRestart) String() string                  { return "NoRestartBackoffTimeStrategy" }

// fixedDelay is FixedDelayRestartBackoffTimeStrategy: attempts restarts,
// each after delay.
type fixedDelay struct {
	attempts, current int
	delay             time.Duration
}

func (f *fixedDelay) notifyFailure(time.Time)         { f.current++ }
func (f *fixedDelay) canRestart(time.Time) bool       { return f.current <= f.attempts }
func (f *fixedDelay) backoff(time.Time) time.Duration { return f.delay }
func (f *fixedDelay) String() string {
	return fmt.Sprintf("FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=%d, backoffTimeMS=%d)", f.attempts, f.delay.Milliseconds())
}

// failureRate is FailureRateRestartBackoffTimeStrategy: it restarts unless
// more than max failures fell within interval.
type failureRate struct {
	max             int
	interval, delay time.Duration
	failures        []time.Time
}

func (f *failureRate) notifyFailure(now time.Time) {
	if len(f.failures) > f.max {
		f.failures = f.failures[1:]
	}
	f.failures = append(f.failures, now)
}

func (f *failureRate) canRestart(now time.Time) bool {
	if len(f.failures) > f.max {
		return now.Sub(f.failures[0]) > f.interval
	}
	return true
}
func (f *failureRate) backoff(time.Time) time.Duration { return f.delay }
func (f *failureRate) String() string {
	return fmt.Sprintf("FailureRateRestartBackoffTimeStrategy(failuresIntervalMS=%d,backoffTimeMS=%d,maxFailuresPerInterval=%d)", f.interval.Milliseconds(), f.delay.Milliseconds(), f.max)
}

// exponentialDelay is ExponentialDelayRestartBackoffTimeStrategy. Before
// 1.19 it always restarts, multiplying the backoff unless the last failure
// is older than the reset threshold. From 1.19 (FLIP-364) failures within a
// pending restart merge into one attempt, the backoff is initial ×
// multiplier^attempt, and after attempts-before-reset-backoff attempts
// without a reset the job fails.
type exponentialDelay struct {
	v119                bool
	initial, max, reset time.Duration
	multiplier, jitter  float64
	attempts            int
	current             time.Duration // before 1.19
	lastFailure         time.Time     // before 1.19
	attempt             int           // from 1.19
	nextRestart         time.Time     // from 1.19
	hasFailed           bool
}

func (e *exponentialDelay) notifyFailure(now time.Time) {
	if !e.v119 {
		if e.hasFailed && now.Sub(e.lastFailure) < e.reset+e.current {
			if e.current < e.max {
				e.current = time.Duration(float64(e.current) * e.multiplier)
			}
			e.current = max(e.initial, min(e.current, e.max))
		} else {
			e.current = e.initial
		}
		e.lastFailure, e.hasFailed = now, true
		return
	}
	if e.hasFailed && !now.After(e.nextRestart) {
		return
	}
	if !e.hasFailed || now.Sub(e.nextRestart) >= e.reset {
		e.attempt = 0
	}
	base := time.Duration(float64(e.initial) * math.Pow(e.multiplier, float64(e.attempt)))
	e.nextRestart = now.Add(max(e.initial, min(base+e.jitterOf(base), e.max)))
	e.attempt++
	e.hasFailed = true
}

func (e *exponentialDelay) canRestart(time.Time) bool {
	return !e.v119 || e.attempt <= e.attempts
}

func (e *exponentialDelay) backoff(now time.Time) time.Duration {
	if !e.v119 {
		return min(e.current+e.jitterOf(e.current), e.max)
	}
	return max(0, e.nextRestart.Sub(now))
}

// jitterOf is a random offset in [-jitter×d, jitter×d], against a
// thundering herd of restarts.
func (e *exponentialDelay) jitterOf(d time.Duration) time.Duration {
	off := int64(float64(d.Milliseconds()) * e.jitter)
	if off <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(2*off+1)-off) * time.Millisecond
}

func (e *exponentialDelay) String() string {
	return fmt.Sprintf("ExponentialDelayRestartBackoffTimeStrategy(initialBackoffMS=%d, maxBackoffMS=%d, backoffMultiplier=%g, resetBackoffThresholdMS=%d, jitterFactor=%g)",
		e.initial.Milliseconds(), e.max.Milliseconds(), e.multiplier, e.reset.Milliseconds(), e.jitter)
}

// Package flinkmemory derives a Flink process's memory as Flink does before
// it starts the JVM (BashJavaUtils runs TaskExecutorProcessUtils and
// JobManagerProcessUtils, which follow ProcessMemoryUtils), so that a
// configuration Flink would refuse is refused at admission instead of
// crash-looping its pods. It reads the options the way Flink's
// Configuration does: an option is set when its key or one of its
// deprecated keys is; otherwise its default applies.
//
// The memory options, their defaults and their deprecated keys are the
// same in every supported minor (1.17 to 2.2; the tests hold this table to
// each minor's own option tables). The legacy heap keys of 1.x
// (taskmanager.heap.size, jobmanager.heap.size) never apply: the operator
// always sets the total process memory, and MemoryBackwardsCompatibilityUtils
// maps them only when it is unset.
package flinkmemory

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// option is one memory option: its default ("" for none) and the keys it
// also reads (TaskManagerOptions, JobManagerOptions).
type option struct {
	def        string
	deprecated []string
}

// Options are the memory options the derivation reads.
var Options = map[string]option{
	"taskmanager.memory.process.size":            {},
	"taskmanager.memory.flink.size":              {},
	"taskmanager.memory.framework.heap.size":     {def: "128 mb"},
	"taskmanager.memory.framework.off-heap.size": {def: "128 mb"},
	"taskmanager.memory.task.heap.size":          {},
	"taskmanager.memory.task.off-heap.size":      {def: "0 bytes"},
	"taskmanager.memory.managed.size":            {deprecated: []string{"taskmanager.memory.size"}},
	"taskmanager.memory.managed.fraction":        {def: "0.4"},
	"taskmanager.memory.network.min":             {def: "64 mb", deprecated: []string{"taskmanager.network.memory.min"}},
	"taskmanager.memory.network.max":             {def: "infinite", deprecated: []string{"taskmanager.network.memory.max"}},
	"taskmanager.memory.network.fraction":        {def: "0.1", deprecated: []string{"taskmanager.network.memory.fraction"}},
	"taskmanager.memory.jvm-metaspace.size":      {def: "256 mb"},
	"taskmanager.memory.jvm-overhead.min":        {def: "192 mb"},
	"taskmanager.memory.jvm-overhead.max":        {def: "1 gb"},
	"taskmanager.memory.jvm-overhead.fraction":   {def: "0.1"},
	"jobmanager.memory.process.size":             {},
	"jobmanager.memory.flink.size":               {},
	"jobmanager.memory.heap.size":                {},
	"jobmanager.memory.off-heap.size":            {def: "128 mb"},
	"jobmanager.memory.jvm-metaspace.size":       {def: "256 mb"},
	"jobmanager.memory.jvm-overhead.min":         {def: "192 mb"},
	"jobmanager.memory.jvm-overhead.max":         {def: "1 gb"},
	"jobmanager.memory.jvm-overhead.fraction":    {def: "0.1"},
}

// TaskManager is what TaskExecutorProcessUtils derives, in bytes.
type TaskManager struct {
	Process, Flink                  int64
	FrameworkHeap, FrameworkOffHeap int64
	TaskHeap, TaskOffHeap           int64
	Network, Managed                int64
	Metaspace, Overhead             int64
}

// JobManager is what JobManagerProcessUtils derives, in bytes.
type JobManager struct {
	Process, Flink      int64
	Heap, OffHeap       int64
	Metaspace, Overhead int64
}

// Error is Flink's refusal: the message its IllegalConfigurationException
// gives, and the configuration keys the derivation read that were set.
type Error struct {
	Message string
	// Set are the memory keys set in the configuration, which decide the
	// derivation (a user's fraction or size, or the process size).
	Set []string
}

func (e *Error) Error() string { return e.Message }

// conf is a flat Flink configuration.
type conf map[string]string

// raw is the option's own value or its first deprecated key's
// (Configuration#getRawValueFromOption).
func (c conf) raw(key string) (string, bool) {
	if v, ok := c[key]; ok {
		return v, true
	}
	for _, k := range Options[key].deprecated {
		if v, ok := c[k]; ok {
			return v, true
		}
	}
	return "", false
}

// set lists the keys (or deprecated keys) of options that are set.
func (c conf) set(prefix string) []string {
	var out []string
	for key, o := range Options {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		for _, k := range append([]string{key}, o.deprecated...) {
			if _, ok := c[k]; ok {
				out = append(out, k)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// size is a MemorySize option: set, else its default; ok is false when it
// has neither.
func (c conf) size(key string) (bytes int64, ok bool, err error) {
	v, set := c.raw(key)
	if !set {
		v = Options[key].def
		if v == "" {
			return 0, false, nil
		}
		if v == "infinite" {
			// MemorySize.MAX_VALUE, printed "infinite" by the docs.
			return math.MaxInt64, true, nil
		}
	}
	n, err := ParseSize(v)
	if err != nil {
		return 0, true, fmt.Errorf("Could not parse value '%s' for key '%s': %w", v, key, err)
	}
	return n, true, nil
}

// fraction is a Float option (Configuration#getFloat), widened to the
// double that RangeFraction holds.
func (c conf) fraction(key string) (float64, error) {
	v, set := c.raw(key)
	if !set {
		v = Options[key].def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
	if err != nil {
		return 0, fmt.Errorf("Could not parse value '%s' for key '%s': %w", v, key, err)
	}
	return float64(float32(f)), nil
}

// units are MemorySize.MemoryUnit's names.
var units = map[string]int64{
	"b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

// ParseSize is MemorySize#parseBytes: digits, then an optional unit (any
// case, spaces allowed around it); no unit is bytes.
func ParseSize(text string) (int64, error) {
	t := strings.TrimSpace(text)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("text does not start with a number")
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("The value '%s' cannot be re represented as 64bit number (numeric overflow).", t[:i])
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	mult := int64(1)
	if unit != "" {
		m, ok := units[unit]
		if !ok {
			return 0, fmt.Errorf("Memory size unit '%s' does not match any of the recognized units: (b | bytes) / (k | kb | kibibytes) / (m | mb | mebibytes) / (g | gb | gibibytes) / (t | tb | tebibytes)", unit)
		}
		mult = m
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("The value '%s' cannot be re represented as 64bit number of bytes (numeric overflow).", text)
	}
	return n * mult, nil
}

// Human is MemorySize#toHumanReadableString: the largest unit the size
// exceeds, to three decimals of the double bytes/unit, rounded half up
// (Java's Formatter), then the bytes.
func Human(b int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if b > u.mult {
			return fmt.Sprintf("%s%s (%d bytes)", halfUp3(float64(b)/float64(u.mult)), u.name, b)
		}
	}
	return fmt.Sprintf("%d bytes", b)
}

// halfUp3 formats a non-negative double with three decimals, rounding its
// exact value half up, as Java's %.3f does.
func halfUp3(f float64) string {
	r, _ := new(big.Float).SetFloat64(f).Rat(nil)
	r.Mul(r, big.NewRat(2000, 1))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	n.Add(n, big.NewInt(1))
	n.Quo(n, big.NewInt(2))
	s := n.String()
	for len(s) < 4 {
		s = "0" + s
	}
	return s[:len(s)-3] + "." + s[len(s)-3:]
}

// multiply is MemorySize#multiply: BigDecimal.valueOf(bytes) ×
// BigDecimal.valueOf(multiplier), truncated to a long.
func multiply(bytes int64, multiplier float64) int64 {
	m, _ := new(big.Rat).SetString(strconv.FormatFloat(multiplier, 'g', -1, 64))
	p := new(big.Rat).Mul(new(big.Rat).SetInt64(bytes), m)
	return new(big.Int).Quo(p.Num(), p.Denom()).Int64()
}

// add is MemorySize#add, which fails on overflow (Math.addExact).
func add(parts ...int64) (int64, error) {
	sum := int64(0)
	for _, p := range parts {
		if p > 0 && sum > math.MaxInt64-p {
			return 0, fmt.Errorf("long overflow")
		}
		sum += p
	}
	return sum, nil
}

// rangeFraction is RangeFraction, built by ProcessMemoryUtils#getRangeFraction.
type rangeFraction struct {
	min, max int64
	fraction float64
}

func (c conf) rangeFraction(minKey, maxKey, fractionKey string) (rangeFraction, error) {
	lo, _, err := c.size(minKey)
	if err != nil {
		return rangeFraction{}, err
	}
	hi, _, err := c.size(maxKey)
	if err != nil {
		return rangeFraction{}, err
	}
	f, err := c.fraction(fractionKey)
	if err != nil {
		return rangeFraction{}, err
	}
	if lo > hi || f < 0 || f >= 1 {
		return rangeFraction{}, fmt.Errorf("Inconsistently configured %s (%v) and its min (%s), max (%s) value", fractionKey, f, Human(lo), Human(hi))
	}
	return rangeFraction{lo, hi, f}, nil
}

// withFraction is ProcessMemoryUtils#deriveWithFraction.
func (r rangeFraction) withFraction(base int64) int64 {
	return min(max(multiply(base, r.fraction), r.min), r.max)
}

// withInverseFraction is ProcessMemoryUtils#deriveWithInverseFraction.
func (r rangeFraction) withInverseFraction(base int64) int64 {
	return min(max(multiply(base, r.fraction/(1-r.fraction)), r.min), r.max)
}

func (r rangeFraction) contains(v int64) bool { return v >= r.min && v <= r.max }

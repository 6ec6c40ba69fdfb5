package flinksim

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf"
	"github.com/datapilot/datapilot/internal/flinkconf/flinkoptions"
)

// conf is the configuration one Flink process runs with: the file it read
// from its conf directory when it started, looked up as Flink's
// Configuration does. A process never re-reads it, as Flink never does.
type conf struct {
	version flink.Version
	minor   *flinkoptions.Minor
	values  map[string]string
}

// loadConf reads a conf directory's files as GlobalConfiguration#
// loadConfiguration does for the version: 1.17 and 1.18 read only
// flink-conf.yaml; 1.19 and 1.20 read flink-conf.yaml if it exists (the
// legacy parser), else config.yaml (standard YAML); 2.x reads only
// config.yaml. dir is the directory (FLINK_CONF_DIR) the files are in; a
// nil files is a directory that does not exist.
func loadConf(v flink.Version, files map[string]string, dir string) (*conf, error) {
	m, err := optionTable(v.Line().String())
	if err != nil {
		return nil, fmt.Errorf("Flink %s is not simulated: %w", v, err)
	}
	if dir == "" {
		dir = defaultConfDir
	}
	if files == nil {
		// GlobalConfiguration#loadConfiguration.
		return nil, fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: The given configuration directory name '%s' (%s) does not describe an existing directory.", dir, dir)
	}
	var names []string
	switch {
	case !v.AtLeast(1, 19):
		names = []string{flinkconf.LegacyFileName}
	case !v.AtLeast(2, 0):
		names = []string{flinkconf.LegacyFileName, flinkconf.YAMLFileName}
	default:
		names = []string{flinkconf.YAMLFileName}
	}
	for _, name := range names {
		content, ok := files[name]
		if !ok {
			continue
		}
		values, err := flinkconf.Parse(name, []byte(content))
		if err != nil {
			// YamlParserUtils#loadYamlFile fails the start on a file
			// that is not YAML.
			return nil, fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: Failed to parse %s: %w", name, err)
		}
		return &conf{version: v, minor: m, values: values}, nil
	}
	last := names[len(names)-1]
	file := strings.TrimRight(dir, "/") + "/" + last
	return nil, fmt.Errorf("org.apache.flink.configuration.IllegalConfigurationException: The Flink config file '%s' (%s) does not exist.", file, file)
}

var (
	tablesMu sync.Mutex
	tables   = map[string]*flinkoptions.Minor{}
)

// optionTable loads a minor's option table once: every process of that
// minor reads the same one.
func optionTable(minor string) (*flinkoptions.Minor, error) {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	if m := tables[minor]; m != nil {
		return m, nil
	}
	m, err := flinkoptions.Load(minor)
	if err != nil {
		return nil, err
	}
	tables[minor] = m
	return m, nil
}

// raw is the value of an option's own key, else of the first old key it
// reads (Configuration#getRawValueFromOption).
func (c *conf) raw(option string) (string, bool) {
	if v, ok := c.values[option]; ok {
		return v, true
	}
	for _, k := range c.minor.OldKeys[option] {
		if v, ok := c.values[k]; ok {
			return v, true
		}
	}
	return "", false
}

// value is the configured value or the option's default as this minor's
// table prints it; ok is false when neither exists ("(none)").
func (c *conf) value(option string) (v string, ok bool) {
	if v, ok := c.raw(option); ok {
		return v, true
	}
	o, known := c.minor.Options[option]
	if !known || o.Default == "(none)" {
		return "", false
	}
	return strings.Trim(o.Default, `"`), true
}

// parseErr is Configuration#getOptional's message for a value it cannot
// convert.
func parseErr(option, v string, cause error) error {
	return fmt.Errorf("java.lang.IllegalArgumentException: Could not parse value '%s' for key '%s'. Caused by: %v", v, option, cause)
}

func (c *conf) duration(option string) (time.Duration, bool, error) {
	v, ok := c.value(option)
	if !ok {
		return 0, false, nil
	}
	if c.minor.Options[option].Type == "Long" {
		// Options such as slot.request.timeout were milliseconds as a Long
		// before they became Durations.
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, true, parseErr(option, v, err)
		}
		return time.Duration(n) * time.Millisecond, true, nil
	}
	d, err := parseDuration(v, c.version.AtLeast(2, 1))
	if err != nil {
		return 0, true, parseErr(option, v, err)
	}
	return d, true, nil
}

func (c *conf) integer(option string) (int, error) {
	v, _ := c.value(option)
	if v == "infinite" {
		// The docs print Integer.MAX_VALUE defaults as "infinite"
		// (@Documentation.OverrideDefault).
		return math.MaxInt32, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, parseErr(option, v, err)
	}
	return int(n), nil
}

func (c *conf) float(option string) (float64, error) {
	v, _ := c.value(option)
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, parseErr(option, v, err)
	}
	return f, nil
}

// boolean follows ConfigurationUtils#convertToBoolean: true or false in
// any case, nothing else.
func (c *conf) boolean(option string) (bool, error) {
	v, _ := c.value(option)
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, parseErr(option, v, fmt.Errorf("unrecognized option for boolean: %s", v))
}

// memory is a MemorySize option; set is false when it has no value.
func (c *conf) memory(option string) (bytes int64, set bool, err error) {
	v, ok := c.value(option)
	if !ok {
		return 0, false, nil
	}
	if _, explicit := c.raw(option); !explicit && v == "infinite" {
		// The docs print a MemorySize.MAX_VALUE default (network.max from
		// 1.19) as "infinite" (@Documentation.OverrideDefault).
		return math.MaxInt64, true, nil
	}
	n, err := parseMemorySize(v)
	if err != nil {
		return 0, true, parseErr(option, v, err)
	}
	return n, true, nil
}

// enum reads an Enum option case-insensitively (ConfigurationUtils#
// convertToEnum) and returns its upper-case name.
func (c *conf) enum(option string, values ...string) (string, error) {
	v, _ := c.value(option)
	for _, want := range values {
		if strings.EqualFold(v, want) {
			return want, nil
		}
	}
	return "", parseErr(option, v, fmt.Errorf("Could not parse value for enum. Expected one of: [%s]", strings.Join(values, ", ")))
}

// durationUnits are TimeUtils' unit labels (singular and plural forms).
var durationUnits = map[string]time.Duration{}

func init() {
	for _, u := range []struct {
		d      time.Duration
		labels []string
	}{
		{24 * time.Hour, []string{"d", "day", "days"}},
		{time.Hour, []string{"h", "hour", "hours"}},
		{time.Minute, []string{"min", "m", "minute", "minutes"}},
		{time.Second, []string{"s", "sec", "secs", "second", "seconds"}},
		{time.Millisecond, []string{"ms", "milli", "millis", "millisecond", "milliseconds"}},
		{time.Microsecond, []string{"µs", "micro", "micros", "microsecond", "microseconds"}},
		{time.Nanosecond, []string{"ns", "nano", "nanos", "nanosecond", "nanoseconds"}},
	} {
		for _, l := range u.labels {
			durationUnits[l] = u.d
		}
	}
}

// isoDuration is the subset of java.time.Duration#parse's ISO-8601 form
// that a Flink duration can hold: PnDTnHnMn.nS, non-negative.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?$`)

// splitNumber is the trimmed text, its leading digits and the lower-case
// unit after them, as TimeUtils#parseDuration and MemorySize#parseBytes
// both split their input.
func splitNumber(text string) (t, number, unit string, err error) {
	t = strings.TrimSpace(text)
	if t == "" {
		return "", "", "", fmt.Errorf("argument is an empty- or whitespace-only string")
	}
	pos := 0
	for pos < len(t) && t[pos] >= '0' && t[pos] <= '9' {
		pos++
	}
	return t, t[:pos], strings.ToLower(strings.TrimSpace(t[pos:])), nil
}

// parseDuration follows TimeUtils#parseDuration: digits, then an optional
// unit label (milliseconds without one); from 2.1 also ISO-8601.
func parseDuration(text string, iso bool) (time.Duration, error) {
	t, number, unit, err := splitNumber(text)
	if err != nil {
		return 0, err
	}
	if number == "" {
		if m := isoDuration.FindStringSubmatch(strings.ToUpper(t)); iso && m != nil && len(t) > 1 && t[len(t)-1] != 'T' {
			var d time.Duration
			for i, scale := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
				if m[i+1] != "" {
					n, _ := strconv.ParseInt(m[i+1], 10, 64)
					d += time.Duration(n) * scale
				}
			}
			if m[5] != "" {
				frac := m[5] + strings.Repeat("0", 9-len(m[5]))
				n, _ := strconv.ParseInt(frac, 10, 64)
				d += time.Duration(n)
			}
			return d, nil
		}
		return 0, fmt.Errorf("text does not start with a number")
	}
	scale := time.Millisecond
	if unit != "" {
		s, ok := durationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("Time interval unit label '%s' does not match any of the recognized units: DAYS: (d | day | days), HOURS: (h | hour | hours), MINUTES: (min | m | minute | minutes), SECONDS: (s | sec | secs | second | seconds), MILLISECONDS: (ms | milli | millis | millisecond | milliseconds), MICROSECONDS: (µs | micro | micros | microsecond | microseconds), NANOSECONDS: (ns | nano | nanos | nanosecond | nanoseconds)", unit)
		}
		scale = s
	}
	n, ok := new(big.Int).SetString(number, 10)
	limit := big.NewInt(int64(math.MaxInt64 / scale))
	if !ok || n.Cmp(limit) > 0 {
		// Go's Duration is shorter than Java's; no Flink setting needs more.
		return 0, fmt.Errorf("The value '%s' cannot be represented as Duration (numeric overflow).", number)
	}
	return time.Duration(n.Int64()) * scale, nil
}

// memoryUnits are MemorySize's unit labels.
var memoryUnits = map[string]int64{
	"b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

// parseMemorySize follows MemorySize#parseBytes: digits, then an optional
// unit (bytes without one).
func parseMemorySize(text string) (int64, error) {
	_, number, unit, err := splitNumber(text)
	if err != nil {
		return 0, err
	}
	if number == "" {
		return 0, fmt.Errorf("text does not start with a number")
	}
	mult := int64(1)
	if unit != "" {
		m, ok := memoryUnits[unit]
		if !ok {
			return 0, fmt.Errorf("Memory size unit '%s' does not match any of the recognized units: (b | bytes) / (k | kb | kibibytes) / (m | mb | mebibytes) / (g | gb | gibibytes) / (t | tb | tebibytes)", unit)
		}
		mult = m
	}
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("The value '%s' cannot be re represented as 64bit number of bytes (numeric overflow).", text)
	}
	return n * mult, nil
}

// humanBytes is MemorySize#toHumanReadableString.
func humanBytes(b int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if b > u.mult {
			return fmt.Sprintf("%.3f%s (%d bytes)", float64(b)/float64(u.mult), u.name, b)
		}
	}
	return fmt.Sprintf("%d bytes", b)
}

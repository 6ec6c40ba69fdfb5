package flinkmemory

import (
	"slices"
	"strings"
	"testing"

	"github.com/datapilot/datapilot/internal/flink"
	"github.com/datapilot/datapilot/internal/flinkconf/flinkoptions"
)

// TestOptionsAreEveryMinorsOwn holds the option table to each supported
// minor's own: the same defaults and deprecated keys, and no memory option
// of a process the derivation does not know. A minor that changes one
// fails here, and the table must then become per minor.
func TestOptionsAreEveryMinorsOwn(t *testing.T) {
	for _, minor := range flink.SupportedMinors {
		m, err := flinkoptions.Load(minor.String())
		if err != nil {
			t.Fatal(err)
		}
		for key, o := range Options {
			got, ok := m.Options[key]
			if !ok {
				t.Errorf("%s: Flink has no option %s", minor, key)
				continue
			}
			def := strings.Trim(got.Default, `"`)
			if def == "(none)" {
				def = ""
			}
			if def != o.def {
				t.Errorf("%s: %s defaults to %q in Flink, %q here", minor, key, def, o.def)
			}
			if !slices.Equal(m.OldKeys[key], o.deprecated) {
				t.Errorf("%s: %s also reads %v in Flink, %v here", minor, key, m.OldKeys[key], o.deprecated)
			}
		}
		for key := range m.Options {
			sizing := strings.HasPrefix(key, "taskmanager.memory.") || strings.HasPrefix(key, "jobmanager.memory.")
			if _, known := Options[key]; sizing && !known && !notSizing[key] {
				t.Errorf("%s: memory option %s is not in the derivation", minor, key)
			}
		}
	}
}

// notSizing are memory options that do not enter the process's sizes.
var notSizing = map[string]bool{
	"jobmanager.memory.enable-jvm-direct-memory-limit":         true,
	"taskmanager.memory.framework.off-heap.batch-shuffle.size": true,
	"taskmanager.memory.managed.consumer-weights":              true,
	"taskmanager.memory.min-segment-size":                      true,
	"taskmanager.memory.segment-size":                          true,
	"taskmanager.memory.starting-segment-size":                 true,
}

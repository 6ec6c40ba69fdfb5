package flinkoptions_test

import (
	"slices"
	"testing"

	"github.com/datapilot/datapilot/internal/flinkconf"
	"github.com/datapilot/datapilot/internal/flinkconf/flinkoptions"
)

func load(t *testing.T, minor string) *flinkoptions.Minor {
	t.Helper()
	m, err := flinkoptions.Load(minor)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKnownFacts checks the loader against facts read off Flink's sources
// (CheckpointingOptions, HighAvailabilityOptions).
func TestKnownFacts(t *testing.T) {
	for _, tc := range []struct {
		minor, key string
		option     bool
		// readBy is the option that reads key as a deprecated or
		// fallback key, if any.
		readBy   string
		fallback bool
	}{
		{minor: "1.17", key: "state.checkpoints.dir", option: true},
		{minor: "1.17", key: "execution.checkpointing.dir"},
		{minor: "1.17", key: "high-availability", readBy: "high-availability.type"},
		{minor: "1.19", key: "state.checkpoints.num-retained", option: true},
		{minor: "1.20", key: "execution.checkpointing.dir", option: true},
		{minor: "1.20", key: "state.checkpoints.dir", readBy: "execution.checkpointing.dir"},
		{minor: "1.20", key: "state.savepoints.dir", readBy: "execution.checkpointing.savepoint-dir"},
		{minor: "1.20", key: "state.checkpoints.num-retained", readBy: "execution.checkpointing.num-retained"},
		{minor: "2.0", key: "state.checkpoints.dir", readBy: "execution.checkpointing.dir"},
		{minor: "2.0", key: "execution.checkpointing.savepoint-dir", option: true},
		{minor: "2.2", key: "s3.access.key", readBy: "s3.access-key", fallback: true},
	} {
		m := load(t, tc.minor)
		if _, ok := m.Options[tc.key]; ok != tc.option {
			t.Errorf("%s: %s is an option: %v, want %v", tc.minor, tc.key, ok, tc.option)
		}
		want := []flinkoptions.Alias(nil)
		if tc.readBy != "" {
			want = []flinkoptions.Alias{{Option: tc.readBy, Fallback: tc.fallback}}
		}
		if got := m.Aliases[tc.key]; !slices.Equal(got, want) {
			t.Errorf("%s: %s is read by %v, want %v", tc.minor, tc.key, got, want)
		}
	}
	if o := load(t, "1.20").Options["execution.checkpointing.num-retained"]; o.Default != "1" || o.Type != "Integer" {
		t.Errorf("1.20 execution.checkpointing.num-retained = %+v, want default 1, type Integer", o)
	}
}

// TestOldKeys checks the keys each option reads after its own, in order
// (CheckpointingOptions, HighAvailabilityOptions, RestartStrategyOptions).
func TestOldKeys(t *testing.T) {
	for _, tc := range []struct {
		minor, option string
		want          []string
	}{
		{"1.17", "state.checkpoints.dir", []string{"state.backend.fs.checkpointdir"}},
		{"1.20", "execution.checkpointing.dir", []string{"state.checkpoints.dir", "state.backend.fs.checkpointdir"}},
		{"2.0", "execution.checkpointing.savepoint-dir", []string{"state.savepoints.dir", "savepoints.state.backend.fs.dir"}},
		{"1.17", "high-availability.type", []string{"recovery.mode", "high-availability"}},
		{"2.2", "restart-strategy.type", []string{"restart-strategy"}},
		{"2.2", "rest.async.store-duration", nil},
	} {
		if got := load(t, tc.minor).OldKeys[tc.option]; !slices.Equal(got, tc.want) {
			t.Errorf("%s %s reads %v, want %v", tc.minor, tc.option, got, tc.want)
		}
	}
}

func TestEveryMinorLoads(t *testing.T) {
	for _, minor := range flinkoptions.Minors {
		m := load(t, minor)
		// Sizes from the README's table of the reference data.
		if len(m.Options) < 650 {
			t.Errorf("%s: only %d options", minor, len(m.Options))
		}
		want := "config.yaml"
		if minor == "1.17" || minor == "1.18" {
			want = "flink-conf.yaml"
		}
		if m.DefaultConfName != want {
			t.Errorf("%s: default conf %s, want %s", minor, m.DefaultConfName, want)
		}
	}
	if _, err := flinkoptions.Load("1.16"); err == nil {
		t.Error("1.16 loaded, but its tables are not held here")
	}
}

// TestDefaultConfReadsAsOptions parses the file each distribution ships
// with that minor's parser: every key must be an option of that minor. This
// checks the parsers and the tables against Flink's own file.
func TestDefaultConfReadsAsOptions(t *testing.T) {
	for _, minor := range flinkoptions.Minors {
		t.Run(minor, func(t *testing.T) {
			m := load(t, minor)
			settings, err := flinkconf.Parse(m.DefaultConfName, m.DefaultConf)
			if err != nil {
				t.Fatal(err)
			}
			// Every default file sets at least these.
			for key, want := range map[string]string{
				"jobmanager.rpc.port":             "6123",
				"jobmanager.memory.process.size":  "1600m",
				"taskmanager.memory.process.size": "1728m",
				"taskmanager.numberOfTaskSlots":   "1",
				"parallelism.default":             "1",
			} {
				if settings[key] != want {
					t.Errorf("%s = %q, want %q", key, settings[key], want)
				}
			}
			for key := range settings {
				if _, ok := m.Options[key]; !ok {
					t.Errorf("%s sets %s, which is no option of %s", m.DefaultConfName, key, minor)
				}
			}
		})
	}
}

package flink

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an exact Flink release, major.minor.patch.
type Version struct{ Major, Minor, Patch int }

// ParseVersion parses "1.17.1". The API server already refused anything
// else, so an error here means the object bypassed validation.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("flink version %q is not major.minor.patch", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("flink version %q is not major.minor.patch", s)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v is major.minor or newer.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// Keys are the configuration keys whose names changed across the supported
// Flink minors. The spec states intent (an interval, a retention); these
// say how the running version spells it. Every key here exists in the
// option table of each supported minor it is used for (tested against
// flink-reference's options.tsv), never as a deprecated alias.
type Keys struct {
	// File is the configuration file the official image reads.
	File string
	// YAML is true when File is standard YAML (config.yaml), so values must
	// be quoted as YAML scalars; flink-conf.yaml takes values verbatim.
	YAML                bool
	CheckpointInterval  string
	CheckpointsRetained string
	CheckpointsDir      string
	SavepointsDir       string
	// CheckpointRetention says whether a cancel deletes the externalized
	// checkpoints (CheckpointingOptions: NO_EXTERNALIZED_CHECKPOINTS by
	// default, so a last-state restore would find none).
	CheckpointRetention  string
	HighAvailabilityType string
}

// KeysFor returns the keys for a supported version. (The reference
// design says versions before 1.14 set the interval through
// state.backend.fs.checkpoint.interval; no Flink release has that key,
// and those versions are not supported anyway.)
func KeysFor(v Version) Keys {
	k := Keys{
		File:                 "flink-conf.yaml",
		CheckpointInterval:   "execution.checkpointing.interval",
		CheckpointsRetained:  "state.checkpoints.num-retained",
		CheckpointsDir:       "state.checkpoints.dir",
		SavepointsDir:        "state.savepoints.dir",
		CheckpointRetention:  LastStateRetentionKey,
		HighAvailabilityType: "high-availability.type",
	}
	if v.AtLeast(1, 19) {
		// 1.19 introduced the standard-YAML config.yaml; the official image
		// reads it from 1.19 on and 2.x reads nothing else.
		k.File = "config.yaml"
		k.YAML = true
	}
	if v.AtLeast(1, 20) {
		// CheckpointingOptions moved these under execution.checkpointing.*
		// in 1.20; the old names are deprecated keys there and gone in 2.0.
		k.CheckpointsRetained = "execution.checkpointing.num-retained"
		k.CheckpointsDir = "execution.checkpointing.dir"
		k.SavepointsDir = "execution.checkpointing.savepoint-dir"
	}
	return k
}

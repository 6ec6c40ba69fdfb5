// Package flinkconf holds Flink's rules for reading its configuration file:
// the line-based flink-conf.yaml of Flink 1.17 and 1.18 and the
// standard-YAML config.yaml of Flink 1.19 and later, each read into the
// string every key holds when Flink runs with that file, and what follows
// for writing one (YAMLScalar, LegacyCarries).
package flinkconf

import (
	"fmt"
	"path"
)

// File names Flink looks for in its conf directory
// (GlobalConfiguration#loadConfiguration).
const (
	LegacyFileName = "flink-conf.yaml"
	YAMLFileName   = "config.yaml"
)

// Parse reads a configuration file by its name: flink-conf.yaml with the
// legacy line parser, config.yaml as standard YAML. Lines the legacy parser
// skips are left out, as Flink leaves them out.
func Parse(fileName string, content []byte) (map[string]string, error) {
	switch path.Base(fileName) {
	case LegacyFileName:
		settings, _ := ParseLegacy(content)
		return settings, nil
	case YAMLFileName:
		return ParseYAML(content)
	}
	return nil, fmt.Errorf("%s is not a Flink configuration file (want %s or %s)", fileName, LegacyFileName, YAMLFileName)
}

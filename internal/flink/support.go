package flink

import (
	"fmt"
	"strings"
)

// Minor is a Flink minor release line, such as 1.20.
type Minor struct{ Major, Minor int }

func (m Minor) String() string { return fmt.Sprintf("%d.%d", m.Major, m.Minor) }

// SupportedMinors are the Flink minors Datapilot renders, runs and tests,
// oldest first. Each has a golden rendering checked against that minor's
// option tables. 1.17 is the oldest: it is the first with the REST
// checkpoint trigger and high-availability.type, and the last minors before
// it are out of Flink's own support. The admission rule on spec.version
// (SupportedVersionRule) is generated from this list.
var SupportedMinors = []Minor{{1, 17}, {1, 18}, {1, 19}, {1, 20}, {2, 0}, {2, 1}, {2, 2}}

// Line is the minor release line of v.
func (v Version) Line() Minor { return Minor{v.Major, v.Minor} }

// Supported reports whether v belongs to a supported minor.
func Supported(v Version) bool {
	for _, m := range SupportedMinors {
		if m == v.Line() {
			return true
		}
	}
	return false
}

// SupportedRange is the matrix in words, for messages: "1.17 to 2.2".
func SupportedRange() string {
	return SupportedMinors[0].String() + " to " + SupportedMinors[len(SupportedMinors)-1].String()
}

// SupportedVersionRule is the CEL rule that admits exactly the versions of
// the supported minors. It avoids backslashes, which would need escaping
// twice (Go marker string, then CEL string).
func SupportedVersionRule() string {
	return fmt.Sprintf("self.matches('^%s[.][0-9]+$')", minorsPattern(func(Minor) bool { return true }))
}

// minorsPattern is a regular expression, without backslashes, matching
// "major.minor" of the supported minors that keep holds for.
func minorsPattern(keep func(Minor) bool) string {
	byMajor := map[int][]string{}
	var majors []int
	for _, m := range SupportedMinors {
		if !keep(m) {
			continue
		}
		if _, ok := byMajor[m.Major]; !ok {
			majors = append(majors, m.Major)
		}
		byMajor[m.Major] = append(byMajor[m.Major], fmt.Sprint(m.Minor))
	}
	alts := make([]string, 0, len(majors))
	for _, maj := range majors {
		alts = append(alts, fmt.Sprintf("%d[.](%s)", maj, strings.Join(byMajor[maj], "|")))
	}
	return "(" + strings.Join(alts, "|") + ")"
}

// LegacyFileRule is the CEL rule on the spec that refuses, for the minors
// whose file is the legacy flink-conf.yaml, values that file cannot carry.
// Flink's line parser (GlobalConfiguration#loadYAMLResource before 1.19)
// cuts each line at the first '#', splits it at the first ": " and trims
// both sides, and skips a line whose value is then empty: such a value
// would reach Flink changed or not at all.
func LegacyFileRule() string {
	return fmt.Sprintf("!has(self.flinkConfiguration) || !self.version.matches('%s') || !self.flinkConfiguration.exists(k, %s)",
		legacyVersions(), legacyUnfit("self.flinkConfiguration[k]"))
}

// LegacyFileMessage names the values LegacyFileRule refuses.
func LegacyFileMessage() string {
	return fmt.Sprintf("'spec.flinkConfiguration: Flink ' + self.version + ' reads flink-conf.yaml, which cannot carry an empty value, a value with #, or one that starts or ends with a space; refused: ' + self.flinkConfiguration.filter(k, %s)[0]",
		legacyUnfit("self.flinkConfiguration[k]"))
}

func legacyUnfit(v string) string {
	return fmt.Sprintf("size(%[1]s) == 0 || %[1]s.contains('#') || %[1]s.startsWith(' ') || %[1]s.endsWith(' ')", v)
}

// legacyVersions matches the versions of the supported minors that read
// flink-conf.yaml.
func legacyVersions() string {
	return "^" + minorsPattern(func(m Minor) bool { return !KeysFor(Version{m.Major, m.Minor, 0}).YAML }) + "[.]"
}

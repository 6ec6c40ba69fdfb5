package flinkconf

import (
	"fmt"
	"strings"
)

// Skipped is a line of a flink-conf.yaml that Flink ignores with a warning.
type Skipped struct {
	// Line is 1-based, as Flink's warning counts it.
	Line   int
	Reason string
}

// ParseLegacy reads a flink-conf.yaml the way Flink 1.17 and 1.18 do
// (GlobalConfiguration#loadYAMLResource; 1.19 and 1.20 keep the same loop as
// loadLegacyYAMLResource). It is not a YAML parser: each line is cut at its
// first '#', trimmed, split at its first ": ", and key and value are trimmed
// again. Lines without ": " and lines whose key or value is empty are skipped
// (Flink only logs a warning); a later duplicate key wins
// (Configuration#setString). Nothing is unquoted: a value reads exactly as the
// bytes between ": " and the comment.
//
// The content is taken as UTF-8, which is what the official images' JVM
// reads (their base image sets a UTF-8 locale).
func ParseLegacy(content []byte) (map[string]string, []Skipped) {
	settings := map[string]string{}
	var skipped []Skipped
	for i, line := range readLines(string(content)) {
		// String#split("#", 2): everything from the first '#' on is a
		// comment, even inside what looks like a quoted value.
		conf, _, _ := strings.Cut(line, "#")
		conf = javaTrim(conf)
		if conf == "" {
			continue
		}
		key, value, ok := strings.Cut(conf, ": ")
		if !ok {
			skipped = append(skipped, Skipped{Line: i + 1, Reason: "line is not a key-value pair (missing space after ':'?)"})
			continue
		}
		key, value = javaTrim(key), javaTrim(value)
		if key == "" || value == "" {
			skipped = append(skipped, Skipped{Line: i + 1, Reason: "key or value was empty"})
			continue
		}
		settings[key] = value
	}
	return settings, skipped
}

// readLines splits like java.io.BufferedReader#readLine: a line ends at
// "\n", "\r" or "\r\n", and a final line needs no terminator.
func readLines(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

// javaTrim is java.lang.String#trim: it strips every character up to and
// including U+0020 (space, tab and all other control characters) from both
// ends, and nothing else (no Unicode spaces).
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// LegacyCarries reports whether a flink-conf.yaml line "key: value" reads
// back as exactly that key and value. It is false for an empty string, for
// any '#' (the rest of the line is a comment), for a line break ("\n" or
// "\r": the line ends there) and for a leading or trailing character up to
// U+0020 (trimmed away). A key must also not contain ": " (the first one
// splits the line).
func LegacyCarries(key, value string) error {
	for _, s := range []struct{ what, v string }{{"key", key}, {"value", value}} {
		switch {
		case s.v == "":
			return fmt.Errorf("the %s is empty", s.what)
		case strings.Contains(s.v, "#"):
			return fmt.Errorf("the %s contains '#', which starts a comment", s.what)
		case strings.ContainsAny(s.v, "\r\n"):
			return fmt.Errorf("the %s contains a line break", s.what)
		case javaTrim(s.v) != s.v:
			return fmt.Errorf("the %s starts or ends with whitespace or a control character, which is trimmed", s.what)
		}
	}
	if strings.Contains(key, ": ") {
		return fmt.Errorf("the key contains \": \", which splits the line")
	}
	return nil
}

package flinkconf

import "strings"

// YAMLScalar writes s as a config.yaml scalar that Flink reads back as
// exactly s. It is plain when s is made only of letters, digits and "._/-"
// and a plain scalar with that text reads back as itself (host names, paths,
// sizes such as 1600m, ports, 1.5, true); everything else is double-quoted
// the way snakeyaml-engine's Emitter writes it (null, ~, 1.20, True, 0x10,
// an empty string, and any other character). Double quotes carry every
// string: control characters and the characters YAML 1.1 and 1.2 disagree
// on (U+0085, U+2028, U+2029) are escaped.
func YAMLScalar(s string) string {
	if plainSafe(s) && plainReadsBack(s) {
		return s
	}
	return doubleQuoted(s)
}

// plainSafe reports whether s can stand as a plain scalar after "key: " or
// as a key at the start of a line: nothing in it is a YAML indicator, and it
// is none of "-" (a sequence entry) and "---" or "..." (document markers).
func plainSafe(s string) bool {
	if s == "" || s == "-" || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/-", r)) {
			return false
		}
	}
	return true
}

// plainReadsBack reports whether a plain scalar with this text reads as the
// same text: a string does; 6123 and true do; 1.20 (read as 1.2), 010, True
// and null do not.
func plainReadsBack(s string) bool {
	v, err := resolvePlain(s)
	if err != nil || v == nil {
		return false
	}
	out, err := toYAMLString(v)
	return err == nil && out == s
}

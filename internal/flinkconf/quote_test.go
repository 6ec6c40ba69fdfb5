package flinkconf

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestYAMLScalar(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		// Plain where the text reads back as itself.
		{"localhost", "localhost"},
		{"0.0.0.0", "0.0.0.0"},
		{"1600m", "1600m"},
		{"6123", "6123"},
		{"1.5", "1.5"},
		{"true", "true"},
		{"/opt/flink", "/opt/flink"},
		{"-x", "-x"},
		// Quoted where plain would read as something else.
		{"null", `"null"`},
		{"Null", `"Null"`},
		{"1.20", `"1.20"`},
		{"True", `"True"`},
		{"0x10", `"0x10"`},
		{"010", `"010"`},
		{"-0", `"-0"`},
		{"1e5", `"1e5"`},
		{".inf", ".inf"}, // Double infinity prints as .inf again
		{".Inf", `".Inf"`},
		{"-", `"-"`},
		{"---", `"---"`},
		{"...", `"..."`},
		{"", `""`},
		// Quoted for characters outside the plain-safe set.
		{"~", `"~"`},
		{"s3://b/p", `"s3://b/p"`},
		{"a \"q\" \\", `"a \"q\" \\"`},
		{"t\tn\nr\r\x00\x07\x1b", `"t\tn\nr\r\0\a\e"`},
		{"\x7f\u0085\u00a0\u2028\u2029", `"\x7f\N\_\L\P"`},
		{"žluť 😀", `"žluť 😀"`},
	} {
		if got := YAMLScalar(tc.in); got != tc.want {
			t.Errorf("YAMLScalar(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestYAMLScalarEveryRune writes every Unicode scalar value as a config.yaml
// value and reads it back.
func TestYAMLScalarEveryRune(t *testing.T) {
	const perDocument = 4096
	for start := rune(0); start <= utf8.MaxRune; start += perDocument {
		var doc strings.Builder
		want := map[string]string{}
		for r := start; r < start+perDocument && r <= utf8.MaxRune; r++ {
			if !utf8.ValidRune(r) {
				continue // surrogates
			}
			key := fmt.Sprintf("k%x", r)
			want[key] = "<" + string(r) + ">"
			fmt.Fprintf(&doc, "%s: %s\n", key, YAMLScalar(want[key]))
		}
		got, err := ParseYAML([]byte(doc.String()))
		if err != nil {
			t.Fatalf("runes from %U: %v", start, err)
		}
		for key, w := range want {
			if got[key] != w {
				t.Errorf("%s: read %q, want %q", key, got[key], w)
			}
		}
	}
}

package flinkconf

import (
	"maps"
	"strings"
	"testing"
)

func TestParseLegacy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    map[string]string
		skipped []int // line numbers Flink warns about
	}{
		{name: "plain", in: "a: b\n", want: map[string]string{"a": "b"}},
		{name: "null is text", in: "a: null\nb: ~\n", want: map[string]string{"a": "null", "b": "~"}},
		{name: "numbers and booleans are text", in: "a: 1.20\nb: true\nc: 0x10\n", want: map[string]string{"a": "1.20", "b": "true", "c": "0x10"}},
		{name: "quotes are kept", in: "a: \"quoted\"\nb: 'single'\n", want: map[string]string{"a": `"quoted"`, "b": "'single'"}},
		{name: "split at the first colon-space", in: "a: b: c\n", want: map[string]string{"a": "b: c"}},
		{name: "colon without space is no separator", in: "a:b\nurl: http://x:80/p\n", want: map[string]string{"url": "http://x:80/p"}, skipped: []int{1}},
		{name: "comment anywhere", in: "a: x # y\nb: pass#word\n# whole line\n", want: map[string]string{"a": "x", "b": "pass"}},
		{name: "hash inside quotes is still a comment", in: "a: \"x#y\"\n", want: map[string]string{"a": `"x`}},
		{name: "trimmed", in: "  a  :   spaced out \t\n", want: map[string]string{"a": "spaced out"}},
		{name: "control characters are trimmed like spaces", in: "a: \x01v\x02\n", want: map[string]string{"a": "v"}},
		{name: "unicode spaces are not trimmed", in: "a: \u00a0v\n", want: map[string]string{"a": "\u00a0v"}},
		{name: "empty value", in: "a: \nb:\nc: \"\"\n", want: map[string]string{"c": `""`}, skipped: []int{1, 2}},
		{name: "empty key", in: ": v\n", want: map[string]string{}, skipped: []int{1}},
		{name: "key without value", in: "jobmanager:\n", want: map[string]string{}, skipped: []int{1}},
		{name: "value that is only a comment", in: "a: #x\n", want: map[string]string{}, skipped: []int{1}},
		{name: "yaml lists and maps are text", in: "a: [x, y]\nb: {k: v}\n", want: map[string]string{"a": "[x, y]", "b": "{k: v}"}},
		{name: "nested yaml is not understood", in: "a:\n  b: c\n", want: map[string]string{"b": "c"}, skipped: []int{1}},
		{name: "later duplicate wins", in: "a: 1\na: 2\n", want: map[string]string{"a": "2"}},
		{name: "CR and CRLF end lines", in: "a: 1\r\nb: 2\rc: 3", want: map[string]string{"a": "1", "b": "2", "c": "3"}},
		{name: "unicode value", in: "a: žluťoučký kůň\n", want: map[string]string{"a": "žluťoučký kůň"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := ParseLegacy([]byte(tc.in))
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			var lines []int
			for _, s := range skipped {
				lines = append(lines, s.Line)
			}
			if !equalInts(lines, tc.skipped) {
				t.Errorf("skipped lines %v, want %v", lines, tc.skipped)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseYAML(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
		err  string // substring of the error; the file makes Flink fail
	}{
		{name: "plain string", in: "a: b\n", want: map[string]string{"a": "b"}},
		{name: "null", in: "a: null\n", err: "null value"},
		{name: "tilde", in: "a: ~\n", err: "null value"},
		{name: "Null and NULL", in: "a: NULL\n", err: "null value"},
		{name: "key without value", in: "a:\n", err: "null value"},
		{name: "explicit null tag", in: "a: !!null x\n", err: "null value"},
		{name: "decimal reads as its Double", in: "a: 1.20\nb: 1e5\nc: .5\nd: -0.0\n", want: map[string]string{"a": "1.2", "b": "100000.0", "c": "0.5", "d": "-0.0"}},
		{name: "large and small doubles print as Java does", in: "a: 12345678.5\nb: 0.0001\n", want: map[string]string{"a": "1.23456785E7", "b": "1.0E-4"}},
		{name: "infinity and nan", in: "a: .inf\nb: -.Inf\nc: .NaN\nd: 1e400\n", want: map[string]string{"a": ".inf", "b": "-.inf", "c": ".nan", "d": ".inf"}},
		{name: "plus infinity fails in Double#valueOf", in: "a: +.inf\n", err: "not a number"},
		{name: "integers", in: "a: 0x10\nb: 0o17\nc: 010\nd: +5\ne: -0\nf: 99999999999999999999999\n", want: map[string]string{"a": "16", "b": "15", "c": "10", "d": "5", "e": "0", "f": "99999999999999999999999"}},
		{name: "yaml 1.1 forms are strings", in: "a: yes\nb: off\nc: 0b11\nd: 1_000\ne: 017e\n", want: map[string]string{"a": "yes", "b": "off", "c": "0b11", "d": "1_000", "e": "017e"}},
		{name: "booleans in any core case", in: "a: true\nb: True\nc: FALSE\n", want: map[string]string{"a": "true", "b": "true", "c": "false"}},
		{name: "quoted scalars are strings", in: "a: \"quoted\"\nb: 'single'\nc: \"1.20\"\nd: 'null'\ne: \"\"\n", want: map[string]string{"a": "quoted", "b": "single", "c": "1.20", "d": "null", "e": ""}},
		{name: "escapes", in: `a: "t\tq\"b\\u\u00e9x\x41e\U0001F600"` + "\nb: 'it''s'\n", want: map[string]string{"a": "t\tq\"b\\u\u00e9xAe\U0001F600", "b": "it's"}},
		{name: "colon-space in a plain value is an error", in: "a: b: c\n", err: "mapping values are not allowed"},
		{name: "colon-space quoted", in: "a: \"b: c\"\n", want: map[string]string{"a": "b: c"}},
		{name: "comment after space", in: "a: x # y\nb: pass#word\n", want: map[string]string{"a": "x", "b": "pass#word"}},
		{name: "spaces around a plain value go", in: "a:    x y   \n", want: map[string]string{"a": "x y"}},
		{name: "spaces kept in quotes", in: "a: \" x \"\n", want: map[string]string{"a": " x "}},
		{name: "empty string", in: "a: ''\n", want: map[string]string{"a": ""}},
		{name: "list reads as its flow dump", in: "a: [x, 1, 1.20, true, null, 'y z', '1']\nb:\n  - p\n  - q\n", want: map[string]string{"a": "[x, 1, 1.2, true, null, y z, '1']", "b": "[p, q]"}},
		{name: "list elements quoted as snakeyaml dumps them", in: "a: ['', ' s', 'a: b', 'x#y', 'x #y', '-', '-x', \"t\\tb\", \"l\\nb\", '${V}', 'it''s', '[x]']\n", want: map[string]string{"a": `['', ' s', 'a: b', x#y, 'x #y', '-', -x, "t\tb", "l\nb", '${V}', it's, '[x]']`}},
		{name: "nested collections in a list", in: "a: [[x, y], {k: v, n: [1]}, []]\n", want: map[string]string{"a": "[[x, y], {k: v, n: [1]}, []]"}},
		{name: "empty list", in: "a: []\n", want: map[string]string{"a": "[]"}},
		{name: "nested mapping flattens", in: "a:\n  b:\n    c: 1\n  d: x\n", want: map[string]string{"a.b.c": "1", "a.d": "x"}},
		{name: "flow mapping flattens", in: "a: {b: c}\n", want: map[string]string{"a.b": "c"}},
		{name: "empty mapping adds no key", in: "a: {}\nb: 1\n", want: map[string]string{"b": "1"}},
		{name: "flattened collision takes the later value", in: "a.b: 1\na:\n  b: 2\n", want: map[string]string{"a.b": "2"}},
		{name: "duplicate key", in: "a: 1\na: 2\n", err: "duplicate key"},
		{name: "duplicate by constructed key", in: "1: a\n01: b\n", err: "duplicate key"},
		{name: "int and string keys differ", in: "1: a\n\"1\": b\n", want: map[string]string{"1": "b"}},
		{name: "non-string keys print as Java does", in: "1: a\ntrue: b\n1.5: c\n~: d\n", want: map[string]string{"1": "a", "true": "b", "1.5": "c", "null": "d"}},
		{name: "anchor and alias", in: "a: &x v\nb: *x\n", want: map[string]string{"a": "v", "b": "v"}},
		{name: "alias of a mapping", in: "a: &m {k: v}\nb: *m\n", want: map[string]string{"a.k": "v", "b.k": "v"}},
		{name: "undefined alias", in: "a: *x\n", err: "unknown anchor"},
		{name: "anchor without value", in: "a: &x\n", err: "null value"},
		{name: "unknown tag", in: "a: !x\n", err: "could not determine a constructor"},
		{name: "str tag", in: "a: !!str 1.20\n", want: map[string]string{"a": "1.20"}},
		{name: "float tag", in: "a: !!float 1\n", want: map[string]string{"a": "1.0"}},
		{name: "int tag on a non-integer", in: "a: !!int x\n", err: "not an integer"},
		{name: "merge key is a plain key in YAML 1.2", in: "<<: 1\n", want: map[string]string{"<<": "1"}},
		{name: "env syntax is a string", in: "a: ${HOME}\n", want: map[string]string{"a": "${HOME}"}},
		{name: "reserved indicators", in: "a: @x\n", err: "cannot start any token"},
		{name: "backquote", in: "a: `x\n", err: "cannot start any token"},
		{name: "directive character", in: "a: %x\n", err: "cannot start any token"},
		{name: "block scalars", in: "a: |\n  l1\n  l2\nb: >\n  f1\n  f2\n", want: map[string]string{"a": "l1\nl2\n", "b": "f1 f2\n"}},
		{name: "empty file", in: "", want: map[string]string{}},
		{name: "only comments", in: "# nothing\n", want: map[string]string{}},
		{name: "top-level list", in: "- a\n", err: "not a mapping"},
		{name: "two documents", in: "a: 1\n---\nb: 2\n", err: "single document"},
		{name: "raw line separator", in: "a: \"x\u2028y\"\n", err: "raw U+2028"},
		{name: "escaped line separator", in: "a: \"x\\Ly\"\n", want: map[string]string{"a": "x\u2028y"}},
		{name: "unicode", in: "a: žluťoučký kůň 🐎\n", want: map[string]string{"a": "žluťoučký kůň 🐎"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseYAML([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q (got %q)", err, tc.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseByFileName(t *testing.T) {
	content := []byte("a: 1.20 # c\n")
	for _, tc := range []struct {
		file, want string
	}{
		{"flink-conf.yaml", "1.20"},
		{"/opt/flink/conf/flink-conf.yaml", "1.20"},
		{"config.yaml", "1.2"},
	} {
		got, err := Parse(tc.file, content)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got["a"] != tc.want {
			t.Errorf("%s: a = %q, want %q", tc.file, got["a"], tc.want)
		}
	}
	if _, err := Parse("log4j.properties", content); err == nil {
		t.Error("an unknown file name parsed")
	}
}

func TestLegacyCarries(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{"a", "b", true},
		{"a", "b: c", true},
		{"a", "'q'", true},
		{"a", "x\x01y", true},
		{"a", "", false},
		{"a", "x#y", false},
		{"a", " x", false},
		{"a", "x\t", false},
		{"a", "x\ny", false},
		{"a", "x\ry", false},
		{"a", "\x00x", false},
		{"a: b", "c", false},
		{"#a", "c", false},
		{"", "c", false},
	} {
		err := LegacyCarries(tc.key, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("LegacyCarries(%q, %q) = %v, want ok=%v", tc.key, tc.value, err, tc.ok)
		}
		// The rule must agree with the parser.
		got, _ := ParseLegacy([]byte(tc.key + ": " + tc.value + "\n"))
		roundTrips := len(got) == 1 && got[tc.key] == tc.value
		if roundTrips != tc.ok {
			t.Errorf("%q: %q parsed as %q; LegacyCarries says ok=%v", tc.key, tc.value, got, tc.ok)
		}
	}
}

// TestFlinkOwnCases replays the inputs of Flink's own tests and expects
// what those tests assert: GlobalConfigurationTest
// #testConfigurationWithLegacyYAML and #testConfigurationWithStandardYAML,
// YamlParserUtilsTest#testYaml12Features and #testToYAMLString (1.19).
func TestFlinkOwnCases(t *testing.T) {
	legacy, _ := ParseLegacy([]byte(strings.Join([]string{
		"###########################",
		"# Some : comments : to skip",
		"mykey1: myvalue1",
		"mykey2       : myvalue2",
		"mykey3:myvalue3",
		" some nonsense without colon and whitespace separator",
		" :  ",
		"   ",
		"mykey4: myvalue4# some comments",
		"   mykey5    :    myvalue5    ",
		"mykey6: my: value6",
		"mykey7: ",
		": myvalue8",
		"mykey9: myvalue9",
		"mykey9: myvalue10",
	}, "\n")))
	if want := map[string]string{
		"mykey1": "myvalue1", "mykey2": "myvalue2", "mykey4": "myvalue4",
		"mykey5": "myvalue5", "mykey6": "my: value6", "mykey9": "myvalue10",
	}; !maps.Equal(legacy, want) {
		t.Errorf("legacy: got %q, want %q", legacy, want)
	}

	standard, err := ParseYAML([]byte(strings.Join([]string{
		"Key1: ",
		"    Key2: v1",
		"    Key3: 'v2'",
		"Key4: 1",
		"Key5: '1'",
		"Key6: '*'",
		"Key7: true",
		"Key8: 'true'",
		"Key9: [a, b, '*', 1, '2',  true, 'true']",
		"Key10: {k1: v1, k2: '2', k3: 3}",
		"Key11: [{k1: v1, k2: '2', k3: 3}, {k4: true}]",
		"yes: Yes", "y: y", "on: on", "underline: 1_000", "octal1: 010", "octal2: 0o10",
		"binary: 0b101", "sexagesimal: 1:00",
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{
		"Key1.Key2": "v1", "Key1.Key3": "v2", "Key4": "1", "Key5": "1", "Key6": "*",
		"Key7": "true", "Key8": "true",
		"Key9":     "[a, b, '*', 1, '2', true, 'true']",
		"Key10.k1": "v1", "Key10.k2": "2", "Key10.k3": "3",
		"Key11": "[{k1: v1, k2: '2', k3: 3}, {k4: true}]",
		"yes":   "Yes", "y": "y", "on": "on", "underline": "1_000", "octal1": "10", "octal2": "8",
		"binary": "0b101", "sexagesimal": "1:00",
	}; !maps.Equal(standard, want) {
		t.Errorf("standard: got %q, want %q", standard, want)
	}

	if got, err := ParseYAML([]byte("a: ['*', '123', 'true']\n")); err != nil || got["a"] != "['*', '123', 'true']" {
		t.Errorf("toYAMLString of a list: got %q, %v", got["a"], err)
	}
	if _, err := ParseYAML([]byte("a: !!timestamp 2001-12-15T02:59:43.1Z\n")); err == nil {
		t.Error("!!timestamp parsed; YAML 1.2 has no such type")
	}
}

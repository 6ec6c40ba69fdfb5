package flinkconf

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
)

// toYAMLString is YamlParserUtils#toYAMLString for the values a config.yaml
// constructs: a string is returned as it is (ConfigurationUtils
// #convertToString), anything else is dumped by snakeyaml-engine 2.6 in flow
// style without line splitting, and the dump's line break taken off.
func toYAMLString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var d dumper
	if err := d.node(v, false); err != nil {
		return "", err
	}
	return d.b.String(), nil
}

// dumper follows snakeyaml-engine's StandardRepresenter and Emitter for the
// flow style Flink's flowDumperSettings ask for: "[a, b]", "{k: v}".
type dumper struct {
	b strings.Builder
	// seen holds the collections on the way down: a collection met twice
	// would be written with an anchor and an alias, which this dumper does
	// not do.
	seen map[any]bool
}

func (d *dumper) node(v any, simpleKey bool) error {
	switch v := v.(type) {
	case *sequence:
		if err := d.enter(v); err != nil {
			return err
		}
		d.b.WriteByte('[')
		for i, item := range v.items {
			if i > 0 {
				d.b.WriteString(", ")
			}
			if err := d.node(item, false); err != nil {
				return err
			}
		}
		d.b.WriteByte(']')
	case *mapping:
		if err := d.enter(v); err != nil {
			return err
		}
		d.b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				d.b.WriteString(", ")
			}
			simple, err := isSimpleKey(k)
			if err != nil {
				return err
			}
			if !simple {
				// Emitter#ExpectFlowMappingKey writes "? key : value"
				// for a key too long or empty for a simple key.
				d.b.WriteString("? ")
			}
			if err := d.node(k, simple); err != nil {
				return err
			}
			if simple {
				d.b.WriteString(": ")
			} else {
				d.b.WriteString(" : ")
			}
			if err := d.node(v.values[i], false); err != nil {
				return err
			}
		}
		d.b.WriteByte('}')
	case string:
		d.b.WriteString(flowString(v, simpleKey))
	default:
		// null, booleans and numbers are written plain: their text
		// always resolves back to their own tag.
		d.b.WriteString(scalarText(v))
	}
	return nil
}

func (d *dumper) enter(c any) error {
	if d.seen == nil {
		d.seen = map[any]bool{}
	}
	if d.seen[c] {
		return errors.New("a collection used twice through aliases in one value is not supported")
	}
	d.seen[c] = true
	return nil
}

// scalarText is StandardRepresenter's text for null, Boolean, the integer
// types and Double.
func scalarText(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case *big.Int:
		return v.String()
	case float64:
		switch {
		case math.IsNaN(v):
			return ".nan"
		case math.IsInf(v, 1):
			return ".inf"
		case math.IsInf(v, -1):
			return "-.inf"
		}
		return javaDouble(v)
	}
	panic(fmt.Sprintf("flinkconf: no YAML text for %T", v))
}

// maxSimpleKeyLength is DumpSettings' default. Emitter#checkSimpleKey counts
// the prepared tag ("!!str") in, although a plain key then omits it.
const maxSimpleKeyLength = 128

func isSimpleKey(k any) (bool, error) {
	switch k := k.(type) {
	case *sequence, *mapping:
		return false, errors.New("a collection as a mapping key is not supported")
	case string:
		a := analyzeScalar(k)
		return !a.empty && !a.multiline && utf16Len(k)+len("!!str") < maxSimpleKeyLength, nil
	case nil:
		return true, nil
	case bool:
		return true, nil
	case float64:
		return utf16Len(scalarText(k))+len("!!float") < maxSimpleKeyLength, nil
	}
	return utf16Len(scalarText(k))+len("!!int") < maxSimpleKeyLength, nil
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// flowString picks the style Emitter#chooseScalarStyle picks for a string in
// a flow collection. StandardRepresenter asks for the literal style for text
// with a line break, which flow context cannot have, so that is double
// quoted; otherwise plain when the text would read back as a string and the
// analysis allows it, else single quoted, else double quoted.
func flowString(s string, simpleKey bool) string {
	a := analyzeScalar(s)
	if strings.ContainsAny(s, "\n\u0085\u2028\u2029") {
		return doubleQuoted(s)
	}
	if resolvesToString(s) && !(simpleKey && (a.empty || a.multiline)) && a.allowFlowPlain {
		return s
	}
	if a.allowSingleQuoted && !(simpleKey && a.multiline) {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return doubleQuoted(s)
}

type scalarAnalysis struct {
	empty, multiline                  bool
	allowFlowPlain, allowSingleQuoted bool
}

// analyzeScalar is the part of Emitter#analyzeScalar that decides the flow
// styles. snakeyaml-engine counts only '\n' as a line break here, and with
// unicode allowed (DumpSettings' default) only characters outside YAML's
// printable set are special.
func analyzeScalar(s string) scalarAnalysis {
	if s == "" {
		return scalarAnalysis{empty: true, allowSingleQuoted: true}
	}
	rs := []rune(s)
	var flowIndicators, lineBreaks, special bool
	var leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		flowIndicators = true
	}
	blank := func(r rune) bool { return r == 0 || r == ' ' || r == '\t' }
	followedByBlank := func(i int) bool { return i+1 >= len(rs) || blank(rs[i+1]) || rs[i+1] == '\r' || rs[i+1] == '\n' }
	precededByBlank := true
	var prevSpace, prevBreak bool
	for i, r := range rs {
		if i == 0 {
			if strings.ContainsRune("#,[]{}&*!|>'\"%@`", r) {
				flowIndicators = true
			}
			if r == '?' || r == ':' {
				flowIndicators = true
			}
			if r == '-' && followedByBlank(i) {
				flowIndicators = true
			}
		} else {
			if strings.ContainsRune(",?[]{}", r) || r == ':' {
				flowIndicators = true
			}
			if r == '#' && precededByBlank {
				flowIndicators = true
			}
		}
		isBreak := r == '\n'
		if isBreak {
			lineBreaks = true
		}
		if !(r == '\n' || r >= 0x20 && r <= 0x7E) && !(r == 0x85 || r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			special = true
		}
		switch {
		case r == ' ':
			leadingSpace = leadingSpace || i == 0
			trailingSpace = trailingSpace || i == len(rs)-1
			breakSpace = breakSpace || prevBreak
			prevSpace, prevBreak = true, false
		case isBreak:
			leadingBreak = leadingBreak || i == 0
			trailingBreak = trailingBreak || i == len(rs)-1
			spaceBreak = spaceBreak || prevSpace
			prevSpace, prevBreak = false, true
		default:
			prevSpace, prevBreak = false, false
		}
		precededByBlank = blank(r) || isBreak
	}
	a := scalarAnalysis{multiline: lineBreaks, allowFlowPlain: true, allowSingleQuoted: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || flowIndicators {
		a.allowFlowPlain = false
	}
	if breakSpace || spaceBreak || special {
		a.allowFlowPlain, a.allowSingleQuoted = false, false
	}
	return a
}

// doubleQuoted is Emitter#writeDoubleQuoted without line splitting.
func doubleQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r >= 0x20 && r <= 0x7E && r != '"' && r != '\\' {
			b.WriteRune(r)
			continue
		}
		if e, ok := dumpEscapes[r]; ok {
			b.WriteString(`\` + e)
			continue
		}
		switch {
		case yamlPrintable(r):
			b.WriteRune(r)
		case r <= 0xFF:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// dumpEscapes is Emitter's ESCAPE_REPLACEMENTS.
var dumpEscapes = map[rune]string{
	0: "0", 0x07: "a", 0x08: "b", '\t': "t", '\n': "n", 0x0B: "v", 0x0C: "f", '\r': "r", 0x1B: "e",
	'"': `"`, '\\': `\`, 0x85: "N", 0xA0: "_", 0x2028: "L", 0x2029: "P",
}

// yamlPrintable is StreamReader#isPrintable: YAML's c-printable set.
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7E || r == 0x85 ||
		r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// javaDouble is Double#toString for a finite double: the shortest digits
// that read back as the same double, in plain notation from 10^-3 up to
// 10^7 and in computerized scientific notation ("1.0E10") outside, always
// with a fractional digit. JDK 19 and later print exactly this; the JDK 11
// and 17 of the official images can print a longer digit string for a few
// doubles, never for one written with few digits.
func javaDouble(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if abs := math.Abs(f); abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp) // FormatFloat writes a signed decimal exponent
	return mant + "E" + strconv.Itoa(e)
}

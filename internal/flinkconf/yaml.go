package flinkconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseYAML reads a config.yaml the way Flink 1.19 and later do
// (GlobalConfiguration#loadYAMLResource): YamlParserUtils#loadYamlFile loads
// one YAML 1.2 document with snakeyaml-engine 2.6 and its CoreSchema,
// GlobalConfiguration#flatten joins nested mapping keys with '.', and
// Configuration#getString turns each value into the string an option reads
// (ConfigurationUtils#convertToString: a string as it is, anything else
// through YamlParserUtils#toYAMLString, a one-line flow-style dump).
//
// So a plain 1.20 reads as "1.2", 0x10 as "16", True as "true" and yes as
// "yes" (YAML 1.2 has no yes/no booleans); a list reads as its flow form
// "[a, b]"; a nested mapping becomes dotted keys and an empty one none.
// Flink refuses to start on a null value (null, ~ or nothing:
// Configuration#setValueInternal throws), on a duplicate key in one mapping
// (LoadSettings#allowDuplicateKeys is false), and on a tag it has no
// constructor for (!x); this parser returns an error for each. A key that
// two mappings flatten to (a.b: 1 next to a: {b: 2}) takes the later value.
//
// The document is parsed with go.yaml.in/yaml/v3 and resolved here with the
// YAML 1.2 core schema as snakeyaml-engine's CoreScalarResolver spells it.
// Differences that remain are refused rather than misread: yaml.v3 follows
// YAML 1.1 in treating U+0085, U+2028 and U+2029 as line breaks (1.2 does
// not), so content holding them raw is refused; and it does not know the
// "\/" escape (it reports a parse error where Flink reads "/").
func ParseYAML(content []byte) (map[string]string, error) {
	for _, r := range []rune{'\u0085', '\u2028', '\u2029'} {
		if bytes.ContainsRune(content, r) {
			return nil, fmt.Errorf("config.yaml holds a raw %U, which YAML 1.2 reads as text and this parser as a line break; escape it", r)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("parse config.yaml: %w", err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("parse config.yaml: %w", err)
		}
		// Load#loadFromInputStream composes a single document.
		return nil, errors.New("parse config.yaml: expected a single document in the stream")
	}
	c := &constructor{}
	root, err := c.construct(&doc, 0)
	if err != nil {
		return nil, err
	}
	var m *mapping
	switch r := root.(type) {
	case nil:
		// loadYamlFile returns an empty map for a document without content.
		return map[string]string{}, nil
	case *mapping:
		m = r
	default:
		return nil, fmt.Errorf("config.yaml is a %s, not a mapping", typeName(root))
	}
	flat := map[string]any{}
	if err := flatten(m, "", flat); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(flat))
	for k, v := range flat {
		if v == nil {
			return nil, fmt.Errorf("config.yaml: %s has a null value, which Flink refuses (Configuration#setValueInternal)", k)
		}
		s, err := toYAMLString(v)
		if err != nil {
			return nil, fmt.Errorf("config.yaml: %s: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
}

// The values snakeyaml-engine constructs, in Go: nil (null), string, bool,
// *big.Int (Integer, Long or BigInteger: they print alike), float64
// (Double), *sequence (List) and *mapping (LinkedHashMap). Collections are
// pointers so that one referenced twice through aliases stays one object.
type sequence struct{ items []any }

type mapping struct {
	keys, values []any
}

// maxAliasesForCollections is LoadSettings' default: more aliases to
// collections than this and the document is refused (billion laughs).
const maxAliasesForCollections = 50

// maxDepth bounds nesting, so a recursive alias fails instead of looping.
const maxDepth = 1000

type constructor struct {
	collectionAliases int
}

func (c *constructor) construct(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("config.yaml nests too deep (a recursive alias?)")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.construct(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias.Kind != yaml.ScalarNode {
			c.collectionAliases++
			if c.collectionAliases > maxAliasesForCollections {
				return nil, fmt.Errorf("config.yaml: more than %d aliases to collections", maxAliasesForCollections)
			}
		}
		return c.construct(n.Alias, depth+1)
	case yaml.ScalarNode:
		return resolveScalar(n)
	case yaml.SequenceNode:
		if err := checkCollectionTag(n, "!!seq"); err != nil {
			return nil, err
		}
		s := &sequence{}
		for _, item := range n.Content {
			v, err := c.construct(item, depth+1)
			if err != nil {
				return nil, err
			}
			s.items = append(s.items, v)
		}
		return s, nil
	case yaml.MappingNode:
		if err := checkCollectionTag(n, "!!map"); err != nil {
			return nil, err
		}
		m := &mapping{}
		// StandardConstructor#processDuplicateKeys compares the
		// constructed keys, so 1 and 01 collide but 1 and "1" do not.
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := c.construct(n.Content[i], depth+1)
			if err != nil {
				return nil, err
			}
			id, err := keyID(k)
			if err != nil {
				return nil, fmt.Errorf("config.yaml line %d: %w", n.Content[i].Line, err)
			}
			if seen[id] {
				return nil, fmt.Errorf("config.yaml line %d: found duplicate key %s", n.Content[i].Line, javaString(k))
			}
			seen[id] = true
			v, err := c.construct(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m.keys = append(m.keys, k)
			m.values = append(m.values, v)
		}
		return m, nil
	}
	return nil, fmt.Errorf("config.yaml line %d: unexpected node kind %v", n.Line, n.Kind)
}

func checkCollectionTag(n *yaml.Node, want string) error {
	if n.Style&yaml.TaggedStyle != 0 && n.ShortTag() != want {
		return fmt.Errorf("config.yaml line %d: could not determine a constructor for the tag %s", n.Line, n.Tag)
	}
	return nil
}

// The core schema, as snakeyaml-engine 2.6's CoreScalarResolver spells it.
// The resolver tries them in this order (INT before FLOAT, since FLOAT also
// matches integers); a plain scalar matching none is a string. Its
// ENV_FORMAT tag (${VAR}) constructs the text itself unless LoadSettings has
// an EnvConfig, which Flink's has not, so such a value is a string here too.
var (
	coreNull  = regexp.MustCompile(`^(?:|~|null|Null|NULL| )$`)
	coreBool  = regexp.MustCompile(`^(?:true|True|TRUE|false|False|FALSE)$`)
	coreInt   = regexp.MustCompile(`^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$`)
	coreFloat = regexp.MustCompile(`^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	// envFormat is BaseScalarResolver#ENV_FORMAT, with Java's \w and \s.
	envFormat = regexp.MustCompile(`^\$\{[ \t\n\x0B\f\r]*(?:([a-zA-Z0-9_]+)(?:(:?[-?])([a-zA-Z0-9_]+)?)?)[ \t\n\x0B\f\r]*\}$`)
)

// resolvesToString reports whether a plain scalar with this text would
// construct a string.
func resolvesToString(s string) bool {
	return !coreNull.MatchString(s) && !coreBool.MatchString(s) && !coreInt.MatchString(s) &&
		!coreFloat.MatchString(s) && !envFormat.MatchString(s)
}

func resolveScalar(n *yaml.Node) (any, error) {
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	if n.Style&yaml.TaggedStyle != 0 {
		return constructTagged(n)
	}
	if quoted {
		return n.Value, nil
	}
	v, err := resolvePlain(n.Value)
	if err != nil {
		return nil, fmt.Errorf("config.yaml line %d: %w", n.Line, err)
	}
	return v, nil
}

// resolvePlain constructs the value of a plain scalar with this text.
func resolvePlain(s string) (any, error) {
	switch {
	case coreNull.MatchString(s):
		return nil, nil
	case coreBool.MatchString(s):
		return strings.EqualFold(s, "true"), nil
	case coreInt.MatchString(s):
		return coreIntValue(s), nil
	case coreFloat.MatchString(s):
		return coreFloatValue(s)
	}
	return s, nil
}

// constructTagged follows the constructors CoreSchema registers for an
// explicit tag. Where the Java constructors would throw, or return null and
// so make Flink throw later, this returns an error. It is stricter than Java
// for a few spellings Double#valueOf accepts beyond the core pattern (1.5d).
func constructTagged(n *yaml.Node) (any, error) {
	s := n.Value
	bad := func(what string) error {
		return fmt.Errorf("config.yaml line %d: %q is not %s", n.Line, s, what)
	}
	switch n.ShortTag() {
	case "!!str":
		return s, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		// ConstructYamlCoreBool looks the lower-cased text up in
		// {true, false}; anything else constructs null.
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, bad("a boolean")
	case "!!int":
		if !coreInt.MatchString(s) {
			return nil, bad("an integer")
		}
		return coreIntValue(s), nil
	case "!!float":
		if !coreFloat.MatchString(s) {
			return nil, bad("a float")
		}
		f, err := coreFloatValue(s)
		if err != nil {
			return nil, fmt.Errorf("config.yaml line %d: %w", n.Line, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("config.yaml line %d: could not determine a constructor for the tag %s", n.Line, n.Tag)
}

// coreIntValue is ConstructYamlCoreInt#createIntNumber: an optional sign,
// then 0x hex, 0o octal or decimal (leading zeros allowed: 010 is ten).
func coreIntValue(s string) *big.Int {
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0o"):
		base, s = 8, s[2:]
	}
	v, _ := new(big.Int).SetString(s, base) // the pattern matched: it parses
	if neg {
		v.Neg(v)
	}
	return v
}

// coreFloatValue is ConstructYamlCoreFloat: the text lower-cased, then
// ".inf", "-.inf" and ".nan" by name, anything else through Double#valueOf
// after taking off the sign. "+.inf" matches the pattern but is none of the
// names, and Double#valueOf refuses ".inf": Flink fails on it.
func coreFloatValue(s string) (float64, error) {
	s = strings.ToLower(s)
	switch s {
	case ".inf":
		return math.Inf(1), nil
	case "-.inf":
		return math.Inf(-1), nil
	case ".nan":
		return math.NaN(), nil
	case "+.inf":
		return 0, fmt.Errorf("%q is not a number Double#valueOf reads", s)
	}
	// Double#valueOf overflows to infinity and underflows to zero, as
	// ParseFloat does while reporting ErrRange.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is not a number: %w", s, err)
	}
	return f, nil
}

// keyID identifies a constructed key the way Java's equals does for the
// types a key can have here.
func keyID(k any) (string, error) {
	switch k := k.(type) {
	case nil:
		return "null", nil
	case string:
		return "str:" + k, nil
	case bool:
		return "bool:" + strconv.FormatBool(k), nil
	case *big.Int:
		return "int:" + k.String(), nil
	case float64:
		// Double#equals: NaN equals NaN, 0.0 differs from -0.0.
		return "float:" + javaDouble(k), nil
	}
	return "", fmt.Errorf("a %s as a mapping key is not supported", typeName(k))
}

// flatten is GlobalConfiguration#flatten: a mapping value is flattened under
// "key.", a list becomes its YAML string at once, anything else stays as it
// is. The keys are joined as Java's string concatenation prints them.
func flatten(m *mapping, prefix string, out map[string]any) error {
	for i, k := range m.keys {
		key := prefix + javaString(k)
		switch v := m.values[i].(type) {
		case *mapping:
			if err := flatten(v, key+".", out); err != nil {
				return err
			}
		case *sequence:
			s, err := toYAMLString(v)
			if err != nil {
				return fmt.Errorf("config.yaml: %s: %w", key, err)
			}
			out[key] = s
		default:
			out[key] = v
		}
	}
	return nil
}

// javaString is String#valueOf for a scalar key.
func javaString(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case *big.Int:
		return v.String()
	case float64:
		switch {
		case math.IsNaN(v):
			return "NaN"
		case math.IsInf(v, 1):
			return "Infinity"
		case math.IsInf(v, -1):
			return "-Infinity"
		}
		return javaDouble(v)
	}
	return fmt.Sprint(v)
}

func typeName(v any) string {
	switch v.(type) {
	case *sequence:
		return "list"
	case *mapping:
		return "mapping"
	}
	return "scalar"
}

// Package flinkoptions holds Flink's own tables of configuration options and
// the default configuration file its distribution ships, per Flink minor,
// copied from the Apache Flink repository (see README.md), so that tests
// check rendered configuration against what each Flink minor reads.
package flinkoptions

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed */options.tsv */deprecated_keys.tsv */flink-conf.yaml */config.yaml
var files embed.FS

// Minors are the Flink minors held here, oldest first.
var Minors = []string{"1.17", "1.18", "1.19", "1.20", "2.0", "2.1", "2.2"}

// Option is one row of a minor's option tables.
type Option struct {
	Key string
	// Default is as the docs print it: "(none)", "1 min", "\"hashmap\"".
	Default string
	Type    string
}

// Alias is an option that reads a key which is not its own.
type Alias struct {
	// Option is the key of the option.
	Option string
	// Fallback is true for withFallbackKeys, false for withDeprecatedKeys.
	// Flink reads both; it logs a deprecation warning for the latter.
	Fallback bool
}

// Minor is what one Flink minor reads.
type Minor struct {
	Name string
	// Options are the documented options, by key.
	Options map[string]Option
	// Aliases maps each deprecated or fallback key to the options that
	// still read it (one old key can feed several options).
	Aliases map[string][]Alias
	// OldKeys lists, per option, the keys it reads when its own key is
	// unset, in the order its table row names them (deprecated keys, then
	// fallback keys): Configuration#getRawValueFromOption tries them in turn.
	OldKeys map[string][]string
	// DefaultConfName is flink-conf.yaml or config.yaml, the file the
	// distribution ships in conf/.
	DefaultConfName string
	// DefaultConf is that file.
	DefaultConf []byte
}

// Load reads the tables of a minor such as "1.20".
func Load(minor string) (*Minor, error) {
	m := &Minor{Name: minor, Options: map[string]Option{}, Aliases: map[string][]Alias{}, OldKeys: map[string][]string{}}
	if err := readTSV(minor+"/options.tsv", 4, func(f []string) {
		m.Options[f[0]] = Option{Key: f[0], Default: f[1], Type: f[2]}
	}); err != nil {
		return nil, err
	}
	if err := readTSV(minor+"/deprecated_keys.tsv", 5, func(f []string) {
		m.addAliases(f[0], f[1], false)
		m.addAliases(f[0], f[2], true)
	}); err != nil {
		return nil, err
	}
	for _, name := range []string{"config.yaml", "flink-conf.yaml"} {
		raw, err := files.ReadFile(minor + "/" + name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("flink %s: %w", minor, err)
		}
		m.DefaultConfName, m.DefaultConf = name, raw
		break
	}
	if m.DefaultConf == nil {
		return nil, fmt.Errorf("flink %s: no default configuration file", minor)
	}
	return m, nil
}

// addAliases records a comma-separated list of old keys. An entry starting
// with '?' is a Java expression the table's derivation could not resolve; it
// names no key.
func (m *Minor) addAliases(option, keys string, fallback bool) {
	for _, k := range strings.Split(keys, ",") {
		if k == "" || strings.HasPrefix(k, "?") {
			continue
		}
		if !slices.Contains(m.OldKeys[option], k) {
			m.OldKeys[option] = append(m.OldKeys[option], k)
		}
		a := Alias{Option: option, Fallback: fallback}
		found := false
		for _, have := range m.Aliases[k] {
			found = found || have == a
		}
		if !found {
			m.Aliases[k] = append(m.Aliases[k], a)
		}
	}
}

func readTSV(name string, columns int, row func([]string)) error {
	raw, err := files.ReadFile(name)
	if err != nil {
		return fmt.Errorf("flink options: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			continue // the header
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) != columns {
			return fmt.Errorf("%s:%d: %d columns, want %d", name, line+1, len(f), columns)
		}
		row(f)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

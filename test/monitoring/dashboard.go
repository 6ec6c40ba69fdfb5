package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DashboardPath is the chart's Grafana dashboard, relative to the
// repository's root.
const DashboardPath = "charts/datapilot/dashboards/datapilot.json"

// Query is one panel target of the dashboard.
type Query struct {
	Panel, RefID, Expr string
}

type dashboard struct {
	Panels []struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
}

// DashboardQueries reads the dashboard's panel queries and its template
// variables' names.
func DashboardQueries(path string) ([]Query, []string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var qs []Query
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			qs = append(qs, Query{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	return qs, vars, nil
}

var variable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// Variables are the template variables an expression uses, such as
// "namespace" for $namespace and "__rate_interval" for Grafana's own.
func Variables(expr string) []string {
	var out []string
	for _, m := range variable.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// Substitute replaces each $name and ${name} in expr by values[name], and
// fails on a variable values lacks.
func Substitute(expr string, values map[string]string) (string, error) {
	var missing []string
	out := variable.ReplaceAllStringFunc(expr, func(m string) string {
		name := strings.Trim(m, "${}")
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %v in %q", missing, expr)
	}
	return out, nil
}

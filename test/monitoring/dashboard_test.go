package monitoring

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDashboardConfigMap: the chart ships the dashboard file unchanged in a
// ConfigMap carrying the sidecar's label (configurable), only when asked.
func TestDashboardConfigMap(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(repoRoot(), DashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		set         []string
		label, lval string
		namespace   string
	}{
		{"defaults", []string{"grafanaDashboard.enabled=true"}, "grafana_dashboard", "1", "datapilot-system"},
		{"custom label and namespace", []string{"grafanaDashboard.enabled=true", "grafanaDashboard.label=dashboards", "grafanaDashboard.labelValue=flink", "grafanaDashboard.namespace=monitoring"}, "dashboards", "flink", "monitoring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(helmTemplate(t, "templates/grafana-dashboard.yaml", tc.set...), &cm); err != nil {
				t.Fatal(err)
			}
			if got := cm.Labels[tc.label]; got != tc.lval {
				t.Errorf("label %s = %q, want %q (labels %v)", tc.label, got, tc.lval, cm.Labels)
			}
			if cm.Namespace != tc.namespace {
				t.Errorf("namespace %q, want %q", cm.Namespace, tc.namespace)
			}
			if got := cm.Data["datapilot.json"]; got != strings.TrimRight(string(want), "\n") {
				t.Errorf("datapilot.json in the ConfigMap differs from %s", DashboardPath)
			}
		})
	}
	all := helmTemplate(t, "")
	if !bytes.Contains(all, []byte("kind: Deployment")) || bytes.Contains(all, []byte("grafana_dashboard")) {
		t.Error("the default values render the dashboard")
	}
}

// TestDashboardQueriesUseDefinedVariables: every panel has a query, and
// every variable a query uses is the dashboard's own or Grafana's
// $__rate_interval (the end-to-end tier substitutes exactly these).
func TestDashboardQueriesUseDefinedVariables(t *testing.T) {
	path := filepath.Join(repoRoot(), DashboardPath)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Type, Title string
			Targets     []json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	qs, vars, err := DashboardQueries(path)
	if err != nil {
		t.Fatal(err)
	}
	known := append([]string{"__rate_interval"}, vars...)
	for _, q := range qs {
		if strings.TrimSpace(q.Expr) == "" {
			t.Errorf("panel %q %s: empty query", q.Panel, q.RefID)
		}
		for _, v := range Variables(q.Expr) {
			if !slices.Contains(known, v) {
				t.Errorf("panel %q %s uses $%s, which the dashboard does not define", q.Panel, q.RefID, v)
			}
		}
	}
}

// Package monitoring tests what the chart ships for Prometheus and Grafana
// against the real tools: the PrometheusRule's alerts with promtool's rule
// unit tests (testdata/rules_test.yaml), the dashboard's ConfigMap as Helm
// renders it. The dashboard's queries are run against a real Prometheus
// scraping the operator in the end-to-end tier (test/e2e/dashboard_test.go).
package monitoring

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// helmTemplate renders one template of the chart with bin/helm, or the
// whole chart when show is empty.
func helmTemplate(t *testing.T, show string, set ...string) []byte {
	t.Helper()
	root := repoRoot()
	helm := filepath.Join(root, "bin", "helm")
	args := []string{"template", "datapilot", filepath.Join(root, "charts", "datapilot"), "--namespace", "datapilot-system"}
	if show != "" {
		args = append(args, "--show-only", show)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// ruleTests is the part of a promtool rule test file this test reads.
type ruleTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string            `json:"alertname"`
			ExpAlerts []json.RawMessage `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlertRules runs promtool's rule unit tests on the chart's
// PrometheusRule as helm renders it, and fails when an alert has no test
// that fires it or none where it stays silent.
func TestAlertRules(t *testing.T) {
	promtool := filepath.Join(repoRoot(), "bin", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Skip("bin/promtool is missing: run 'make tools' (make test builds it)")
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	rendered := helmTemplate(t, "templates/prometheusrule.yaml", "prometheusRule.enabled=true")
	if err := yaml.Unmarshal(rendered, &rule); err != nil {
		t.Fatalf("rendered PrometheusRule: %v", err)
	}
	// The PrometheusRule's spec is a Prometheus rule file.
	var obj map[string]any
	if err := yaml.Unmarshal(rendered, &obj); err != nil {
		t.Fatal(err)
	}
	rules, err := yaml.Marshal(obj["spec"])
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"rules.yaml": rules, "rules_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var rt ruleTests
	if err := yaml.Unmarshal(tests, &rt); err != nil {
		t.Fatalf("testdata/rules_test.yaml: %v", err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("no alerts in the rendered PrometheusRule:\n%s", rendered)
	}
	for _, a := range alerts {
		if !fires[a] || !silent[a] {
			t.Errorf("alert %s: a test that fires it: %v, one where it stays silent: %v; add both to testdata/rules_test.yaml", a, fires[a], silent[a])
		}
	}
	for a := range fires {
		if !slices.Contains(alerts, a) {
			t.Errorf("testdata/rules_test.yaml tests %s, which the chart does not define", a)
		}
	}

	cmd := exec.Command(promtool, "test", "rules", "rules_test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\nrules.yaml:\n%s", err, out, rules)
	}
	t.Logf("promtool test rules, %d alerts:\n%s", len(alerts), out)
}

// TestRunbookURLs: every alert links into the runbook under the base the
// values give, a trailing slash or not; a base that is no URL is refused.
func TestRunbookURLs(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"", "https://github.com/datapilot/datapilot/blob/main/docs/operations/runbook.md#"},
		{"https://git.example.com/platform/datapilot/-/blob/v1.2/", "https://git.example.com/platform/datapilot/-/blob/v1.2/docs/operations/runbook.md#"},
	} {
		set := []string{"prometheusRule.enabled=true"}
		if tc.base != "" {
			set = append(set, "prometheusRule.runbookBaseURL="+tc.base)
		}
		var rule struct {
			Spec struct {
				Groups []struct {
					Rules []struct {
						Alert       string            `json:"alert"`
						Annotations map[string]string `json:"annotations"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(helmTemplate(t, "templates/prometheusrule.yaml", set...), &rule); err != nil {
			t.Fatal(err)
		}
		for _, g := range rule.Spec.Groups {
			for _, r := range g.Rules {
				if u := r.Annotations["runbook_url"]; !strings.HasPrefix(u, tc.want) || len(u) == len(tc.want) {
					t.Errorf("base %q: %s's runbook_url is %q, want %s<anchor>", tc.base, r.Alert, u, tc.want)
				}
			}
		}
	}
	cmd := exec.Command(filepath.Join(repoRoot(), "bin", "helm"), "template", "datapilot", filepath.Join(repoRoot(), "charts", "datapilot"),
		"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.runbookBaseURL=docs")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "runbookBaseURL") {
		t.Errorf("runbookBaseURL=docs: %v, want a schema error naming runbookBaseURL:\n%s", err, out)
	}
}

// TestExpectedRunbookAnchorsExist: every runbook_url the rule tests expect,
// rendered for a concrete reason, names a heading of the runbook (the
// templated anchors are checked here, where they are rendered; the
// literal ones by internal/docs too).
func TestExpectedRunbookAnchorsExist(t *testing.T) {
	runbook, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "operations", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ +(.+)$`).FindAllStringSubmatch(string(runbook), -1) {
		a := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(m[1])), " ", "-")
		anchors[regexp.MustCompile(`[^a-z0-9_-]`).ReplaceAllString(a, "")] = true
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	urls := regexp.MustCompile(`runbook_url: *"?\S+/docs/operations/runbook\.md#([^"\s]+)`).FindAllStringSubmatch(string(tests), -1)
	if len(urls) == 0 {
		t.Fatal("testdata/rules_test.yaml expects no runbook_url")
	}
	for _, m := range urls {
		if !anchors[m[1]] {
			t.Errorf("testdata/rules_test.yaml expects runbook.md#%s, which the runbook has no heading for", m[1])
		}
	}
}

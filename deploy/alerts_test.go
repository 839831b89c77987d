package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The rule files the PrometheusRule ships, by the modes that get them.
var ruleFiles = map[string][]string{
	"files/alerts-daemon.yaml":      {"deployment", "sidecar"},
	"files/alerts-pushgateway.yaml": {"cronjob"},
}

// TestAlertRulesPromtool runs `promtool test rules` on the tests in
// testdata, which show each alert firing on series that call for it and
// staying silent on others. CI fetches promtool alone (scripts/tools.sh).
func TestAlertRulesPromtool(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool", "scripts/tools.sh fetches it alone into .cache/tools/bin")
	tests, _ := filepath.Glob("testdata/alerts-*.test.yaml")
	if len(tests) != len(ruleFiles) {
		t.Fatalf("testdata has %q, want one promtool test file per rule file %v", tests, ruleFiles)
	}
	out, err := exec.Command(promtool, append([]string{"test", "rules"}, tests...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	// Every alert of a rule file is tested.
	for file := range ruleFiles {
		test := filepath.Join("testdata", strings.TrimSuffix(filepath.Base(file), ".yaml")+".test.yaml")
		body, err := os.ReadFile(test)
		if err != nil {
			t.Fatal(err)
		}
		for _, alert := range alertNames(t, readRuleGroups(t, file)) {
			if !strings.Contains(string(body), "alertname: "+alert+"\n") {
				t.Errorf("%s has no test of %s", test, alert)
			}
		}
	}
}

// readRuleGroups reads a rule file of the chart strictly.
func readRuleGroups(t *testing.T, file string) []ruleGroup {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return decodeRuleGroups(t, file, raw)
}

func decodeRuleGroups(t *testing.T, where string, raw []byte) []ruleGroup {
	t.Helper()
	var f struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if len(f.Groups) == 0 {
		t.Fatalf("%s: no rule groups", where)
	}
	return f.Groups
}

func alertNames(t *testing.T, groups []ruleGroup) []string {
	t.Helper()
	var names []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s has a rule without alert", g.Name)
			}
			names = append(names, r.Alert)
		}
	}
	return names
}

// TestPrometheusRule checks that the PrometheusRule carries the rule file of
// its mode as it is, plus prometheusRule.additionalAlertLabels (which never
// override a rule's own severity).
func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	for file, modes := range ruleFiles {
		want := readRuleGroups(t, file)
		for _, mode := range modes {
			vals := withDSNs(map[string]any{"mode": mode, "prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}})
			m := render(t, vals)
			if len(m.prometheusRules) != 1 {
				t.Fatalf("%s: rendered %q, want one PrometheusRule", mode, m.kinds())
			}
			pr := m.prometheusRules[0]
			if pr.Labels["release"] != "prom" {
				t.Errorf("%s: PrometheusRule labels %v lack prometheusRule.labels", mode, pr.Labels)
			}
			if !reflect.DeepEqual(pr.Spec.Groups, want) {
				t.Errorf("%s: PrometheusRule groups differ from %s:\n got %s\nwant %s", mode, file, toJSON(pr.Spec.Groups), toJSON(want))
			}

			vals["prometheusRule"] = map[string]any{"enabled": true, "additionalAlertLabels": map[string]any{"team": "pulp", "severity": "page"}}
			for _, g := range render(t, vals).prometheusRules[0].Spec.Groups {
				for _, r := range g.Rules {
					if r.Labels["team"] != "pulp" || r.Labels["severity"] == "page" {
						t.Errorf("%s: alert %s labels %v: want team=pulp added and its own severity kept", mode, r.Alert, r.Labels)
					}
				}
			}
		}
	}
	if m := render(t, withDSNs(nil)); len(m.prometheusRules) != 0 {
		t.Error("a PrometheusRule by default; prometheusRule.enabled is off by default")
	}
}

// TestReadmeAlertRules keeps the README's alert rules those the chart ships.
func TestReadmeAlertRules(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for file := range ruleFiles {
		marker := strings.TrimSuffix(filepath.Base(file), ".yaml")
		m := regexp.MustCompile("(?s)<!-- " + marker + " -->\\s*```yaml\n(.*?)```").FindSubmatch(readme)
		if m == nil {
			t.Errorf("README.md has no yaml block after <!-- %s -->", marker)
			continue
		}
		if got, want := decodeRuleGroups(t, "README.md "+marker, m[1]), readRuleGroups(t, file); !reflect.DeepEqual(got, want) {
			t.Errorf("README.md's %s rules differ from charts/lock-reaper/%s", marker, file)
		}
	}
}

// exportedMetrics reads the names of the metrics the program exports from
// the source of its metrics package (every non-test file, so that metrics
// added there are picked up): the lock_reaper_ names written out, and the
// Name of every collector built with Namespace: namespace. Histograms and
// summaries also export _bucket (histograms only), _sum and _count.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "metrics", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no metrics/*.go in the main module (%v)", err)
	}
	literal := regexp.MustCompile(`"(lock_reaper_[a-z0-9_]+)"`)
	named := regexp.MustCompile(`Namespace:\s*namespace,\s*Name:\s*"([a-z0-9_]+)"`)
	histogram := regexp.MustCompile(`(?s)New(Histogram|Summary)(Vec)?\(prometheus\.(?:Histogram|Summary)Opts\{[^}]*?Name:\s*"([a-z0-9_]+)"`)
	names := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		for _, m := range named.FindAllStringSubmatch(string(src), -1) {
			names["lock_reaper_"+m[1]] = true
		}
		for _, m := range histogram.FindAllStringSubmatch(string(src), -1) {
			base := "lock_reaper_" + m[3]
			names[base+"_sum"], names[base+"_count"] = true, true
			if m[1] == "Histogram" {
				names[base+"_bucket"] = true
			}
		}
	}
	// What the metrics package has always exported, as a check on the parsing.
	for _, want := range []string{"lock_reaper_passes_total", "lock_reaper_last_success_timestamp_seconds",
		"lock_reaper_holdings_released_total", "lock_reaper_pass_duration_seconds_bucket"} {
		if !names[want] {
			t.Fatalf("read %d metric names from metrics/*.go, not %s: the parsing no longer fits the source", len(names), want)
		}
	}
	return names
}

var metricName = regexp.MustCompile(`\block_reaper_[a-z0-9_]+`)

// checkQueryMetrics fails on a lock_reaper_ name in expr that the program
// does not export, and on an expr that names none.
func checkQueryMetrics(t *testing.T, where, expr string, exported map[string]bool) {
	t.Helper()
	used := metricName.FindAllString(expr, -1)
	if len(used) == 0 {
		t.Errorf("%s: %q names no lock_reaper_ metric", where, expr)
	}
	for _, name := range used {
		if !exported[name] {
			t.Errorf("%s: %s is not a metric the program exports (metrics/*.go)", where, name)
		}
	}
}

func TestAlertRulesNameExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := exportedMetrics(t)
	for file := range ruleFiles {
		for _, g := range readRuleGroups(t, file) {
			for _, r := range g.Rules {
				checkQueryMetrics(t, file+" "+r.Alert, r.Expr, exported)
			}
		}
	}
}

// TestDashboard checks the Grafana dashboard: every query names only metrics
// the program exports, the ConfigMap carries it as it is, labelled for
// Grafana's sidecar, and only when grafanaDashboard.enabled.
func TestDashboard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "lock-reaper.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard any
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exported := exportedMetrics(t)
	var exprs int
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if s, ok := sub.(string); ok && k == "expr" {
					exprs++
					checkQueryMetrics(t, at, s, exported)
				}
				walk(at+"."+k, sub)
			}
		case []any:
			for _, sub := range v {
				walk(at+"[]", sub)
			}
		}
	}
	walk("dashboard", dashboard)
	if exprs < 10 {
		t.Errorf("dashboard has %d queries; want a panel for each part of a pass", exprs)
	}

	m := render(t, withDSNs(map[string]any{"grafanaDashboard": map[string]any{"enabled": true}}))
	if len(m.dashboards) != 1 {
		t.Fatalf("rendered %q, want one dashboard ConfigMap", m.kinds())
	}
	cm := m.dashboards[0]
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.Labels)
	}
	if got := cm.Data["lock-reaper.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(raw)) {
		t.Error("the dashboard ConfigMap does not hold dashboards/lock-reaper.json as it is")
	}
	if len(cm.Data) != 1 {
		t.Errorf("dashboard ConfigMap has %d keys, want lock-reaper.json only", len(cm.Data))
	}
	if m := render(t, withDSNs(nil)); len(m.dashboards) != 0 {
		t.Error("a dashboard ConfigMap by default; grafanaDashboard.enabled is off by default")
	}
}

// requireTool returns the path of program, or fails the test under CI
// (CI=true, as .ci/run sets it: a skip there would read as a pass) and skips
// it locally, saying how to get it. The program module's
// internal/testtool.Require decides the same; this module cannot import it.
func requireTool(t *testing.T, program, howToGet string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	msg := program + " not found (" + howToGet + "); this test needs it"
	if ci := strings.ToLower(os.Getenv("CI")); ci == "true" || ci == "1" {
		t.Fatalf("%s: CI must install it", msg)
	}
	t.Skipf("SKIP: %s", msg)
	return ""
}

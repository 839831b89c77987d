package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The rule files the PrometheusRule ships, by the modes that get them.
var ruleFiles = map[string][]string{
	"files/alerts-daemon.yaml":      {"deployment", "sidecar"},
	"files/alerts-pushgateway.yaml": {"cronjob"},
}

// findPromtool returns the path of promtool: $PROMTOOL, else promtool on
// PATH (requireTool: a failure under CI, a visible skip elsewhere).
func findPromtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	return requireTool(t, "promtool", "scripts/tools.sh fetches it alone into .cache/tools/bin")
}

// promtoolTest runs `promtool test rules` on test, a testdata file whose
// rule_files entry RENDERED_RULES is replaced by the file holding groups.
func promtoolTest(t *testing.T, promtool, test string, groups any) {
	t.Helper()
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	raw, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rules, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "RENDERED_RULES") {
		t.Fatalf("%s: rule_files does not name RENDERED_RULES", test)
	}
	copied := filepath.Join(dir, filepath.Base(test))
	if err := os.WriteFile(copied, []byte(strings.ReplaceAll(string(body), "RENDERED_RULES", rules)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", copied).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", test, err, out)
	}
}

// ruleValues are values that render the PrometheusRule in mode: the
// CronJob's rules need a Pushgateway.
func ruleValues(mode string) map[string]any {
	vals := withDSNs(map[string]any{"mode": mode, "prometheusRule": map[string]any{"enabled": true}})
	if mode == "cronjob" {
		vals["config"] = map[string]any{"pushgateway_url": "http://pushgateway.monitoring:9091"}
	}
	return vals
}

// renderedRules renders the PrometheusRule of mode and returns its groups.
func renderedRules(t *testing.T, vals map[string]any) []ruleGroup {
	t.Helper()
	m := render(t, vals)
	if len(m.prometheusRules) != 1 {
		t.Fatalf("rendered %q, want one PrometheusRule", m.kinds())
	}
	return m.prometheusRules[0].Spec.Groups
}

// ruleScopes are the placeholders of the rule files and the values the
// chart gives them for release pulp-reaper in namespace pulp, by mode.
var ruleScopes = map[string]map[string]string{
	"cronjob":    {"RELEASE_NAMESPACE": namespace, "RELEASE_INSTANCE": fullname},
	"deployment": {"RELEASE_NAMESPACE": namespace, "RELEASE_JOB": fullname},
	"sidecar":    {"RELEASE_NAMESPACE": namespace, "RELEASE_JOB": namespace + "/" + fullname},
}

// scopedRuleGroups reads a rule file with its placeholders replaced as the
// chart replaces them in mode.
func scopedRuleGroups(t *testing.T, file, mode string) []ruleGroup {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for placeholder, value := range ruleScopes[mode] {
		s = strings.ReplaceAll(s, `"`+placeholder+`"`, `"`+value+`"`)
	}
	if strings.Contains(s, `"RELEASE_`) {
		t.Fatalf("%s in mode %s keeps a placeholder the chart does not replace", file, mode)
	}
	return decodeRuleGroups(t, file, []byte(s))
}

// TestAlertRulesPromtool runs `promtool test rules` on the tests in
// testdata over the rules as the chart renders them (deployment mode for
// the daemon's, cronjob mode for the Pushgateway's), which show each alert
// firing on series that call for it and staying silent on others,
// including the series of other reapers.
func TestAlertRulesPromtool(t *testing.T) {
	t.Parallel()
	promtool := findPromtool(t)
	tests, _ := filepath.Glob("testdata/alerts-*.test.yaml")
	if len(tests) != len(ruleFiles) {
		t.Fatalf("testdata has %q, want one promtool test file per rule file %v", tests, ruleFiles)
	}
	for file, modes := range ruleFiles {
		test := filepath.Join("testdata", strings.TrimSuffix(filepath.Base(file), ".yaml")+".test.yaml")
		promtoolTest(t, promtool, test, renderedRules(t, ruleValues(modes[0])))
		// Every alert of a rule file is tested.
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
// its mode scoped to its release, plus prometheusRule.additionalAlertLabels
// (which never override a rule's own severity).
func TestPrometheusRule(t *testing.T) {
	t.Parallel()
	for file, modes := range ruleFiles {
		for _, mode := range modes {
			want := scopedRuleGroups(t, file, mode)
			vals := ruleValues(mode)
			vals["prometheusRule"] = map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}
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

// TestPrometheusRuleScope: every metric the rules read is selected by this
// release's namespace and job (and, for the Pushgateway's, instance), so
// that another reaper's series neither raise nor silence an alert;
// prometheusRule.job and config.pushgateway_grouping move the scope; and
// the CronJob's rules without a Pushgateway, which would see nothing and
// fire forever, fail the render with the way out.
func TestPrometheusRuleScope(t *testing.T) {
	t.Parallel()
	selector := regexp.MustCompile(`\b(lock_reaper_[a-z0-9_]+)(\{[^}]*\})?`)
	check := func(name string, vals map[string]any, want ...string) {
		for _, g := range renderedRules(t, vals) {
			for _, r := range g.Rules {
				for _, m := range selector.FindAllStringSubmatch(r.Expr, -1) {
					for _, w := range want {
						if !strings.Contains(m[2], w) {
							t.Errorf("%s: %s reads %s%s without %s", name, r.Alert, m[1], m[2], w)
						}
					}
				}
			}
		}
	}
	check("cronjob", ruleValues("cronjob"), `job="lock_reaper"`, `namespace="pulp"`, `instance="`+fullname+`"`)
	check("deployment", ruleValues("deployment"), `namespace="pulp"`, `job="`+fullname+`"`)
	check("sidecar", ruleValues("sidecar"), `namespace="pulp"`, `job="pulp/`+fullname+`"`)
	vals := ruleValues("deployment")
	vals["prometheusRule"] = map[string]any{"enabled": true, "job": "kubernetes-pods"}
	check("prometheusRule.job", vals, `namespace="pulp"`, `job="kubernetes-pods"`)
	vals = ruleValues("cronjob")
	vals["config"] = map[string]any{"pushgateway_url": "http://pg:9091", "pushgateway_grouping": "namespace=pulp,instance=galaxy-reaper"}
	check("pushgateway_grouping", vals, `instance="galaxy-reaper"`)
	vals["config"] = map[string]any{"pushgateway_url": "http://pg:9091", "pushgateway_grouping": "namespace=pulp-prod"}
	check("pushgateway_grouping without instance", vals, `namespace="pulp-prod"`, `instance=""`)

	// The CronJob's passes push with the grouping the rules select.
	cfg := configOf(t, render(t, ruleValues("cronjob")))
	if got, want := cfg["pushgateway_grouping"], "namespace=pulp,instance="+fullname; got != want {
		t.Errorf("config pushgateway_grouping %v, want %q", got, want)
	}
	if _, ok := configOf(t, render(t, withDSNs(nil)))["pushgateway_grouping"]; ok {
		t.Error("pushgateway_grouping without pushgateway_url")
	}

	// Without the chart's ServiceMonitor the derived job is a guess: NOTES say so.
	if notes := render(t, ruleValues("deployment")).notes; !strings.Contains(notes, `WARNING: the PrometheusRule selects job="`+fullname+`"`) {
		t.Errorf("NOTES of deployment mode without serviceMonitor do not warn about the rules' job:\n%s", notes)
	}
	vals = ruleValues("deployment")
	vals["serviceMonitor"] = map[string]any{"enabled": true}
	if notes := render(t, vals).notes; strings.Contains(notes, "WARNING") {
		t.Errorf("NOTES warn although the chart's ServiceMonitor gives the job:\n%s", notes)
	}

	_, err := renderChart(loadChart(t), withDSNs(map[string]any{"prometheusRule": map[string]any{"enabled": true}}))
	if err == nil || !strings.Contains(err.Error(), "needs config.pushgateway_url") {
		t.Errorf("prometheusRule.enabled in cronjob mode without pushgateway_url: want a render error, got %v", err)
	}
}

// TestDocsDescribeAlertRules keeps docs/metrics.md true of the rules the
// chart ships: it links each rule file, and the table after the link names
// exactly the alerts of that file (the rules are linked, never copied).
func TestDocsDescribeAlertRules(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(LockReaper\\w+)` \\|")
	for file := range ruleFiles {
		link := "](../charts/lock-reaper/" + file + ")"
		at := bytes.Index(doc, []byte(link))
		if at < 0 {
			t.Errorf("docs/metrics.md does not link charts/lock-reaper/%s", file)
			continue
		}
		section := doc[at+len(link):]
		if next := regexp.MustCompile(`\]\(\.\./charts/lock-reaper/files/alerts-|\n## `).FindIndex(section); next != nil {
			section = section[:next[0]]
		}
		var documented []string
		for _, m := range row.FindAllSubmatch(section, -1) {
			documented = append(documented, string(m[1]))
		}
		var shipped []string
		for _, g := range readRuleGroups(t, file) {
			for _, r := range g.Rules {
				shipped = append(shipped, r.Alert)
			}
		}
		slices.Sort(documented)
		slices.Sort(shipped)
		if !slices.Equal(documented, shipped) {
			t.Errorf("docs/metrics.md's table after the link to %s names %v; the file has %v", file, documented, shipped)
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
	files, err := filepath.Glob(filepath.Join(repoRoot, "internal", "metrics", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no internal/metrics/*.go in the main module (%v)", err)
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
			t.Fatalf("read %d metric names from internal/metrics/*.go, not %s: the parsing no longer fits the source", len(names), want)
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
			t.Errorf("%s: %s is not a metric the program exports (internal/metrics/*.go)", where, name)
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

// dashboardTargets returns the dashboard's queries by refId, which is
// unique across the dashboard and names the query in the promtool tests.
func dashboardTargets(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "lock-reaper.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	refID := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	out := map[string]string{}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			if !refID.MatchString(target.RefID) {
				t.Errorf("panel %q: refId %q is not a name a recording rule can carry", p.Title, target.RefID)
			}
			if _, dup := out[target.RefID]; dup {
				t.Errorf("panel %q: refId %q is used twice", p.Title, target.RefID)
			}
			out[target.RefID] = target.Expr
		}
	}
	return out
}

// TestDashboardQueriesPromtool evaluates every query of the dashboard with
// promtool over series shaped as each mode produces them (testdata
// dashboard-cronjob: one pass's values pushed and held by the Pushgateway;
// dashboard-daemon: scraped counters that only grow): each query becomes a
// recording rule dashboard:<refId>, with Grafana's $namespace as pulp and
// $__rate_interval as 5m, and every query is tested in at least one mode.
func TestDashboardQueriesPromtool(t *testing.T) {
	t.Parallel()
	promtool := findPromtool(t)
	targets := dashboardTargets(t)
	var rules []map[string]string
	for ref, expr := range targets {
		expr = strings.NewReplacer("$namespace", namespace, "$__rate_interval", "5m").Replace(expr)
		if strings.Contains(expr, "$") {
			t.Errorf("query %s: a Grafana variable the test does not replace: %s", ref, expr)
		}
		rules = append(rules, map[string]string{"record": "dashboard:" + ref, "expr": expr})
	}
	groups := []map[string]any{{"name": "dashboard", "rules": rules}}
	tests, _ := filepath.Glob("testdata/dashboard-*.test.yaml")
	if len(tests) != 2 {
		t.Fatalf("testdata has %q, want dashboard-cronjob and dashboard-daemon", tests)
	}
	var bodies string
	for _, test := range tests {
		promtoolTest(t, promtool, test, groups)
		body, err := os.ReadFile(test)
		if err != nil {
			t.Fatal(err)
		}
		bodies += string(body)
	}
	for ref := range targets {
		if !strings.Contains(bodies, "expr: dashboard:"+ref+"\n") {
			t.Errorf("query %s of the dashboard is tested in no mode", ref)
		}
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

package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// runbookPage is where the alerts' runbook_url annotations point by default:
// the project's docs/operations.md, which prometheusRule.runbookURL replaces.
const runbookPage = "https://github.com/lock-reaper/lock-reaper/blob/main/docs/operations.md"

// TestAlertRunbooks: every alert the chart ships has a runbook_url naming
// its own section of docs/operations.md (#<alert name, lowercase>, a
// heading that exists there); the chart's default prometheusRule.runbookURL
// is that page, and setting it moves every link to the page given, each
// keeping its section.
func TestAlertRunbooks(t *testing.T) {
	t.Parallel()
	anchors := markdownAnchors(t, filepath.Join(repoRoot, "docs", "operations.md"))
	for file := range ruleFiles {
		for _, g := range readRuleGroups(t, file) {
			for _, r := range g.Rules {
				want := runbookPage + "#" + strings.ToLower(r.Alert)
				if got := r.Annotations["runbook_url"]; got != want {
					t.Errorf("%s: %s has runbook_url %q, want %q", file, r.Alert, got, want)
				}
				if !anchors[strings.ToLower(r.Alert)] {
					t.Errorf("%s: %s: docs/operations.md has no heading %q (### %s)", file, r.Alert, strings.ToLower(r.Alert), r.Alert)
				}
			}
		}
	}

	values := readValuesFile(t, "values.yaml")
	rule, _ := values["prometheusRule"].(map[string]any)
	if got := rule["runbookURL"]; got != runbookPage {
		t.Errorf("values.yaml prometheusRule.runbookURL is %v, want %s (the page the rule files name)", got, runbookPage)
	}
	const mirror = "https://wiki.example.com/pulp/lock-reaper-operations"
	for _, mode := range []string{"deployment", "cronjob"} {
		vals := ruleValues(mode)
		vals["prometheusRule"].(map[string]any)["runbookURL"] = mirror
		rules := 0
		for _, g := range renderedRules(t, vals) {
			for _, r := range g.Rules {
				rules++
				if want := mirror + "#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
					t.Errorf("%s with runbookURL %s: %s has runbook_url %q, want %q", mode, mirror, r.Alert, r.Annotations["runbook_url"], want)
				}
			}
		}
		if rules == 0 {
			t.Errorf("%s: no rules rendered", mode)
		}
	}
}

// markdownAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lowercase, spaces as hyphens, punctuation other than
// hyphens and underscores dropped, "-1", "-2", … after repeats. Headings in
// fenced code blocks are not headings.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(anchors) == 0 {
		t.Fatalf("%s: no headings read", path)
	}
	return anchors
}

package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestChartQueriesUseCatalog checks the chart's Grafana dashboard and alert
// rules against the catalog: every lock_reaper_ metric they read is one the
// program exports, and every value they match a cataloged label with is one
// of that label's values, so that a panel or an alert never selects a
// series that cannot exist (liveness="dead", verdict="owner-dead", ...).
func TestChartQueriesUseCatalog(t *testing.T) {
	t.Parallel()
	families := map[string]Family{}
	for _, f := range Catalog() {
		families[f.Name] = f
		if f.Type == prometheus.UntypedValue { // the histograms
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				families[f.Name+suffix] = f
			}
		}
	}
	selector := regexp.MustCompile(`\b(lock_reaper_[a-z0-9_]+)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`(\w+)\s*(=~|!~|!=|=)\s*\\?"([^"\\]*)\\?"`)
	// Labels the scrape or the push adds, and the histogram's.
	outside := map[string]bool{"namespace": true, "job": true, "instance": true, "le": true}
	checked := 0
	for _, file := range []string{
		"../../charts/lock-reaper/dashboards/lock-reaper.json",
		"../../charts/lock-reaper/files/alerts-daemon.yaml",
		"../../charts/lock-reaper/files/alerts-pushgateway.yaml",
	} {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range selector.FindAllStringSubmatch(string(raw), -1) {
			f, ok := families[m[1]]
			require.True(t, ok, "%s reads %s, which the catalog does not list", file, m[1])
			for _, mm := range matcher.FindAllStringSubmatch(m[2], -1) {
				label, op, value := mm[1], mm[2], mm[3]
				if outside[label] {
					continue
				}
				known, ok := f.Labels[label]
				require.True(t, ok, "%s: %s has no label %s", file, m[1], label)
				if known == nil {
					continue
				}
				values := []string{value}
				if op == "=~" || op == "!~" {
					values = strings.Split(value, "|")
				}
				for _, v := range values {
					require.True(t, slices.Contains(known, v), "%s: %s{%s%s%q}: %q is not a value of %s (%v)", file, m[1], label, op, value, v, label, known)
					checked++
				}
			}
		}
	}
	require.GreaterOrEqual(t, checked, 5, "no label value was checked: the parsing no longer fits the files")
}

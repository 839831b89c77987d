package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
)

// TestFreshReaperMetricsHaveKnownLabels scrapes /metrics of a freshly
// started `run` and reads the body a fresh `once` pushes, each with neither
// Redis nor PostgreSQL reachable, and fails on any lock_reaper_* series with
// a label value that is not a known name, or a known series missing: what a
// new reaper exports before its first success is what alerts see first.
func TestFreshReaperMetricsHaveKnownLabels(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"REAPER_REDIS_URL": "redis://" + closedAddr(t) + "/0", "REAPER_REDIS_TIMEOUT": "1s",
		"REAPER_DATABASE_URL": "postgres://nobody@" + closedAddr(t) + "/none?connect_timeout=1", "REAPER_LOG_FORMAT": "json",
		"REAPER_SCHEDULE": "@every 1h", "REAPER_JITTER": "0s", "REAPER_LISTEN": "127.0.0.1:0",
	}
	r := startRun(t, env)
	requireKnownLabelValues(t, r.scrape(t))
	// The first pass may fail before "daemon started" is logged: look from
	// the first record.
	first := 0
	r.logs.waitFor(t, &first, msgIs("pass will be retried"))
	requireKnownLabelValues(t, r.scrape(t))
	require.Equal(t, exitcode.OK, r.stop(t))

	gw := newFakePushgateway(t)
	env["REAPER_PUSHGATEWAY_URL"] = gw.url()
	code, _, stderr := run(t, env, "once")
	require.Equal(t, exitcode.Failed, code, stderr)
	pushes := gw.received()
	require.Len(t, pushes, 1)
	requireKnownLabelValues(t, pushes[0].samples)
}

var sampleLabel = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*")`)

// requireKnownLabelValues checks flattened samples (promtest's keys) against
// metrics.Catalog: every lock_reaper_* family is known, every label value is
// one of its label's known names, and every known combination is present.
func requireKnownLabelValues(t *testing.T, samples map[string]float64) {
	t.Helper()
	catalog := map[string]metrics.Family{}
	for _, f := range metrics.Catalog() {
		catalog[f.Name] = f
	}
	seen := map[string]bool{}
	for key := range samples {
		if !strings.HasPrefix(key, "lock_reaper_") {
			continue
		}
		name, labels, _ := strings.Cut(key, "{")
		fam, ok := catalog[name]
		if !ok {
			fam, ok = catalog[strings.TrimSuffix(name, "_count")] // a histogram
		}
		require.True(t, ok, "%s is not a known metric", key)
		seen[fam.Name] = true
		for _, m := range sampleLabel.FindAllStringSubmatch(labels, -1) {
			value, err := strconv.Unquote(m[2])
			require.NoError(t, err, key)
			known, ok := fam.Labels[m[1]]
			require.True(t, ok, "%s: unknown label %s", key, m[1])
			if known != nil {
				require.Contains(t, known, value, "%s: label %s=%q is not a known name", key, m[1], value)
			}
		}
	}
	for _, fam := range metrics.Catalog() {
		// Absent until a pass completes, doctor has run, or the status page
		// built a view (the blocked tasks).
		switch fam.Name {
		case metrics.NameLastSuccess, metrics.NameDoctorCheckStatus, metrics.NameBlockedTasks, metrics.NameOldestBlockedWait:
			continue
		}
		require.True(t, seen[fam.Name], "%s is missing", fam.Name)
	}
}

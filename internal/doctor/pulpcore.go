package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// cleanupFeature is one of pulpcore's own Redis lock cleanups, with the
// first version that has it. All three came with one change, merged on
// pulpcore's main branch on 2026-08-14 (commits f7147f51b and 414897746,
// "clean up stale and orphaned Redis locks (#7919, #7920)", changelog
// fragments CHANGES/7919.bugfix and CHANGES/7920.bugfix) while it was
// 3.117.0.dev, after 3.116.0 (2026-08-12); no 3.116.x or older branch has
// it. The Redis worker itself exists since 3.108.0 (WORKER_TYPE).
type cleanupFeature struct {
	name  string
	since version
}

var cleanupFeatures = []cleanupFeature{
	// pulp:owner_locks:<owner> and pulp:active_owners, kept by the acquire
	// and release scripts (pulpcore/tasking/redis_locks.py).
	{"owner registry", version{3, 117}},
	// RedisWorker.release_stale_locks_for_self at worker start (#7919).
	{"startup self-clean", version{3, 117}},
	// RedisWorker.reconcile_orphan_redis_locks in the periodic cleanup,
	// for owners with no AppStatus row at all (#7920).
	{"orphan reconcile", version{3, 117}},
}

// processVersion counts the core_appstatus rows of one app type and
// pulpcore version ("" when the row records none).
type processVersion struct {
	appType, version string
	count            int
}

func checkPulpcoreVersion(ctx context.Context, t Target) Result {
	rows, err := t.Postgres.Query(ctx, `SELECT app_type, coalesce(versions -> 'core', ''), count(*)::int
		FROM core_appstatus GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		return couldNotCheck("read core_appstatus.versions", err, grantFix(err))
	}
	defer rows.Close()
	var seen []processVersion
	for rows.Next() {
		var pv processVersion
		if err := rows.Scan(&pv.appType, &pv.version, &pv.count); err != nil {
			return couldNotCheck("read core_appstatus.versions", err, "check that database.url names pulpcore's database.")
		}
		seen = append(seen, pv)
	}
	if err := rows.Err(); err != nil {
		return couldNotCheck("read core_appstatus.versions", err, "check that database.url names pulpcore's database.")
	}
	return evalPulpcoreVersions(seen)
}

// evalPulpcoreVersions says which of pulpcore's own cleanups the fleet
// runs. Without them lock-reaper is the only cleanup: the locks of older
// workers are in no registry (only a keyspace scan finds them), a restarted
// worker can be blocked by its own dead incarnation's locks, and the locks
// of owners whose row is gone stay. The evidence is one sentence: doctor
// prints it as the check's line.
func evalPulpcoreVersions(seen []processVersion) Result {
	if len(seen) == 0 {
		return Result{Status: Warn, Evidence: "core_appstatus has no rows: no Pulp process is running, or database.url names another database",
			Fix: "check that database.url names pulpcore's database."}
	}
	var runs, unrecorded, old []string
	oldCount := 0
	for _, pv := range seen {
		if pv.version == "" {
			unrecorded = append(unrecorded, processes(pv))
		} else {
			runs = append(runs, fmt.Sprintf("%s in %s", pv.version, processes(pv)))
		}
		// Content apps take no locks; workers and API processes (immediate
		// tasks) do.
		takesLocks := pv.appType == "worker" || pv.appType == "api"
		if takesLocks && (pv.version == "" || !parseVersion(pv.version).atLeast(cleanupFeatures[0].since)) {
			old = append(old, oldProcesses(pv))
			oldCount += pv.count
		}
	}
	evidence := versionsSentence(runs, unrecorded)
	if len(old) > 0 {
		sort.Strings(old)
		verb := "has"
		if oldCount > 1 {
			verb = "have"
		}
		return Result{Status: Warn, Evidence: fmt.Sprintf("%s; %s %s none of the cleanups pulpcore has since 3.117 (%s)", evidence, joinWords(old), verb, featureNames()),
			Fix: "upgrade pulpcore to 3.117 or later; until then only lock-reaper's full scans (full_scan_interval) find and release these processes' stale locks."}
	}
	return Result{Status: OK, Evidence: evidence + "; every worker and api process has pulpcore's own " + joinWords(featureList())}
}

// versionsSentence says which pulpcore versions the processes run, and
// which processes record none: "Pulp runs pulpcore 3.116.0 in 2 worker
// processes; 1 api process records no version".
func versionsSentence(runs, unrecorded []string) string {
	var parts []string
	if len(runs) > 0 {
		parts = append(parts, "Pulp runs pulpcore "+joinWords(runs))
	}
	if len(unrecorded) > 0 {
		verb := "record"
		if len(unrecorded) == 1 && strings.HasPrefix(unrecorded[0], "1 ") {
			verb = "records"
		}
		what := joinWords(unrecorded)
		if len(runs) == 0 {
			what = "Pulp's " + what
		}
		parts = append(parts, what+" "+verb+" no pulpcore version")
	}
	return strings.Join(parts, "; ")
}

// processes counts one row of processVersion: "1 api process", "3 worker
// processes".
func processes(pv processVersion) string {
	if pv.count == 1 {
		return "1 " + pv.appType + " process"
	}
	return fmt.Sprintf("%d %s processes", pv.count, pv.appType)
}

// oldProcesses names the processes of one row that lack the cleanups.
func oldProcesses(pv processVersion) string {
	what := "the " + pv.appType + " process"
	if pv.count > 1 {
		what = fmt.Sprintf("the %d %s processes", pv.count, pv.appType)
	}
	if pv.version == "" {
		return what + " of unknown version"
	}
	return what + " on " + pv.version
}

// joinWords joins a list as a sentence does: "a", "a and b", "a, b and c".
func joinWords(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func featureList() []string {
	names := make([]string, len(cleanupFeatures))
	for i, f := range cleanupFeatures {
		names[i] = f.name
	}
	return names
}

func featureNames() string { return strings.Join(featureList(), ", ") }

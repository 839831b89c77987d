package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Family describes one metric lock-reaper exports, for tests, documentation
// and the dashboards and alert rules built on these names.
type Family struct {
	Name string
	Type prometheus.ValueType // CounterValue or GaugeValue; UntypedValue for the histogram
	// Labels maps each label to every value its series are created with
	// from the start. A nil list means a free value (build_info's version).
	Labels map[string][]string
}

// Catalog lists every lock_reaper_* metric with its labels and their known
// values. The lists are the ones New pre-creates series from, so the catalog
// and a fresh /metrics page cannot disagree.
func Catalog() []Family {
	counter, gauge, histogram := prometheus.CounterValue, prometheus.GaugeValue, prometheus.UntypedValue
	return []Family{
		{Name: NamePasses, Type: counter, Labels: map[string][]string{"result": stringsOf(outcomes)}},
		{Name: NamePassDuration, Type: histogram},
		{Name: NameReleaseDelay, Type: histogram},
		{Name: NameScans, Type: counter, Labels: map[string][]string{"scope": {scopeFull, scopeRegistry}}},
		{Name: NameKeysScanned, Type: gauge},
		{Name: NameHoldingsScanned, Type: gauge, Labels: map[string][]string{"kind": {kindTask, kindResource}}},
		{Name: NameReleased, Type: counter, Labels: map[string][]string{
			"verdict": namesOf(releaseVerdicts), "kind": namesOf(holdingKinds),
		}},
		{Name: NameTasksUpdated, Type: counter, Labels: map[string][]string{"verdict": namesOf(taskVerdicts)}},
		{Name: NameSuspects, Type: gauge, Labels: map[string][]string{"object": {objectHolding, objectTask}}},
		{Name: NameDeferred, Type: gauge, Labels: map[string][]string{"object": {objectHolding, objectTask}}},
		{Name: NameGuardTrips, Type: counter, Labels: map[string][]string{"guard": guardNames}},
		{Name: NameIgnoredKeys, Type: gauge},
		{Name: NameLastSuccess, Type: gauge},
		{Name: NameTicksSkipped, Type: counter, Labels: map[string][]string{"reason": {TickOverlap, TickBackoff}}},
		{Name: NameHistoryFailures, Type: counter},
		{Name: NameSignalsAgain, Type: counter},
		{Name: NameBookkeepingFailures, Type: counter, Labels: map[string][]string{"record": reaper.BookkeepingRecords}},
		{Name: NameBuildInfo, Type: gauge, Labels: map[string][]string{"version": nil, "goversion": nil}},
		{Name: NameHoldings, Type: gauge, Labels: map[string][]string{"liveness": livenessNames()}},
		{Name: NameOwners, Type: gauge, Labels: map[string][]string{"liveness": livenessNames()}},
		{Name: NameLostTasks, Type: gauge, Labels: map[string][]string{"verdict": namesOf(lostTaskVerdicts)}},
		{Name: NameOldestStaleAge, Type: gauge},
		// Absent until the status page's first view (blockedMetrics).
		{Name: NameBlockedTasks, Type: gauge},
		{Name: NameOldestBlockedWait, Type: gauge},
		{Name: NameUnprotectedTasks, Type: gauge},
		{Name: NameUncommittedWriteHeld, Type: gauge},
		{Name: NameUncommittedWriteAge, Type: gauge},
		{Name: NameKubernetesReads, Type: counter, Labels: map[string][]string{"result": {reaper.KubernetesRead, reaper.KubernetesUnavailable}}},
		{Name: NameKubernetesOwners, Type: gauge, Labels: map[string][]string{"evidence": stringsOf(reaper.EvidenceRules)}},
		{Name: NameKubernetesEventFailures, Type: counter},
		{Name: NameRedisCommands, Type: counter, Labels: map[string][]string{"kind": {commandScan, commandOther}}},
		{Name: NameRedisRoundTrips, Type: counter},
		{Name: NameRedisKeysScanned, Type: counter},
		{Name: NameRedisWait, Type: counter},
		// The check names are doctor's (docs/doctor.md); no series exists
		// before doctor has run, so a fresh scrape has none.
		{Name: NameDoctorCheckStatus, Type: gauge, Labels: map[string][]string{"check": nil}},
	}
}

func stringsOf[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func namesOf[T interface{ String() string }](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func livenessNames() []string { return namesOf(livenesses) }

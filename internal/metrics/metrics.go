// Package metrics turns a pass's reaper.Report into Prometheus metrics, so
// that the `run` daemon (scraped on /metrics) and the one-shot `once` (pushed
// to a Pushgateway) publish the same series from the same source.
//
// Every name starts with lock_reaper_. Labels only ever take values from
// small, fixed sets (results, verdicts, kinds, guard names); a lock key, an
// owner name or a task id never becomes a label, however many there are.
package metrics

import (
	"runtime"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// namespace prefixes every metric name.
const namespace = "lock_reaper"

// Names of the metrics, for tests and documentation.
const (
	NamePasses              = "lock_reaper_passes_total"
	NamePassDuration        = "lock_reaper_pass_duration_seconds"
	NameReleaseDelay        = "lock_reaper_release_delay_seconds"
	NameScans               = "lock_reaper_scans_total"
	NameKeysScanned         = "lock_reaper_lock_keys_scanned"
	NameHoldingsScanned     = "lock_reaper_holdings_scanned"
	NameReleased            = "lock_reaper_holdings_released_total"
	NameTasksUpdated        = "lock_reaper_tasks_updated_total"
	NameSuspects            = "lock_reaper_suspects"
	NameDeferred            = "lock_reaper_deferred"
	NameGuardTrips          = "lock_reaper_guard_trips_total"
	NameIgnoredKeys         = "lock_reaper_ignored_keys"
	NameLastSuccess         = "lock_reaper_last_success_timestamp_seconds"
	NameTicksSkipped        = "lock_reaper_ticks_skipped_total"
	NameHistoryFailures     = "lock_reaper_history_write_failures_total"
	NameBookkeepingFailures = "lock_reaper_bookkeeping_write_failures_total"
	NameSignalsAgain        = "lock_reaper_cancel_signals_republished_total"
	NameBuildInfo           = "lock_reaper_build_info"
	NameHoldings            = "lock_reaper_holdings"
	NameOwners              = "lock_reaper_owners"
	NameLostTasks           = "lock_reaper_lost_tasks"
	NameOldestStaleAge      = "lock_reaper_oldest_stale_holding_age_seconds"
)

// Reasons a scheduled tick passes without a pass, the values of
// lock_reaper_ticks_skipped_total's reason label.
const (
	// TickOverlap: the previous pass was still running.
	TickOverlap = "overlap"
	// TickBackoff: the daemon waits longer after repeated failures.
	TickBackoff = "backoff"
)

// Metrics holds lock-reaper's collectors. Create it with New, register it
// with Register, and feed it each pass's report with Observe.
type Metrics struct {
	passes              *prometheus.CounterVec
	passDuration        prometheus.Histogram
	releaseDelay        prometheus.Histogram
	scans               *prometheus.CounterVec
	keysScanned         prometheus.Gauge
	holdingsScanned     *prometheus.GaugeVec
	released            *prometheus.CounterVec
	tasksUpdated        *prometheus.CounterVec
	suspects            *prometheus.GaugeVec
	deferred            *prometheus.GaugeVec
	guardTrips          *prometheus.CounterVec
	ignoredKeys         prometheus.Gauge
	lastSuccess         *timestampGauge
	ticksSkipped        *prometheus.CounterVec
	historyFailures     prometheus.Counter
	bookkeepingFailures *prometheus.CounterVec
	signalsAgain        prometheus.Counter
	buildInfo           prometheus.Gauge
	fleet
	doctor    *doctorMetrics
	kube      *kubeMetrics
	openWrite *openWriteMetrics
	blocked   *blockedMetrics
	redisLoad *redisLoadMetrics
}

// New returns the collectors, with every series of a known label value
// present at zero, so that rate() and increase() see the first event.
// version is the program's version, for lock_reaper_build_info.
func New(version string) *Metrics {
	m := &Metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "passes_total",
			Help: "Passes by result: success, failed (could not complete), skipped (another reaper or pulpcore's cleanup held the pass lock) or guarded (completed, but a guard held work back).",
		}, []string{"result"}),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "pass_duration_seconds",
			Help:    "Duration of each pass, whatever its result.",
			Buckets: prometheus.ExponentialBucketsRange(0.01, 300, 12),
		}),
		releaseDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "release_delay_seconds",
			Help:    "For each dead owner whose locks a pass released, how long after the rules allowed it: its last heartbeat + ttl + heartbeat_grace, or its container's end as the kubelet reported it.",
			Buckets: []float64{0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "scans_total",
			Help: "Completed passes by what they read: full (keyspace SCAN and owner registry) or registry (owner registry only).",
		}, []string{"scope"}),
		keysScanned: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "lock_keys_scanned",
			Help: "Lock keys read by the last completed pass.",
		}),
		holdingsScanned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "holdings_scanned",
			Help: "Holdings read by the last completed pass, by kind: task (task locks) or resource (exclusive and shared resource holdings).",
		}, []string{"kind"}),
		released: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "holdings_released_total",
			Help: "Holdings released, by verdict and kind (task, exclusive or shared).",
		}, []string{"verdict", "kind"}),
		tasksUpdated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "tasks_updated_total",
			Help: "Tasks canceled, failed or requeued, by verdict.",
		}, []string{"verdict"}),
		suspects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "suspects",
			Help: "Findings of the last completed pass awaiting confirmation on a later pass, by object: holding or task.",
		}, []string{"object"}),
		deferred: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "deferred",
			Help: "Releases and task updates the last completed pass held back (a guard, a per-pass limit, a task lock still held), by object: holding or task.",
		}, []string{"object"}),
		guardTrips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "guard_trips_total",
			Help: "Passes in which a guard held work back, by guard.",
		}, []string{"guard"}),
		ignoredKeys: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "ignored_keys",
			Help: "Keys under the lock prefixes that are not Pulp locks, seen by the last completed pass; they are never touched.",
		}),
		lastSuccess: newTimestampGauge(prometheus.NewDesc(NameLastSuccess,
			"Unix time at which the last pass that completed (success, guarded or skipped) ended. Absent until one has.",
			nil, nil)),
		ticksSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "ticks_skipped_total",
			Help: "Scheduled passes of the daemon that did not run, by reason: overlap (the previous pass was still running) or backoff (waiting after repeated failures).",
		}, []string{"reason"}),
		historyFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "history_write_failures_total",
			Help: "Passes that could not be recorded in the history of passes in Redis (the status page's last passes); the pass itself went on.",
		}),
		signalsAgain: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "cancel_signals_republished_total",
			Help: "Cancel signals of tasks lock-reaper finished in the signal's last 24 hours that Redis did not hold when a pass found its primary unchecked (a failover or restart since), published again.",
		}),
		bookkeepingFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "bookkeeping_write_failures_total",
			Help: "Records of the reaper's own (the registries a pass saw, the suspects, the mass-death guard's memory) that Redis refused for want of memory (OOM); the pass released and updated all the same.",
		}, []string{"record"}),
		buildInfo: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "build_info",
			Help:        "Always 1; the labels name the lock-reaper version and the Go version that built it.",
			ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
		}),
	}
	m.fleet = newFleet()
	m.doctor = newDoctorMetrics()
	m.openWrite = newOpenWriteMetrics()
	m.blocked = newBlockedMetrics()
	m.buildInfo.Set(1)
	m.kube = newKubeMetrics()
	m.redisLoad = newRedisLoadMetrics()
	m.initSeries()
	return m
}

// Known label values, present from the start. Verdicts or guards added to
// the reaper later still appear, from their first occurrence.
var (
	outcomes        = []Outcome{OutcomeSuccess, OutcomeFailed, OutcomeSkipped, OutcomeGuarded}
	releaseVerdicts = writing(judge.HoldingVerdicts)
	holdingKinds    = []judge.Kind{judge.KindTask, judge.KindExclusive, judge.KindShared}
	taskVerdicts    = writing(judge.TaskVerdicts)
	// lostTaskVerdicts are the lost_tasks gauge's: the written verdicts and
	// claimed-not-started, which is only reported but wants a look.
	lostTaskVerdicts = append(slices.Clip(taskVerdicts), judge.VerdictClaimedNotStarted)
	guardNames       = slices.Concat(judge.PassGuards, []string{reaper.GuardRedisFailover})
)

// writing is the verdicts of vs that are acted on (judge.Verdict.Writes).
func writing(vs []judge.Verdict) []judge.Verdict {
	var out []judge.Verdict
	for _, v := range vs {
		if v.Writes() {
			out = append(out, v)
		}
	}
	return out
}

// Label values of the gauges that split holdings from tasks.
const (
	objectHolding = "holding"
	objectTask    = "task"
	kindTask      = "task"
	kindResource  = "resource"
	scopeFull     = "full"
	scopeRegistry = "registry"
)

func (m *Metrics) initSeries() {
	for _, o := range outcomes {
		m.passes.WithLabelValues(string(o))
	}
	for _, s := range []string{scopeFull, scopeRegistry} {
		m.scans.WithLabelValues(s)
	}
	for _, v := range releaseVerdicts {
		for _, k := range holdingKinds {
			// k.String(), not string(k): a Kind is a number, and string()
			// of a number is the character with that code point.
			m.released.WithLabelValues(v.String(), k.String())
		}
	}
	for _, v := range taskVerdicts {
		m.tasksUpdated.WithLabelValues(v.String())
	}
	for _, g := range guardNames {
		m.guardTrips.WithLabelValues(g)
	}
	for _, r := range []string{TickOverlap, TickBackoff} {
		m.ticksSkipped.WithLabelValues(r)
	}
	for _, r := range reaper.BookkeepingRecords {
		m.bookkeepingFailures.WithLabelValues(r)
	}
	for _, k := range []string{kindTask, kindResource} {
		m.holdingsScanned.WithLabelValues(k)
	}
	for _, o := range []string{objectHolding, objectTask} {
		m.suspects.WithLabelValues(o)
		m.deferred.WithLabelValues(o)
	}
	m.fleet.initSeries()
}

// collectors lists every collector, in the order of the documentation.
func (m *Metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{
		m.passes, m.passDuration, m.releaseDelay, m.scans, m.keysScanned, m.holdingsScanned, m.released, m.tasksUpdated,
		m.suspects, m.deferred, m.guardTrips, m.ignoredKeys, m.lastSuccess, m.ticksSkipped, m.historyFailures, m.signalsAgain, m.bookkeepingFailures, m.buildInfo,
		m.holdings, m.owners, m.lostTasks, m.oldestStale, m.blocked, m.kube.reads, m.kube.owners, m.kube.eventFailures,
	}, slices.Concat(m.doctor.collectors(), m.openWrite.collectors(), m.redisLoad.collectors())...)
}

// Register registers every collector with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// TicksSkipped counts n scheduled ticks of the daemon that ran no pass.
func (m *Metrics) TicksSkipped(reason string, n int) {
	if n > 0 {
		m.ticksSkipped.WithLabelValues(reason).Add(float64(n))
	}
}

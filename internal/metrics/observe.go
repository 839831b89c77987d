package metrics

import (
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Outcome is how a pass ended, the value of lock_reaper_passes_total's
// result label.
type Outcome string

// Outcomes of a pass.
const (
	// OutcomeSuccess: the pass completed and no guard held work back.
	OutcomeSuccess Outcome = "success"
	// OutcomeFailed: the pass could not complete (Redis or PostgreSQL
	// unreachable, a statement failed, the pass was cut short).
	OutcomeFailed Outcome = "failed"
	// OutcomeSkipped: another lock-reaper, or pulpcore's own cleanup, held
	// the pass lock, so this pass did nothing. It proves the database
	// reachable and the work being done, so it counts as completed.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeGuarded: the pass completed, but a guard held work back.
	OutcomeGuarded Outcome = "guarded"
)

// OutcomeOf classifies a report.
func OutcomeOf(rep *reaper.Report) Outcome {
	switch {
	case rep.Error != "":
		return OutcomeFailed
	case rep.Skipped != "":
		return OutcomeSkipped
	case len(rep.Guards) > 0:
		return OutcomeGuarded
	default:
		return OutcomeSuccess
	}
}

// Completed says the pass ran to its end: everything but a failure.
func (o Outcome) Completed() bool { return o != OutcomeFailed }

// Observe records one pass and returns its outcome.
//
// Counters count what the pass did, even a pass that failed halfway: its
// releases happened. Gauges describe the last completed pass that read the
// locks, so a failed or skipped pass leaves them as they were.
func (m *Metrics) Observe(rep *reaper.Report) Outcome {
	outcome := OutcomeOf(rep)
	m.passes.WithLabelValues(string(outcome)).Inc()
	m.passDuration.Observe(time.Duration(rep.DurationMS * int64(time.Millisecond)).Seconds())
	for _, d := range rep.ReleaseDelays {
		m.releaseDelay.Observe(d.Seconds())
	}
	for _, g := range rep.Guards {
		m.guardTrips.WithLabelValues(g.Name).Inc()
	}
	for _, f := range rep.Findings {
		if f.Result == reaper.ResultReleased {
			m.released.WithLabelValues(f.Verdict.String(), f.Kind.String()).Inc()
		}
	}
	for _, t := range rep.Tasks {
		if t.Result == reaper.ResultUpdated {
			m.tasksUpdated.WithLabelValues(t.Verdict.String()).Inc()
		}
	}
	if rep.HistoryWriteFailed() {
		m.historyFailures.Inc()
	}
	if rep.SignalCheck != nil {
		m.signalsAgain.Add(float64(rep.SignalCheck.Republished))
	}
	for _, record := range rep.BookkeepingWriteFailures() {
		m.bookkeepingFailures.WithLabelValues(record).Inc()
	}
	m.kube.observe(rep)
	m.redisLoad.observe(rep)
	if outcome.Completed() {
		m.lastSuccess.set(rep.StartedAt.Add(time.Duration(rep.DurationMS) * time.Millisecond))
	}
	if outcome == OutcomeSuccess || outcome == OutcomeGuarded {
		m.observeScan(rep)
	}
	return outcome
}

// observeScan sets the gauges that describe what a completed pass read.
func (m *Metrics) observeScan(rep *reaper.Report) {
	s := rep.Scanned
	scope := scopeRegistry
	if s.FullScan {
		scope = scopeFull
	}
	m.scans.WithLabelValues(scope).Inc()
	m.keysScanned.Set(float64(s.Keys))
	m.holdingsScanned.WithLabelValues(kindTask).Set(float64(s.TaskLocks))
	m.holdingsScanned.WithLabelValues(kindResource).Set(float64(s.ResourceHoldings))
	m.ignoredKeys.Set(float64(s.Ignored))
	sum := rep.Summary
	m.suspects.WithLabelValues(objectHolding).Set(float64(sum.FindingsByResult[reaper.ResultSuspected]))
	m.suspects.WithLabelValues(objectTask).Set(float64(sum.TasksByResult[reaper.ResultSuspected]))
	m.deferred.WithLabelValues(objectHolding).Set(float64(sum.FindingsByResult[reaper.ResultDeferred]))
	m.deferred.WithLabelValues(objectTask).Set(float64(sum.TasksByResult[reaper.ResultDeferred]))
	m.fleet.observe(rep)
	m.doctor.observe(rep)
	m.openWrite.observe(rep)
}

package reaper

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// Modes a pass is recorded under in the history of passes (Options.History):
// the command that ran it, so that a page can tell a CronJob's `once` from a
// daemon's pass.
const (
	HistoryOnce    = "once"
	HistoryRun     = "run"
	HistoryRelease = "release"
)

// recordPass adds the pass to the history of passes (reaper/history), after
// it: a summary others' status pages read. It never fails the pass: a
// failure is logged and marked on the report, for the metric. It writes
// nothing where a pass may not write: no dry run, no skipped pass (the
// reaper holding the lock records its own), and nothing on a Redis that is
// no primary, which the pass checked (redisPrimary) or is asked here when
// the pass stopped before its check.
func (r *Reaper) recordPass(ctx context.Context, opts Options, rep *Report, passErr error) {
	if opts.History == "" || opts.Mode == ModeAudit || rep.Skipped != "" {
		return
	}
	// A pass cut short (the daemon stopping) is still recorded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RedisTimeout)
	defer cancel()
	var np *redislocks.NotPrimaryError
	if errors.As(passErr, &np) {
		return
	}
	if !rep.redisPrimary {
		if err := redislocks.CheckPrimary(ctx, r.rdb, r.cfg.RedisTimeout); err != nil {
			if errors.As(err, &np) {
				return
			}
			r.historyFailed(rep, err)
			return
		}
	}
	e := history.Entry{At: rep.StartedAt, Mode: opts.History, Duration: time.Duration(rep.DurationMS) * time.Millisecond,
		Stale: rep.StaleCount(), Released: rep.Summary.Released, Updated: rep.Summary.TasksUpdated, Error: rep.Error}
	for _, g := range rep.Guards {
		e.Guards = append(e.Guards, g.Name)
	}
	if err := history.Record(ctx, r.rdb, history.DefaultPrefix, e); err != nil {
		r.historyFailed(rep, err)
	}
}

func (r *Reaper) historyFailed(rep *Report, err error) {
	rep.historyFailed = true
	r.log.Warn("the pass is not in the history of passes; it is done all the same", slog.String("error", err.Error()))
}

// HistoryWriteFailed says the pass could not be recorded in the history of
// passes (lock_reaper_history_write_failures_total).
func (r *Report) HistoryWriteFailed() bool { return r.historyFailed }

// StaleCount counts the holdings the pass found stale or suspect: what the
// status page's history plots.
func (r *Report) StaleCount() int {
	n := 0
	for _, f := range r.Findings {
		if f.Verdict.Finding() {
			n++
		}
	}
	return n
}

// RecentPasses reads the history of passes, newest first: at most limit
// (all kept when limit <= 0), started at or after since, each entry and the
// whole read bounded in size (history.Read). The status page reads it.
func (r *Reaper) RecentPasses(ctx context.Context, since time.Time, limit int) (history.Passes, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	return history.Read(ctx, r.rdb, history.DefaultPrefix, since, limit)
}

package daemon

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// PassResult is what one scheduled pass found and did, and what comes next.
type PassResult struct {
	// Report is the pass's report, never nil.
	Report *reaper.Report
	// Err is why the pass could not complete; also in Report.Error.
	Err     error
	Outcome metrics.Outcome
	// FullScan says the pass scanned the keyspace, not only the registry.
	FullScan bool
	// Failures counts the failed passes in a row, this one included.
	Failures int
	// Next is when the next pass is due (before its jitter).
	Next NextPass
	// Woken says a wake (Config.Wake, or a heartbeat read: Config.Heartbeats)
	// started the pass, not its tick; StartedBy says which.
	Woken     bool
	StartedBy string
	// snapshot is what the pass judged; nil when it read none.
	snapshot *judge.Snapshot
}

// loopState is what the loop remembers from pass to pass.
type loopState struct {
	failures     int
	lastFullScan time.Time
}

// loop runs passes until ctx is cancelled: the first at once, the others on
// the schedule, each after its jitter, and one after each burst of wakes,
// without jitter: a wake means a worker just died.
func (d *Daemon) loop(ctx context.Context) {
	defer d.health.loopStopped()
	var (
		st     loopState
		clock  verdictClock
		tick   = time.Now()
		reason string
	)
	if !ctxwait.Sleep(ctx, d.jitter()) {
		return
	}
	for {
		if !d.awaitDoctor(ctx) {
			return
		}
		res := d.runOnce(ctx, &st)
		res.Woken, res.StartedBy = reason != StartedBySchedule, reason
		clock.passed(res.Report.DBNow, res.Report.NextChange)
		res.Next = planNext(d.schedule, tick, time.Now(), st.failures, d.cfg.MaxRetryDelay)
		d.metrics.TicksSkipped(metrics.TickOverlap, res.Next.Overlapped)
		d.metrics.TicksSkipped(metrics.TickBackoff, res.Next.BackedOff)
		d.logPass(res)
		if d.cfg.Pages != nil {
			d.cfg.Pages.PassDone(res.snapshot, res.Report, res.Next.At)
		}
		if d.passDone != nil {
			d.passDone(res)
		}
		// The report's findings point into the pass's judgement of every
		// holding, and the page is judging the snapshot again: let them go
		// rather than hold both through the wait.
		next := res.Next.At
		res = PassResult{}
		if d.doctorDone == nil {
			d.doctorDone = d.startDoctor(ctx)
		}
		var ok bool
		if reason, ok = d.waitNext(ctx, next, &clock); !ok {
			return
		}
		if reason == StartedBySchedule {
			tick = next
		}
	}
}

// waitNext sleeps until the tick at and its jitter, until a wake and its
// debounce, or until a heartbeat read finds a pass due, whichever comes
// first, and says what ended the wait (StartedBySchedule for the tick); ok
// is false once ctx is cancelled. The jitter is part of the wait, so that
// the heartbeat reads go on through it: a row that dies just after a tick
// does not wait for the tick's jitter. A woken pass leaves the schedule as
// it was: the tick after it stays due.
func (d *Daemon) waitNext(ctx context.Context, at time.Time, clock *verdictClock) (reason string, ok bool) {
	var timer <-chan time.Time
	if !at.IsZero() {
		t := time.NewTimer(time.Until(at) + d.jitter())
		defer t.Stop()
		timer = t.C
	}
	var due chan string
	if d.cfg.Heartbeats != nil {
		pollCtx, stop := context.WithCancel(ctx)
		due = make(chan string, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if r, ok := d.pollHeartbeats(pollCtx, clock); ok {
				due <- r
			}
		}()
		// The poll ends before the clock is read again.
		defer func() { stop(); <-done }()
	}
	select {
	case <-ctx.Done():
		return "", false
	case <-timer:
		return StartedBySchedule, true
	case r := <-due:
		// A worker's death by heartbeat: no debounce, the deadline is now.
		return r, true
	case <-d.cfg.Wake:
	}
	if !ctxwait.Sleep(ctx, d.cfg.WakeDebounce) {
		return "", false
	}
	// The wakes of the burst are this pass's.
	for {
		select {
		case <-d.cfg.Wake:
		default:
			return StartedByKubernetes, true
		}
	}
}

// runOnce runs one pass, records it in the metrics and the health state, and
// returns its result.
func (d *Daemon) runOnce(ctx context.Context, st *loopState) PassResult {
	start := time.Now()
	full := st.lastFullScan.IsZero() || start.Sub(st.lastFullScan) >= d.cfg.FullScanInterval
	passCtx, done := d.passContext(ctx)
	d.health.passStarted(start)
	opts := reaper.Options{Mode: reaper.ModeOnce, History: reaper.HistoryRun, RegistryOnly: !full}
	var snap *judge.Snapshot
	if d.cfg.Pages != nil {
		d.cfg.Pages.Shed()
		opts.Snapshot = func(s judge.Snapshot, findings int) {
			if d.cfg.Pages.KeepsSnapshot(findings) {
				snap = &s
			}
		}
	}
	rep, err := d.runner.RunOnce(passCtx, opts)
	done()
	if rep == nil {
		rep = &reaper.Report{Mode: reaper.ModeOnce, StartedAt: start.UTC()}
	}
	if err != nil && rep.Error == "" {
		rep.Error = err.Error()
	}
	outcome := d.metrics.Observe(rep)
	d.health.passEnded(outcome.Completed())
	if d.cfg.Events != nil {
		d.metrics.KubernetesEventFailures(d.cfg.Events(ctx, rep))
	}
	if outcome.Completed() {
		st.failures = 0
	} else {
		st.failures++
	}
	// A skipped pass read nothing, so the full scan it was meant to be is
	// still due.
	if full && (outcome == metrics.OutcomeSuccess || outcome == metrics.OutcomeGuarded) {
		st.lastFullScan = start
	}
	return PassResult{Report: rep, Err: err, Outcome: outcome, FullScan: full, Failures: st.failures, snapshot: snap}
}

// passContext is the context of one pass. Cancelling ctx does not stop the
// pass at once: it gets ShutdownGrace to finish, because a pass that ends
// normally reports and remembers its suspects. PassTimeout bounds it anyway.
// done must be called when the pass returns.
func (d *Daemon) passContext(ctx context.Context) (passCtx context.Context, done func()) {
	passCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.PassTimeout)
	var (
		mu       sync.Mutex
		finished bool
		grace    *time.Timer
	)
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		d.log.Info("stopping: finishing the pass under way", slog.Duration("grace", d.cfg.ShutdownGrace))
		grace = time.AfterFunc(d.cfg.ShutdownGrace, cancel)
	})
	return passCtx, func() {
		stopAfter()
		mu.Lock()
		finished = true
		if grace != nil {
			grace.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// jitter is a random delay in [0, Jitter).
func (d *Daemon) jitter() time.Duration {
	if d.cfg.Jitter <= 0 {
		return 0
	}
	if d.jitterN != nil {
		return d.jitterN(d.cfg.Jitter)
	}
	return rand.N(d.cfg.Jitter)
}

// logPass logs a pass that did or held back something at info, a quiet one
// at debug, and a failure, which the reaper has logged already, with when it
// will be retried.
func (d *Daemon) logPass(res PassResult) {
	rep := res.Report
	attrs := []slog.Attr{
		slog.String("result", string(res.Outcome)), slog.Bool("full_scan", res.FullScan),
		slog.Int64("duration_ms", rep.DurationMS), slog.Time("next_pass", res.Next.At),
	}
	if res.StartedBy != StartedBySchedule {
		attrs = append(attrs, slog.String("started_by", res.StartedBy))
	}
	if n := res.Next.Overlapped; n > 0 {
		d.log.Warn("scheduled passes skipped: the previous pass was still running", slog.Int("ticks", n))
	}
	switch {
	case res.Outcome == metrics.OutcomeFailed:
		if errors.Is(res.Err, context.Canceled) {
			return
		}
		attrs = append(attrs, slog.Int("consecutive_failures", res.Failures), slog.String("error", rep.Error))
		d.log.LogAttrs(context.Background(), slog.LevelWarn, "pass will be retried", attrs...)
	case res.Outcome == metrics.OutcomeSkipped:
		d.log.LogAttrs(context.Background(), slog.LevelDebug, "pass completed", attrs...)
	default:
		s := rep.Summary
		attrs = append(attrs, slog.Int("released", s.Released), slog.Int("tasks_updated", s.TasksUpdated),
			slog.Int("suspects", s.Suspects), slog.Int("deferred", s.Deferred))
		level := slog.LevelDebug
		if s.Released > 0 || s.TasksUpdated > 0 || s.Suspects > 0 || s.Deferred > 0 || len(rep.Guards) > 0 {
			level = slog.LevelInfo
		}
		d.log.LogAttrs(context.Background(), level, "pass completed", attrs...)
	}
}

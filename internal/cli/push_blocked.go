package cli

import (
	"time"

	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/internal/status"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// passBlocked is what the status page would say first after a pass: how
// many waiting tasks are blocked and how long the oldest has waited.
type passBlocked struct {
	tasks      int
	oldestWait time.Duration
}

// blockedView is the status page's view of one pass of `once` that pushes
// its metrics: a pass reads no waiting task, the page's view of it does,
// and `once` pushes the numbers `run` exports from its page
// (lock_reaper_blocked_tasks), counted the same way. Nothing is served.
type blockedView struct {
	pages *status.Server
	snap  *judge.Snapshot
}

// newBlockedView returns the view of a pass that pushes its metrics, nil
// for one that pushes nothing.
func newBlockedView(s *setup, r *reaper.Reaper, mode string) *blockedView {
	if s.cfg.PushgatewayURL == "" || mode != reaper.ModeOnce {
		return nil
	}
	return &blockedView{pages: status.New(r, status.Options{Logger: s.log, QueueOnly: true})}
}

// keep is the pass's Options.Snapshot: the snapshot is kept through the
// pass's writes when the page would keep it under the memory limit, as
// `run` keeps it; otherwise the view reads an inspection after the pass.
func (b *blockedView) keep(snap judge.Snapshot, findings int) {
	if b.pages.KeepsSnapshot(findings) {
		b.snap = &snap
	}
}

// after builds the view of the pass and returns its blocked tasks; nil
// when the pass did not complete a read of the locks (it failed or was
// skipped), or the view's waiting tasks could not be read: then the push
// carries no blocked tasks, and the Pushgateway keeps the last it had.
func (b *blockedView) after(rep *reaper.Report) *passBlocked {
	if b == nil {
		return nil
	}
	if o := metrics.OutcomeOf(rep); o != metrics.OutcomeSuccess && o != metrics.OutcomeGuarded {
		return nil
	}
	var out *passBlocked
	b.pages.ObserveBlocked(func(tasks int, oldestWait time.Duration) { out = &passBlocked{tasks, oldestWait} })
	b.pages.PassDone(b.snap, rep, time.Time{})
	b.snap = nil
	// PassDone builds the view in the background; Wait orders its result
	// before the read below.
	b.pages.Wait()
	return out
}

// observe sets the blocked tasks of a pass in m, when known.
func (p *passBlocked) observe(m *metrics.Metrics) {
	if p != nil {
		m.SetBlocked(p.tasks, p.oldestWait)
	}
}

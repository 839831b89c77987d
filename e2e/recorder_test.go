package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// passRecorder runs reaper passes for the pass loop and for the daemon (it
// is a daemon.Runner), keeps what every pass released and updated, and
// checks each pass against the fleet's work: a holding that a live process
// was working on from before the pass until after it, with a heartbeat fresh
// for the whole pass, must not be among the pass's releases.
type passRecorder struct {
	fleet *sim.Fleet
	inner daemon.Runner

	mu       sync.Mutex
	passes   int
	skipped  int
	failures []string // passes that could not complete, while the test ran
	guards   map[string]int
	// released counts the findings reported released, by holding.
	released          map[holdingRef]int
	releasedByVerdict map[judge.Verdict]int
	results           map[reaper.Result]int
	// summaryReleased and summaryUpdated add up the reports' summaries.
	summaryReleased int
	summaryUpdated  int
	updated         []reaper.TaskFinding
	// unsafe lists the releases of holdings that were actively worked on.
	unsafe []string
	// quietFrom, once set, counts the passes that start after it.
	quietFrom   time.Time
	passesQuiet int
	// failedPasses are the failures with their spans; updatedFrom[i] and
	// updatedAt[i] are when the pass of updated[i] started and ended;
	// reportedNotStarted is when a pass first reported each
	// claimed-not-started task once confirmed.
	failedPasses       []passSpan
	spans              []passSpan // every pass, for a failure's message
	updatedFrom        []time.Time
	updatedAt          []time.Time
	reportedNotStarted map[string]time.Time
}

// passSpan is a pass from start to end: its error, why it skipped, its
// guards.
type passSpan struct {
	start, end time.Time
	err        string
	note       string
}

var _ daemon.Runner = (*passRecorder)(nil)

func newPassRecorder(fleet *sim.Fleet, inner daemon.Runner) *passRecorder {
	return &passRecorder{
		fleet: fleet, inner: inner, guards: map[string]int{}, released: map[holdingRef]int{},
		releasedByVerdict: map[judge.Verdict]int{}, results: map[reaper.Result]int{},
		reportedNotStarted: map[string]time.Time{},
	}
}

// RunOnce runs one pass between two looks at the fleet's work.
func (p *passRecorder) RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
	before := p.fleet.ActiveHoldings()
	start := time.Now()
	rep, err := p.inner.RunOnce(ctx, opts)
	end := time.Now()
	after := p.fleet.ActiveHoldings()
	unsafe := append(unsafeReleases(rep, before, after, end), unsafeTaskUpdates(rep, before, after, end)...)
	p.record(ctx, rep, err, start, end, unsafe)
	return rep, err
}

// unsafeTaskUpdates lists the tasks the report updated although a live
// process worked on them throughout the pass, as unsafeReleases does for
// holdings: no task may be ended or requeued under a live worker's hands.
func unsafeTaskUpdates(rep *reaper.Report, before, after []sim.ActiveHolding, end time.Time) []string {
	if rep == nil {
		return nil
	}
	still := make(map[activeID]bool, len(after))
	for _, h := range after {
		still[activeIDOf(h)] = true
	}
	worked := map[string]sim.ActiveHolding{}
	for _, h := range before {
		if h.Kind == sim.KindTask && still[activeIDOf(h)] && !end.After(h.LiveUntil) {
			worked[h.Task] = h
		}
	}
	var out []string
	for _, tf := range rep.Tasks {
		if h, ok := worked[tf.ID]; ok && tf.Result == reaper.ResultUpdated {
			out = append(out, fmt.Sprintf("pass at %s updated task %s (verdict %s, %s -> %s) while %s worked on it since %s",
				rep.StartedAt.Format(time.RFC3339Nano), tf.ID, tf.Verdict, tf.StateBefore, tf.StateAfter, h.Owner,
				h.Since.Format(time.RFC3339Nano)))
		}
	}
	return out
}

// activeID names one stretch of work on one holding.
type activeID struct {
	ref   holdingRef
	row   string
	since int64
}

func activeIDOf(h sim.ActiveHolding) activeID {
	return activeID{ref: holdingRef{Key: h.Key, Owner: h.Owner}, row: h.AppStatusID, since: h.Since.UnixNano()}
}

// unsafeReleases lists the holdings the report released although the fleet
// was working on them throughout the pass: listed both before and after it
// as the same stretch of work, by a process that no correct reaper could
// judge dead before the pass ended. Every release happened before end.
func unsafeReleases(rep *reaper.Report, before, after []sim.ActiveHolding, end time.Time) []string {
	if rep == nil {
		return nil
	}
	still := make(map[activeID]bool, len(after))
	for _, h := range after {
		still[activeIDOf(h)] = true
	}
	protected := map[holdingRef]sim.ActiveHolding{}
	for _, h := range before {
		if still[activeIDOf(h)] && !end.After(h.LiveUntil) {
			protected[holdingRef{Key: h.Key, Owner: h.Owner}] = h
		}
	}
	var out []string
	for _, f := range rep.Findings {
		if f.Result != reaper.ResultReleased {
			continue
		}
		if h, ok := protected[holdingRef{Key: f.Key, Owner: f.Owner}]; ok {
			out = append(out, fmt.Sprintf("pass at %s released %s (verdict %s, task %s) while %s worked on task %s since %s, alive until at least %s",
				rep.StartedAt.Format(time.RFC3339Nano), f.Key, f.Verdict, f.TaskID(), h.Owner, h.Task,
				h.Since.Format(time.RFC3339Nano), h.LiveUntil.Format(time.RFC3339Nano)))
		}
	}
	return out
}

func (p *passRecorder) record(ctx context.Context, rep *reaper.Report, err error, start, end time.Time, unsafe []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.passes++
	if !p.quietFrom.IsZero() && !start.Before(p.quietFrom) {
		p.passesQuiet++
	}
	p.unsafe = append(p.unsafe, unsafe...)
	if err != nil && ctx.Err() == nil {
		p.failures = append(p.failures, fmt.Sprintf("pass at %s: %v", start.Format(time.RFC3339Nano), err))
		p.failedPasses = append(p.failedPasses, passSpan{start: start, end: end, err: err.Error()})
	}
	span := passSpan{start: start, end: end}
	if err != nil {
		span.err = err.Error()
	}
	if rep != nil {
		span.note = rep.Skipped
		for _, g := range rep.Guards {
			span.note += " guard " + g.Name
		}
	}
	p.spans = append(p.spans, span)
	if rep == nil {
		return
	}
	if rep.Skipped != "" {
		p.skipped++
	}
	for _, g := range rep.Guards {
		p.guards[g.Name]++
	}
	p.summaryReleased += rep.Summary.Released
	p.summaryUpdated += rep.Summary.TasksUpdated
	for _, f := range rep.Findings {
		p.results[f.Result]++
		if f.Result == reaper.ResultReleased {
			p.released[holdingRef{Key: f.Key, Owner: f.Owner}]++
			p.releasedByVerdict[f.Verdict]++
		}
	}
	for _, tf := range rep.Tasks {
		if tf.Result == reaper.ResultUpdated {
			p.updated = append(p.updated, tf)
			p.updatedFrom = append(p.updatedFrom, start)
			p.updatedAt = append(p.updatedAt, end)
		}
		if tf.Verdict == judge.VerdictClaimedNotStarted && tf.Action == judge.ActionReport {
			if _, seen := p.reportedNotStarted[tf.ID]; !seen {
				p.reportedNotStarted[tf.ID] = end
			}
		}
	}
}

// markQuiet starts counting the passes that begin from now on.
func (p *passRecorder) markQuiet(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quietFrom = at
}

// recorded is a copy of what a passRecorder has recorded.
type recorded struct {
	passes, skipped, passesQuiet    int
	failures, unsafe                []string
	guards                          map[string]int
	released                        map[holdingRef]int
	releasedByVerdict               map[judge.Verdict]int
	results                         map[reaper.Result]int
	summaryReleased, summaryUpdated int
	updated                         []reaper.TaskFinding
	updatedFrom, updatedAt          []time.Time
	failedPasses, spans             []passSpan
	reportedNotStarted              map[string]time.Time
}

func (p *passRecorder) snapshot() recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := recorded{
		passes: p.passes, skipped: p.skipped, passesQuiet: p.passesQuiet,
		failures: append([]string(nil), p.failures...), unsafe: append([]string(nil), p.unsafe...),
		guards: map[string]int{}, released: map[holdingRef]int{}, releasedByVerdict: map[judge.Verdict]int{},
		results: map[reaper.Result]int{}, summaryReleased: p.summaryReleased, summaryUpdated: p.summaryUpdated,
		updated: append([]reaper.TaskFinding(nil), p.updated...), updatedAt: append([]time.Time(nil), p.updatedAt...),
		updatedFrom:  append([]time.Time(nil), p.updatedFrom...),
		failedPasses: append([]passSpan(nil), p.failedPasses...), reportedNotStarted: map[string]time.Time{},
		spans: append([]passSpan(nil), p.spans...),
	}
	for k, v := range p.reportedNotStarted {
		r.reportedNotStarted[k] = v
	}
	for k, v := range p.guards {
		r.guards[k] = v
	}
	for k, v := range p.released {
		r.released[k] = v
	}
	for k, v := range p.releasedByVerdict {
		r.releasedByVerdict[k] = v
	}
	for k, v := range p.results {
		r.results[k] = v
	}
	return r
}

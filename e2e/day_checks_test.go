package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// daySlack is what a bound may be exceeded by before the day fails, for a
// loaded CI machine running with -race (as convergeSlack); the figures say
// how many cases met the bound itself.
const daySlack = time.Minute

// latencies are one bound's figures.
type latencies struct {
	name       string
	bound      time.Duration
	n, within  int
	worst      time.Duration
	moved      int // clock started at the end of an outage
	overSlack  []string
	unresolved []string
	otherwise  int // ended otherwise (a cancel, a restart, a shutdown)
	// finishedByWorker: a canceled claim its worker ran and canceled
	// itself (not stuck).
	finishedByWorker int
}

func (l *latencies) add(what string, took time.Duration, moved bool) {
	l.n++
	if moved {
		l.moved++
	}
	l.worst = max(l.worst, took)
	if took <= l.bound {
		l.within++
	}
	if took > l.bound+daySlack {
		l.overSlack = append(l.overSlack, fmt.Sprintf("%s after %v", what, took.Round(time.Millisecond)))
	}
}

func (l *latencies) String() string {
	s := fmt.Sprintf("%s: %d cases, %d within the bound %v (worst %v; %d counted from an outage's end; %d ended otherwise)",
		l.name, l.n, l.within, l.bound.Round(time.Millisecond), l.worst.Round(time.Millisecond), l.moved, l.otherwise)
	if l.finishedByWorker > 0 {
		s += fmt.Sprintf("; %d canceled claims their worker ran and canceled itself", l.finishedByWorker)
	}
	return s
}

// watchDeaths follows every worker death (a kill, a shutdown that kept its
// row) until the dead worker's locks are gone, or it runs again under its
// name (a restarted pulpcore worker frees its own name's locks). The
// returned function stops it and gives the figures.
func (d *day) watchDeaths() func() *latencies {
	ctx, cancel := context.WithCancel(d.ctx)
	out := &latencies{name: "dead workers' locks freed", bound: deadWorkerBound()}
	done := make(chan struct{})
	type death struct {
		name string
		at   time.Time
	}
	var pending []death
	seen := 0
	go func() {
		defer close(done)
		for ctxwait.Sleep(ctx, dayCheckEvery) {
			evs := d.fleet.Faults()
			for _, ev := range evs[seen:] {
				if ev.Kind == sim.FaultKill || ev.Kind == sim.FaultShutdown && strings.HasSuffix(ev.Detail, "row kept") {
					pending = append(pending, death{name: ev.Process, at: ev.At})
				}
			}
			seen = len(evs)
			holdings, err := sim.ScanHoldings(ctx, d.rdb)
			if err != nil {
				continue // Redis restarting
			}
			held := map[string]bool{}
			for _, h := range holdings {
				held[h.Owner] = true
			}
			alive := map[string]bool{}
			for _, p := range d.fleet.Processes() {
				alive[p.Name] = p.Alive
			}
			outages := d.outages()
			kept := pending[:0]
			for _, dd := range pending {
				switch {
				case alive[dd.name]:
					out.otherwise++
				case !held[dd.name]:
					start, moved := clockStart(dd.at, out.bound, outages)
					out.add(dd.name, max(time.Since(start), 0), moved)
				default:
					kept = append(kept, dd)
				}
			}
			pending = kept
		}
		for _, dd := range pending {
			out.unresolved = append(out.unresolved, fmt.Sprintf("%s died at %s", dd.name, dd.at.Format(time.RFC3339Nano)))
		}
	}()
	var once sync.Once
	return func() *latencies {
		once.Do(func() { cancel(); <-done })
		return out
	}
}

// checkDay checks the day's promises and logs its figures.
func (d *day) checkDay(days int, deaths *latencies) {
	t := d.t
	rec := d.rec.snapshot()
	faults := d.fleet.Faults()
	outages := d.outages()

	// Safety: no live task's lock released, no task a live worker worked on
	// updated (rec.unsafe holds both), no fleet violation.
	var problems []string
	for _, v := range d.fleet.Violations() {
		problems = append(problems, "fleet violation: "+v.String())
	}
	problems = append(problems, rec.unsafe...)
	// A pass may fail only in an outage (a read-only database, Redis down).
	failedOutside := 0
	for _, fp := range rec.failedPasses {
		in := false
		for _, o := range outages {
			if fp.end.After(o.start) && fp.start.Before(o.end) {
				in = true
			}
		}
		if !in {
			failedOutside++
			problems = append(problems, fmt.Sprintf("pass failed outside an outage at %s: %s", fp.start.Format(time.RFC3339Nano), fp.err))
		}
	}
	if n := d.fleet.Stats().Errors; n > 0 {
		problems = append(problems, fmt.Sprintf("the simulated processes hit %d unexpected errors (see the log)", n))
	}

	stranded := d.strandedFigures(faults, rec, outages)
	stuck := stuckCancelingFigures(faults, rec, outages)
	notStarted := d.notStartedFigures(faults, rec, outages)
	for _, l := range []*latencies{deaths, stranded, stuck, notStarted} {
		for _, s := range l.overSlack {
			problems = append(problems, fmt.Sprintf("%s: %s, past the bound %v + %v", l.name, s, l.bound, daySlack))
		}
		for _, s := range l.unresolved {
			problems = append(problems, fmt.Sprintf("%s: never: %s", l.name, s))
		}
	}

	st := d.fleet.Stats()
	byVerdict := map[judge.Verdict]int{}
	for _, tf := range rec.updated {
		byVerdict[tf.Verdict]++
	}
	kills, shutdowns := 0, map[string]int{}
	for _, ev := range faults {
		switch ev.Kind {
		case sim.FaultKill:
			kills++
		case sim.FaultShutdown:
			shutdowns[ev.Detail]++
		}
	}
	t.Logf("DAY FIGURES: %d day(s) in %v, seed %d", days, time.Since(d.started).Round(time.Second), d.seed)
	t.Logf("  events: %s", d.eventList())
	t.Logf("  tasks: created %d, completed %d, canceled %d, failed %d (aborted on shutdown %d); stranded claims %d, hangs before start %d",
		st.TasksCreated, st.TasksCompleted, st.TasksCanceled, st.TasksFailed, st.Aborted, st.StrandedClaims, st.Faults[sim.FaultHangBeforeStart])
	t.Logf("  workers: shutdowns %v; kills %d; restarts %d; expected errors in outages %d", shutdowns, kills, st.Faults[sim.FaultRestart], st.ExpectedErrors)
	t.Logf("  passes %d (skipped %d, failed %d, %d of them outside an outage); guards %v", rec.passes, rec.skipped, len(rec.failedPasses), failedOutside, rec.guards)
	t.Logf("  released %d by verdict %v; tasks updated %d by verdict %v", rec.summaryReleased, rec.releasedByVerdict, len(rec.updated), byVerdict)
	t.Logf("  %s", deaths)
	t.Logf("  %s", stranded)
	t.Logf("  %s", stuck)
	t.Logf("  %s", notStarted)
	t.Logf("  violations: fleet %d, unsafe releases or task updates %d", len(d.fleet.Violations()), len(rec.unsafe))
	require.Empty(t, problems, d.msg("the day's promises"))
}

func (d *day) eventList() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	counts := map[string]int{}
	var names []string
	for _, e := range d.events {
		if counts[e.name] == 0 {
			names = append(names, e.name)
		}
		counts[e.name]++
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s ×%d", n, counts[n]))
	}
	return strings.Join(parts, ", ")
}

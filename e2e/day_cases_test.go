package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// reaperUpdate is one task update a pass made: the pass's start and end.
type reaperUpdate struct {
	verdict    judge.Verdict
	from, till time.Time
}

// updatesByTask lists the passes' task updates by task, in pass order.
func updatesByTask(rec recorded) map[string][]reaperUpdate {
	out := map[string][]reaperUpdate{}
	for i, tf := range rec.updated {
		out[tf.ID] = append(out[tf.ID], reaperUpdate{verdict: tf.Verdict, from: rec.updatedFrom[i], till: rec.updatedAt[i]})
	}
	return out
}

// faultTimes lists the times of the faults of one kind, by task, in order.
func faultTimes(faults []sim.FaultEvent, kind sim.FaultKind) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, ev := range faults {
		if ev.Kind == kind {
			out[ev.Task] = append(out[ev.Task], ev.At)
		}
	}
	return out
}

// lastBefore is the latest of ats (in order) before t.
func lastBefore(ats []time.Time, t time.Time) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(ats, t, func(a, b time.Time) int { return a.Compare(b) })
	if i == 0 {
		return time.Time{}, false
	}
	return ats[i-1], true
}

// strandedFigures: each stranded claim was requeued by the reaper within the
// bound of a compatible worker being online, or ended otherwise (canceled,
// then stuck-canceling; its worker's row deleted on SIGTERM, which unclaims
// it; its worker died). That every one ended is the drain's check.
//
// A task can be stranded more than once before a requeue: its worker's row
// deleted on SIGTERM unclaims it, and another old worker claims and strands
// it again. A requeue ends the stranding it saw, the latest one before its
// pass started (the write is conditional on the claim the pass read); the
// earlier ones ended otherwise, so each stranding counts once.
func (d *day) strandedFigures(faults []sim.FaultEvent, rec recorded, outages []dayEvent) *latencies {
	out := &latencies{name: "stranded tasks requeued", bound: strandedBound()}
	d.mu.Lock()
	ups := append([]upgrade(nil), d.upgrades...)
	d.mu.Unlock()
	updates := updatesByTask(rec)
	for task, ats := range faultTimes(faults, sim.FaultStranded) {
		requeued := map[time.Time]time.Time{} // stranding -> the end of the pass that requeued it
		for _, u := range updates[task] {
			if u.verdict != judge.VerdictStranded {
				continue
			}
			if at, ok := lastBefore(ats, u.from); ok {
				if _, seen := requeued[at]; !seen {
					requeued[at] = u.till
				}
			}
		}
		for _, at := range ats {
			end, ok := requeued[at]
			if !ok {
				out.otherwise++
				continue
			}
			// The clock starts once a worker that can run the task is online.
			from := at
			for _, u := range ups {
				if !u.began.After(at) && u.compatible.After(at) {
					from = u.compatible
				}
			}
			start, moved := clockStart(from, out.bound, outages)
			out.add(task, max(end.Sub(start), 0), moved)
		}
	}
	return out
}

// stuckCancelingFigures: each stranded task a user canceled (canceling,
// claimed by a live worker that never runs it) was canceled by the reaper
// within the bound of becoming stuck-canceling: the later of the cancel and
// the stranding the pass saw. One whose worker died or shut down first is
// canceled as lost instead (ended otherwise, within the dead worker's
// figures); one its worker claimed but was not too old for is canceled by
// that worker. That every one ended is the drain's check.
func stuckCancelingFigures(faults []sim.FaultEvent, rec recorded, outages []dayEvent) *latencies {
	out := &latencies{name: "stuck-canceling tasks canceled", bound: stuckCancelingBound()}
	stranded := faultTimes(faults, sim.FaultStranded)
	updates := updatesByTask(rec)
	for task, cancels := range faultTimes(faults, sim.FaultCancelClaimed) {
		ended := false
		for _, u := range updates[task] {
			c, ok := lastBefore(cancels, u.from)
			if !ok {
				continue
			}
			ended = true
			s, ok := lastBefore(stranded[task], u.from)
			if u.verdict != judge.VerdictStuckCanceling || !ok {
				out.otherwise++
				break
			}
			start, moved := clockStart(later(c, s), out.bound, outages)
			out.add(task, max(u.till.Sub(start), 0), moved)
			break
		}
		if !ended {
			out.finishedByWorker++
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// notStartedFigures: each task whose process hung before set_running for
// longer than the bound, while its worker lived, was reported.
func (d *day) notStartedFigures(faults []sim.FaultEvent, rec recorded, outages []dayEvent) *latencies {
	out := &latencies{name: "claimed-never-started tasks reported", bound: notStartedBound()}
	ended := map[string][]time.Time{} // a worker's deaths and shutdowns
	for _, ev := range faults {
		if ev.Kind == sim.FaultKill || ev.Kind == sim.FaultShutdown {
			ended[ev.Process] = append(ended[ev.Process], ev.At)
		}
	}
	// A user's cancel of the hung task makes it canceling, which its live
	// worker holds the lock of: no longer claimed-not-started (the worker
	// finishes the cancel at set_running).
	canceled := faultTimes(faults, sim.FaultCancelClaimed)
	for _, ev := range faults {
		if ev.Kind != sim.FaultHangBeforeStart {
			continue
		}
		start, moved := clockStart(ev.At, out.bound, outages)
		interrupted := start.Add(out.bound).After(ev.At.Add(dayHangFor))
		for _, at := range ended[ev.Process] {
			if !at.Before(ev.At) && at.Before(ev.At.Add(dayHangFor)) {
				interrupted = true
			}
		}
		for _, at := range canceled[ev.Task] {
			if !at.Before(ev.At) && at.Before(start.Add(out.bound)) {
				interrupted = true
			}
		}
		at, ok := rec.reportedNotStarted[ev.Task]
		switch {
		case ok:
			out.add(ev.Task, max(at.Sub(start), 0), moved)
		case interrupted:
			out.otherwise++
		default:
			out.unresolved = append(out.unresolved, fmt.Sprintf("task %s hung under %s from %s; %s",
				ev.Task, ev.Process, ev.At.Format(time.RFC3339Nano), caseContext(faults, rec, ev.Process, ev.Task, ev.At, ev.At.Add(dayHangFor))))
		}
	}
	return out
}

// caseContext says, for a failure's message, what befell the fleet's
// process and the task, and which passes ran, from from to till.
func caseContext(faults []sim.FaultEvent, rec recorded, process, task string, from, till time.Time) string {
	var parts []string
	for _, ev := range faults {
		if (ev.Process == process || ev.Task == task) && ev.At.After(from.Add(-10*time.Second)) && ev.At.Before(till) {
			parts = append(parts, fmt.Sprintf("%s %s %s %s", ev.At.Format("15:04:05.000"), ev.Kind, ev.Task, ev.Detail))
		}
	}
	for _, sp := range rec.spans {
		if sp.end.After(from) && sp.start.Before(till) {
			parts = append(parts, fmt.Sprintf("pass %s-%s %s %s", sp.start.Format("15:04:05.000"), sp.end.Format("15:04:05.000"), sp.err, sp.note))
		}
	}
	return strings.Join(parts, "; ")
}

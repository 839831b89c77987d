package judge

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// MassDeathWindow is how long a worker row counts as a death for the
// mass-death guard, from the moment it became dead (last heartbeat + ttl +
// grace), while some worker row is alive: six heartbeat ttls of pulpcore's
// default WORKER_TTL (30 s). A row dead for longer speaks of a death long
// past, such as a rolling restart's old rows, which pulpcore deletes only
// every ~17 minutes. A pass must run at least this often to see every
// partial mass death; a fleet with no worker row alive trips the guard
// however long ago its rows died.
const MassDeathWindow = 3 * time.Minute

// massDeath says the guard trips: more than MaxDeadFraction of at least
// MinWorkers counted worker rows died recently (see heartbeat.WorkerCounts).
func massDeath(workers, dead int, p Policy) bool {
	return !p.Force && workers > 0 && workers >= p.MinWorkers && float64(dead)/float64(workers) > p.MaxDeadFraction
}

// applyGuards holds back what the mass-death guard and the per-pass limits
// forbid. Held-back work is reported as deferred and waits for the next pass.
func applyGuards(plan *Plan, fleet *heartbeat.Fleet, p Policy) {
	if workers, dead := fleet.WorkerCounts(MassDeathWindow); massDeath(workers, dead, p) {
		reason := fmt.Sprintf("%d of %d worker rows are dead, each died within the last %s (more than max_dead_fraction %s): a database too slow to record heartbeats looks like a dead fleet; nothing is released on dead grounds and no task is updated; rerun with --force if the workers really died",
			dead, workers, MassDeathWindow, strconv.FormatFloat(p.MaxDeadFraction, 'f', -1, 64))
		plan.Guards = append(plan.Guards, Guard{Name: "mass-death", Reason: reason})
		for i := range plan.Holdings {
			if jd := &plan.Holdings[i]; jd.Action == ActionRelease && jd.Verdict.onDeadGrounds() {
				jd.Deferred = "mass-death guard"
			}
		}
		for i := range plan.Tasks {
			if plan.Tasks[i].Action == ActionUpdate {
				plan.Tasks[i].Deferred = "mass-death guard"
			}
		}
	}
	holdings := plan.Holdings
	if wanted, deferred := limitPerPass(len(holdings), p.MaxReleases, func(i int) (SuspectKey, bool) {
		jd := &holdings[i]
		return releaseUnit(jd), jd.Action == ActionRelease && jd.Deferred == ""
	}, func(i int) { holdings[i].Deferred = "max_releases" }); deferred > 0 {
		plan.Guards = append(plan.Guards, Guard{Name: "max-releases", Reason: fmt.Sprintf("%d holdings to release, at most %d per pass (max_releases): the rest waits for the next pass", wanted, p.MaxReleases)})
	}
	tasks := plan.Tasks
	if wanted, deferred := limitPerPass(len(tasks), p.MaxTaskUpdates, func(i int) (int, bool) {
		return i, tasks[i].Action == ActionUpdate && tasks[i].Deferred == ""
	}, func(i int) { tasks[i].Deferred = "max_task_updates" }); deferred > 0 {
		plan.Guards = append(plan.Guards, Guard{Name: "max-task-updates", Reason: fmt.Sprintf("%d tasks to update, at most %d per pass (max_task_updates): the rest waits for the next pass", wanted, p.MaxTaskUpdates)})
	}
}

// releaseUnit is what a release goes with: a resource holding that inherits
// its task lock's verdict goes with that task lock (Via, of the same owner),
// anything else alone.
func releaseUnit(jd *Judgement) SuspectKey {
	if jd.Kind != KindTask && jd.via != "" {
		return SuspectKey{Key: jd.via, Owner: jd.Owner}
	}
	return SuspectKey{Key: jd.Key, Owner: jd.Owner}
}

// limitPerPass is the one per-pass limit: of the n items, those for which
// work says there is work are taken in order, unit by unit, until the next
// unit would take more than limit; that unit and every later one is
// deferred. A unit is never split: a first unit larger than the limit goes
// alone (a positive limit never blocks a task's holdings for good). It
// returns how many items had work and how many were deferred.
func limitPerPass[U comparable](n, limit int, work func(i int) (U, bool), deferItem func(i int)) (wanted, deferred int) {
	for i := range n {
		if _, ok := work(i); ok {
			wanted++
		}
	}
	if wanted <= limit {
		return wanted, 0
	}
	size := map[U]int{}
	for i := range n {
		if u, ok := work(i); ok {
			size[u]++
		}
	}
	taken, full := 0, false
	admitted := make(map[U]bool, len(size))
	for i := range n {
		u, ok := work(i)
		if !ok {
			continue
		}
		in, decided := admitted[u]
		if !decided {
			in = !full && (taken+size[u] <= limit || taken == 0 && limit > 0)
			full = !in
			if in {
				taken += size[u]
			}
			admitted[u] = in
		}
		if !in {
			deferItem(i)
			deferred++
		}
	}
	return wanted, deferred
}

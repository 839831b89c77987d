package judge

import (
	"slices"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// MassDeathWindow is how long a worker row counts as a death for the
// mass-death guard by its age alone, from the moment it became dead (last
// heartbeat + ttl + grace), while some worker row is alive: six heartbeat
// ttls of pulpcore's default WORKER_TTL (30 s). A row dead for longer counts
// only when a pass saw it alive (the guard's memory, see
// massDeathCountsAs): a death no pass saw happen, such as a rolling
// restart's old rows, which pulpcore deletes only every ~17 minutes, speaks
// of a death long past. A fleet with no worker row alive trips the guard
// however long ago its rows died.
const MassDeathWindow = 3 * time.Minute

// massDeathRowCount is how the mass-death guard counts one worker row.
type massDeathRowCount uint8

const (
	// notCounted: a restart under the same name, or a death long past that
	// no pass saw happen, or one the pod evidence proves.
	notCounted massDeathRowCount = iota
	countedLive
	// countedRecent: dead within MassDeathWindow, or no worker row lives.
	countedRecent
	// countedRemembered: a pass saw the row alive (or dying), and nothing
	// has explained its death since.
	countedRemembered
)

// massDeathCountsAs is the mass-death guard's rule for one worker row: seen
// says an earlier pass saw it alive or late, anyLive that some worker row is
// live now. A remembered row counts however long it has been dead, until pulpcore
// deletes it (it is then no row at all: pulpcore's cleanup judged the worker
// missing, and a live worker stops when its heartbeat finds no row), until
// the pod evidence proves its death, or until --force (the pass forgets it:
// RememberAlive).
func massDeathCountsAs(r heartbeat.WorkerRow, seen, anyLive bool, window time.Duration) massDeathRowCount {
	switch {
	case r.Live:
		return countedLive
	case r.Superseded:
		return notCounted
	case !anyLive || r.DeadFor <= window:
		return countedRecent
	case seen && !r.PodProven:
		return countedRemembered
	}
	return notCounted
}

// MassDeathCount is what the mass-death guard counted.
type MassDeathCount struct {
	Workers, Dead int
	// Remembered is how many of Dead count only because a pass saw them
	// alive.
	Remembered int
	// Newest and Oldest are the shortest and longest time a counted dead
	// row has been dead.
	Newest, Oldest time.Duration
	// NoneLive says no worker row is alive or late.
	NoneLive bool
}

// CountMassDeath counts the worker rows by massDeathCountsAs, given the rows
// an earlier pass saw alive.
func CountMassDeath(rows []heartbeat.WorkerRow, seen map[string]SeenAlive, window time.Duration) MassDeathCount {
	anyLive := slices.ContainsFunc(rows, func(r heartbeat.WorkerRow) bool { return r.Live })
	c := MassDeathCount{NoneLive: !anyLive}
	for _, r := range rows {
		_, remembered := seen[r.ID]
		switch massDeathCountsAs(r, remembered, anyLive, window) {
		case countedLive:
			c.Workers++
			continue
		case notCounted:
			continue
		case countedRemembered:
			c.Remembered++
		}
		age := max(r.DeadFor, 0)
		if c.Dead == 0 || age < c.Newest {
			c.Newest = age
		}
		c.Oldest = max(c.Oldest, age)
		c.Workers++
		c.Dead++
	}
	return c
}

// RememberAlive is the guard's memory after this pass: every worker row live
// now, and every row this pass saw dying (dead within window: its heartbeat
// was recorded minutes ago, so it died while the database recorded others'),
// both seen at now; and every remembered row still present whose death
// nothing has explained (not superseded by a restart, not proven by the
// pods). A forced pass forgets the dead: --force says they really died. A
// row pulpcore deleted is no row, and is forgotten. A row dead longer than
// window when first seen is never remembered: no pass saw it die.
func RememberAlive(rows []heartbeat.WorkerRow, seen map[string]SeenAlive, now time.Time, window time.Duration, forced bool) map[string]SeenAlive {
	out := make(map[string]SeenAlive, len(rows))
	for _, r := range rows {
		s, remembered := seen[r.ID]
		switch {
		case r.Live:
			out[r.ID] = SeenAlive{Name: r.Name, At: now}
		case forced || r.Superseded || r.PodProven:
		case remembered:
			out[r.ID] = s
		case r.DeadFor <= window:
			out[r.ID] = SeenAlive{Name: r.Name, At: now}
		}
	}
	return out
}

// decideMassDeath says the guard trips: more than MaxDeadFraction of at
// least MinWorkers counted worker rows are counted dead.
func decideMassDeath(c MassDeathCount, p Policy) bool {
	return !p.Force && c.Workers > 0 && c.Workers >= p.MinWorkers && float64(c.Dead)/float64(c.Workers) > p.MaxDeadFraction
}

// applyGuards holds back what the mass-death guard and the per-pass limits
// forbid. Held-back work is reported as deferred and waits for the next pass.
func applyGuards(plan *Plan, fleet *heartbeat.Fleet, seen map[string]SeenAlive, p Policy) {
	if c := CountMassDeath(fleet.WorkerRows(), seen, MassDeathWindow); decideMassDeath(c, p) {
		plan.Guards = append(plan.Guards, Guard{Name: GuardMassDeath, Count: c, MaxDeadFraction: p.MaxDeadFraction})
		for i := range plan.Holdings {
			if jd := &plan.Holdings[i]; jd.Action == ActionRelease && jd.Verdict.onDeadGrounds() {
				jd.Deferred = DeferredMassDeath
			}
		}
		for i := range plan.Tasks {
			if plan.Tasks[i].Action == ActionUpdate {
				plan.Tasks[i].Deferred = DeferredMassDeath
			}
		}
	}
	holdings := plan.Holdings
	if wanted, deferred := limitPerPass(len(holdings), p.MaxReleases, func(i int) (SuspectKey, bool) {
		jd := &holdings[i]
		return releaseUnit(jd), jd.Action == ActionRelease && jd.Deferred == ""
	}, func(i int) { holdings[i].Deferred = DeferredMaxReleases }); deferred > 0 {
		plan.Guards = append(plan.Guards, Guard{Name: GuardMaxReleases, Wanted: wanted, Limit: p.MaxReleases})
	}
	tasks := plan.Tasks
	if wanted, deferred := limitPerPass(len(tasks), p.MaxTaskUpdates, func(i int) (int, bool) {
		return i, tasks[i].Action == ActionUpdate && tasks[i].Deferred == ""
	}, func(i int) { tasks[i].Deferred = DeferredMaxTaskUpdates }); deferred > 0 {
		plan.Guards = append(plan.Guards, Guard{Name: GuardMaxTaskUpdates, Wanted: wanted, Limit: p.MaxTaskUpdates})
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

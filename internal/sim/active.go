package sim

import (
	"slices"
	"strings"
	"time"
)

// ActiveHolding is one holding that a live process of the fleet is working
// with right now: it acquired the task's locks and has not yet finished with
// the task (released, leaked on purpose, or died). A reaper that releases
// it while the process's heartbeat is fresh makes the one mistake it must
// never make; tests compare the holdings a reaper pass released with the
// ActiveHoldings taken before and after the pass.
type ActiveHolding struct {
	// Owner is the process's owner name.
	Owner string
	Key   string
	Kind  HoldingKind
	Task  string
	// AppStatusID is the row of the incarnation working on the task.
	AppStatusID string
	// Since is when the process's acquire returned. Two ActiveHoldings of
	// the same owner, key and Since are the same stretch of work.
	Since time.Time
	// LiveUntil is when the incarnation's heartbeat, as of this call, becomes
	// older than its ttl plus Config.HeartbeatGrace. It is measured from the
	// local time just before the heartbeat was sent, which is never later than
	// the database's time of it, so no correct reaper can judge the process
	// dead before LiveUntil.
	LiveUntil time.Time
}

// activeJob is a job a live process is working on, as Fleet.active keeps it.
type activeJob struct {
	inc   *incarnation
	since time.Time
}

// track records that the process is working on j, from now until untrack.
func (inc *incarnation) track(j *job) {
	f := inc.p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == nil {
		f.active = map[*job]activeJob{}
	}
	f.active[j] = activeJob{inc: inc, since: time.Now()}
}

// untrack records that the process is done with j; it may be called for a
// job that is not tracked.
func (inc *incarnation) untrack(j *job) {
	f := inc.p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.active, j)
}

// ActiveHoldings lists the holdings of the tasks the fleet's live processes
// are working on, sorted by owner and key. A killed incarnation's work is not
// listed: what it held is stale from the moment it died; nor is work whose
// holdings Redis lost (LocksLost).
func (f *Fleet) ActiveHoldings() []ActiveHolding {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ActiveHolding
	for j, a := range f.active {
		if a.inc.p.killed || a.inc.p.cur != a.inc || f.locksLostSince(j.acquiredAt) {
			continue // a dead incarnation's, or Redis lost what it held
		}
		base := ActiveHolding{
			Owner: j.owner, Task: j.id, AppStatusID: a.inc.rowID, Since: a.since,
			LiveUntil: time.Unix(0, a.inc.lastBeat.Load()).Add(a.inc.p.ttl + f.cfg.HeartbeatGrace),
		}
		add := func(key string, kind HoldingKind) {
			h := base
			h.Key, h.Kind = key, kind
			out = append(out, h)
		}
		add(TaskKey(j.id), KindTask)
		for _, r := range j.exclusive {
			add(ResourceKey(r), KindExclusive)
		}
		for _, r := range j.shared {
			add(ResourceKey(r), KindShared)
		}
	}
	slices.SortFunc(out, func(a, b ActiveHolding) int {
		if c := strings.Compare(a.Owner, b.Owner); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

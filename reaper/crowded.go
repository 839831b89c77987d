package reaper

import (
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// crowdedShared lists the resources of the plan's guarded shared memberships
// to release that the snapshot already shows reserved by more incomplete
// tasks than one release call may check (limit: redislocks.ReserverCallLimit),
// counting only tasks whose task lock, if the snapshot saw one, the plan
// keeps (judge.Plan.StaleHolder names none): those are never dropped from
// the list a call is sent, nor paired (reserversOf, redislocks.callReservers). Such a membership would come back from its
// call as TooManyReservers, after the tasks reserving its resource were read
// from the database once more (the incident's ten thousand live tasks all
// reserve its domain); it is deferred with that reason at once instead.
// The snapshot holds fewer tasks than that read would (not the waiting ones
// no worker claimed), so a resource it finds crowded is crowded, but for
// tasks that finished since, which a later pass sees.
func crowdedShared(snap judge.Snapshot, plan *judge.Plan, limit int) map[string]bool {
	reserving := map[string]int{}
	stale := map[string]bool{}
	for _, jd := range plan.Holdings {
		switch {
		case jd.Kind == judge.KindTask && jd.Action != judge.ActionKeep:
			stale[jd.TaskID()] = true
		case jd.Kind == judge.KindShared && jd.Action == judge.ActionRelease && judge.Guarded(jd):
			reserving[jd.Resource()] = 0
		}
	}
	if len(reserving) == 0 {
		return nil
	}
	for id, t := range snap.Tasks {
		if !incomplete(t.State) || stale[id] {
			continue
		}
		for _, entry := range t.Reserved {
			if r := judge.ParseReservation(entry); r.Kind == judge.KindShared {
				if n, ok := reserving[r.Resource]; ok {
					reserving[r.Resource] = n + 1
				}
			}
		}
	}
	var crowded map[string]bool
	for resource, n := range reserving {
		if n > limit {
			if crowded == nil {
				crowded = map[string]bool{}
			}
			crowded[resource] = true
		}
	}
	return crowded
}

// incomplete says a task is in a state the database's read of a resource's
// reserving tasks lists (pulpdb.ReadSharedReservers).
func incomplete(state string) bool {
	return state == judge.StateWaiting || state == judge.StateRunning || state == judge.StateCanceling
}

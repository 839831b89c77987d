package redislocks

// ReserverCallLimit is the most reserving-task entries one lock key's list
// may have, as a call sends it, for its guarded memberships to be released
// by a call of callHoldings (redis.release_call_holdings): the task keys of
// its list and their stale pairs (callReservers), reserversPerHolding to a
// holding of the call's work, beside the membership itself. The script reads
// the task locks of every one it is sent, in a call that blocks Redis: a
// backlog of waiting tasks, which all reserve their domain shared, must not
// make each call read all of them. A call takes the keys whose lists fit
// beside the work before them (fitCall); the holdings of the others go to a
// further call, and those of a key whose list alone is longer than this are
// left (TooManyReservers) for a pass when fewer tasks reserve the resource.
func ReserverCallLimit(callHoldings int) int {
	return max(callHoldings-1, 0) * reserversPerHolding
}

// callReservers is a key's list of reserving tasks as one call sends it,
// for the owners of the call's guarded memberships of the key. A stale pair
// (a task and the owner whose own lock of it the snapshot saw) only tells
// that owner's membership that the task is no new task of its own; for any
// other owner the task is a reserving task like the rest. So a pair goes to
// a call only with its owner's membership, the task alone with the others',
// and a task stale for the call's only owner of the key is none at all (as
// reserversOf rules for a whole batch): whoever holds its lock, it cannot
// hold that membership back.
func callReservers(rs []Reserver, owners map[string]bool) []Reserver {
	out := make([]Reserver, 0, len(rs))
	for _, r := range rs {
		switch {
		case r.StaleFor == "":
		case !owners[r.StaleFor]:
			r.StaleFor = ""
		case len(owners) == 1:
			continue
		}
		out = append(out, r)
	}
	return out
}

// reserverCounts is a key's list of reserving tasks as fitCall weighs it:
// its tasks, and how many of them are stale for each owner.
type reserverCounts struct {
	tasks int
	stale map[string]int
}

func countReservers(rs []Reserver) reserverCounts {
	c := reserverCounts{tasks: len(rs), stale: map[string]int{}}
	for _, r := range rs {
		if r.StaleFor != "" {
			c.stale[r.StaleFor]++
		}
	}
	return c
}

// entries is what callReservers sends of the list for a call with guarded
// memberships of the key of owners owners, of whom stale tasks are stale
// for: a task key each, and a pair for each of those when they are more
// than one owner; none of them for a single owner.
func (c reserverCounts) entries(owners, stale int) int {
	if owners > 1 {
		return c.tasks + stale
	}
	return c.tasks - stale
}

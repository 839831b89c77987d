package redislocks

// ReserverCallLimit is the most reserving tasks one lock key may have for its
// guarded memberships to be released by a call of callHoldings
// (redis.release_call_holdings): the task keys of its list and their stale
// pairs, reserversPerHolding to a holding of the call's work, beside the
// membership itself. The script reads the task locks of every one it is
// sent, in a call that blocks Redis: a backlog of waiting tasks, which all
// reserve their domain shared, must not make each call read all of them. A
// call takes the keys whose lists fit beside the work before them (callWork);
// the holdings of the others go to a further call, and those of a key whose
// list alone is longer than this are left (TooManyReservers) for a pass when
// fewer tasks reserve the resource. At the default, 400 holdings, a key may
// have 3,192.
func ReserverCallLimit(callHoldings int) int {
	return max(callHoldings-1, 0) * reserversPerHolding
}

// reserverEntries is what the reserving tasks rs cost a call: a task key each,
// and a pair for each that is stale for an owner.
func reserverEntries(rs []Reserver) int {
	n := len(rs)
	for _, r := range rs {
		if r.StaleFor != "" {
			n++
		}
	}
	return n
}

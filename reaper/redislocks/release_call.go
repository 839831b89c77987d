package redislocks

// A release call blocks Redis while it runs, and Pulp's own acquire and
// release wait meanwhile: every call stays within a budget of work,
// callHoldings (redis.release_call_holdings), counted in holdings. Its cost
// in Redis's time is about proportional to:
//   - its holdings: a GET or SREM each, its share of the DEL and of the
//     registry SREM at the end, and the Lua around them;
//   - the registry entries its guarded owners' new-task checks count (each
//     owner's SINTERCARD of its registry and the keys the snapshot saw);
//   - the reserving tasks it is sent (an MGET page a thousand of them; a
//     table entry for each held by one of the call's guarded owners).
//
// Weighed on a test-started Redis 7.0 and in the scale benchmark's backlog
// (BENCHMARKS.md, "The reaper's load on Redis"), hence the weights below.
// The reserving tasks were first weighed by task locks that did not exist,
// which MGET answers cheaply; a domain's list is mostly the task locks of
// its running tasks, each a value the script reads, and they cost a call
// more than half again as much. The cutting is done twice: BatchEnds cuts
// the release batches by holdings and registry entries (the reserving tasks
// are read later, just before each batch), and Release cuts a batch into
// calls by all three.
const (
	// DefaultCallHoldings is redis.release_call_holdings' default: a call
	// of holdings alone, of registry entries or of reserving tasks then
	// takes a small part of the 5 ms a call may take.
	DefaultCallHoldings = 400
	// entriesPerHolding registry entries counted cost a call about a holding.
	entriesPerHolding = 10
	// reserversPerHolding reserving tasks (their task locks held, as a
	// running task's is) cost a call about a holding.
	reserversPerHolding = 5
)

// callBudget is the work one call may take: r.CallHoldings, or the default.
func (r *Releaser) callBudget() int {
	if r.CallHoldings > 0 {
		return r.CallHoldings
	}
	return DefaultCallHoldings
}

// registryWork is what counting a registry of entries costs a call, in
// holdings: at most half the budget, so that the owner's holdings fill the
// other half. A registry over about budget/2 × entriesPerHolding live
// entries (2,000 at the default; pruned first when larger, so entries of
// locks that still stand) makes its calls longer than the budget, up to the
// count limit (registryCountLimit): an owner holding so many locks at once is
// outside the bound.
func registryWork(entries int64, budget int) int {
	w := (entries + entriesPerHolding - 1) / entriesPerHolding
	return int(min(w, int64(budget/2)))
}

// reserverWork is what entries reserving-task entries (a task key or a
// stale pair each, as callReservers sends them) cost a call, in holdings.
func reserverWork(entries int) int {
	return (entries + reserversPerHolding - 1) / reserversPerHolding
}

// keyInCall is what a call sends of one key's reserving tasks so far: the
// owners of its guarded memberships of the key, and how many of the key's
// tasks are stale for them.
type keyInCall struct {
	owners map[string]bool
	stale  int
}

// fitCall splits pending (positions in b, in order) into the holdings of the
// next call and those left for a later one, so that the call's work (its
// holdings, its guarded owners' registries, its keys' reserving tasks as
// callReservers sends them) stays within the budget. The call takes a
// prefix of pending: the holdings keep their order across calls, so a key
// an earlier call deleted is gone for the holdings after it, as within one
// call. A guarded holding whose key's reserving tasks, as sent with that
// holding alone, pass ReserverCallLimit goes to neither: its outcome is
// TooManyReservers. The first holding always goes, so a call settles
// something while anything is pending.
func (r *Releaser) fitCall(b Batch, pending []int, out []Outcome) (now, later []int) {
	budget := r.callBudget()
	limit := ReserverCallLimit(budget)
	counts := map[string]reserverCounts{}
	keys := map[string]*keyInCall{}
	counted := map[string]bool{}
	work := 0
	for n, i := range pending {
		h := b.Holdings[i]
		cost, key, owner := 1, "", ""
		if b.Guarded[i] {
			if rs, ok := b.Reservers[h.Key]; ok && (keys[h.Key] == nil || !keys[h.Key].owners[h.Owner]) {
				c, ok := counts[h.Key]
				if !ok {
					c = countReservers(rs)
					counts[h.Key] = c
				}
				if c.entries(1, c.stale[h.Owner]) > limit {
					out[i] = TooManyReservers
					continue
				}
				key = h.Key
				if k := keys[key]; k == nil {
					cost += reserverWork(c.entries(1, c.stale[h.Owner]))
				} else {
					cost += reserverWork(c.entries(len(k.owners)+1, k.stale+c.stale[h.Owner])) - reserverWork(c.entries(len(k.owners), k.stale))
				}
			}
			if !counted[h.Owner] {
				owner = h.Owner
				cost += registryWork(r.registry[h.Owner], budget)
			}
		}
		if len(now) > 0 && work+cost > budget {
			return now, pending[n:]
		}
		work += cost
		if key != "" {
			k := keys[key]
			if k == nil {
				k = &keyInCall{owners: map[string]bool{}}
				keys[key] = k
			}
			k.owners[h.Owner] = true
			k.stale += counts[key].stale[h.Owner]
		}
		if owner != "" {
			counted[owner] = true
		}
		now = append(now, i)
	}
	return now, later
}

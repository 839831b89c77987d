package redislocks

// A release call blocks Redis while it runs, and Pulp's own acquire and
// release wait meanwhile: every call stays within a budget of work,
// callHoldings (redis.release_call_holdings), counted in holdings. Its cost
// in Redis's time is about proportional to:
//   - its holdings: a GET or SREM each, its share of the DEL and of the
//     registry SREM at the end, and the Lua around them;
//   - the registry entries its guarded owners' new-task checks count (each
//     owner's SINTERCARD of its registry and the keys the snapshot saw);
//   - the reserving tasks it is sent (an MGET page a thousand of them, and a
//     table entry each).
//
// Measured on a test-started Redis 7.0 (a loaded 2-CPU machine, BENCHMARKS.md,
// "The reaper's load on Redis"): about 3 µs a holding, 0.3 µs a registry
// entry counted and 0.5 µs a reserving task, hence the weights below. The
// cutting is done twice: BatchEnds cuts the release batches by holdings and
// registry entries (the reserving tasks are read later, just before each
// batch), and Release cuts a batch into calls by all three.
const (
	// DefaultCallHoldings is redis.release_call_holdings' default: about
	// 1.5-2 ms of a loaded Redis's time for a call of holdings alone, 4,000
	// registry entries, or 3,200 reserving tasks, well within the 5 ms a
	// call may take.
	DefaultCallHoldings = 400
	// entriesPerHolding registry entries counted cost a call about a holding.
	entriesPerHolding = 10
	// reserversPerHolding reserving tasks cost a call about a holding.
	reserversPerHolding = 8
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

// reserverWork is what a key's reserving tasks cost a call, in holdings.
func reserverWork(rs []Reserver) int {
	return (reserverEntries(rs) + reserversPerHolding - 1) / reserversPerHolding
}

// fitCall splits pending (positions in b, in order) into the holdings of the
// next call and those left for a later one, so that the call's work (its
// holdings, its guarded owners' registries, its keys' reserving tasks) stays
// within the budget. The call takes a prefix of pending: the holdings keep
// their order across calls, so a key an earlier call deleted is gone for
// the holdings after it, as within one call. A guarded holding whose key's
// reserving tasks alone pass ReserverCallLimit goes to neither: its outcome
// is TooManyReservers. The first holding always goes, so a call settles
// something while anything is pending.
func (r *Releaser) fitCall(b Batch, pending []int, out []Outcome) (now, later []int) {
	budget := r.callBudget()
	limit := ReserverCallLimit(budget)
	sent := map[string]bool{}
	counted := map[string]bool{}
	work := 0
	for n, i := range pending {
		h := b.Holdings[i]
		cost, key, owner := 1, "", ""
		if b.Guarded[i] {
			if rs, ok := b.Reservers[h.Key]; ok && !sent[h.Key] {
				if reserverEntries(rs) > limit {
					out[i] = TooManyReservers
					continue
				}
				key = h.Key
				cost += reserverWork(rs)
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
			sent[key] = true
		}
		if owner != "" {
			counted[owner] = true
		}
		now = append(now, i)
	}
	return now, later
}

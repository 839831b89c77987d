package redislocks

// ReserverCallLimit bounds the reserving tasks one release call checks: the
// task keys it is sent (each key's list once) and their stale pairs. The
// script reads the task locks of every one it is sent, in a call that blocks
// Redis: a backlog of waiting tasks, which all reserve their domain shared,
// must not make each call read all of them. A call takes the keys whose lists
// fit beside the ones before; the holdings of the others go to a further call,
// and those of a key whose list alone is longer are left (TooManyReservers)
// for a pass when fewer tasks reserve the resource.
const ReserverCallLimit = 5_000

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

// fitReservers splits pending (positions in b, in order) into the holdings of
// the next call and those left for a later one, so that the call checks at
// most ReserverCallLimit reserving tasks. A guarded holding whose key's
// reserving tasks alone pass the limit goes to neither: its outcome is
// TooManyReservers. The first key that fits always goes, so a call settles
// something while anything is pending.
func fitReservers(b Batch, pending []int, out []Outcome) (now, later []int) {
	cost := map[string]int{}
	sent := map[string]bool{}
	total := 0
	for _, i := range pending {
		key := b.Holdings[i].Key
		rs, ok := b.Reservers[key]
		if !ok || !b.Guarded[i] || sent[key] {
			now = append(now, i)
			continue
		}
		c, known := cost[key]
		if !known {
			c = reserverEntries(rs)
			cost[key] = c
		}
		switch {
		case c > ReserverCallLimit:
			out[i] = TooManyReservers
		case total+c > ReserverCallLimit:
			later = append(later, i)
		default:
			sent[key] = true
			total += c
			now = append(now, i)
		}
	}
	return now, later
}

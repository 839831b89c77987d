package heartbeat

// Motion: what a second read of the heartbeats says of the rows one read
// found dead. A row is dead by its age alone, and an age is also what a
// stall makes (a heartbeat write blocked by a lock on core_appstatus, a
// paused PgBouncer, an overloaded database) and what a worker's clock
// behind the database's makes: pulpcore stamps last_heartbeat with the
// worker's own clock, and a stalled write lands with the time it was made.
// Neither is a death: the process lives and writes again. So a death is
// acted on only once a read at least one heartbeat period later still sees
// the row unmoved, and none of the rows that stopped with it came back.

import (
	"maps"
	"slices"
	"time"
)

// Reading is one read of core_appstatus: every row and the database's now.
type Reading struct {
	Now  time.Time
	Rows []AppStatus
}

// RecheckMargin is what a second read waits beyond a row's heartbeat
// period: pulpcore's worker checks whether a heartbeat is due when its
// wait for the task process times out, so a write comes a little after
// the period, never exactly on it.
const RecheckMargin = 2 * time.Second

// DefaultWorkerTTL is pulpcore's default WORKER_TTL, a worker row's ttl.
const DefaultWorkerTTL = 30 * time.Second

// Period is how often pulpcore's worker writes its heartbeat: ttl/3
// (redis_worker.py, heartbeat_period).
func (r AppStatus) Period() time.Duration { return r.TTL / 3 }

// MaxRecheckPeriod bounds the period a second read waits for: an API
// process's (ttl 120 s). A row whose ttl is longer (a WORKER_TTL set to an
// hour) would keep a pass waiting a third of it; a stall that makes such a
// row dead lasted longer than its ttl already.
const MaxRecheckPeriod = 40 * time.Second

// RecheckAfter is how long after a first read a second one must come for an
// unmoved heartbeat to say something of the row: its period (at most
// MaxRecheckPeriod) and the margin, unless the setting (heartbeat_recheck)
// names a time of its own.
func (r AppStatus) RecheckAfter(setting time.Duration) time.Duration {
	if setting > 0 {
		return setting
	}
	return min(r.Period(), MaxRecheckPeriod) + RecheckMargin
}

// Settlement is what two reads say of one row the first found dead.
type Settlement uint8

const (
	// Unsettled: no read came a heartbeat period after the one that found
	// the row dead (none yet, or it failed). The row is held as late.
	Unsettled Settlement = iota
	// Settled: read again at least a period later, the heartbeat had not
	// moved, and no row that stopped with it came back: a death.
	Settled
	// Stalled: the heartbeat had not moved, but another row whose heartbeat
	// stopped within a period of this one's did: a stall is ending, and this
	// row may be the next to write. Held as late.
	Stalled
	// Moving: the heartbeat moved between two reads within ttl + grace of
	// each other: the process writes, whatever its age says. Alive.
	Moving
)

var settlementNames = [...]string{Unsettled: "unsettled", Settled: "settled", Stalled: "stalled", Moving: "moving"}

// String is the settlement's name.
func (s Settlement) String() string {
	if int(s) >= len(settlementNames) {
		return "settlement(?)"
	}
	return settlementNames[s]
}

// MarshalText writes the settlement's name.
func (s Settlement) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// RowMotion is what two reads say of one row.
type RowMotion struct {
	Settlement Settlement
	// Behind is, for a moving row, how far its clock is at least behind the
	// database's: the read before its newest heartbeat landed, less that
	// heartbeat. Zero when the bound says nothing. A write delayed by a
	// stall gives such a bound too, once.
	Behind time.Duration
	// Group is how many rows stopped within a period of each other with this
	// one (itself included), and Back how many of them moved since.
	Group, Back int
}

// Motion is what the reads said of each row that needed them, by pulp_id.
type Motion struct {
	rows map[string]RowMotion
}

// Of returns what the reads said of the row, and whether they said anything.
func (m *Motion) Of(id string) (RowMotion, bool) {
	if m == nil {
		return RowMotion{}, false
	}
	rm, ok := m.rows[id]
	return rm, ok
}

// Len is how many rows the motion speaks of.
func (m *Motion) Len() int {
	if m == nil {
		return 0
	}
	return len(m.rows)
}

// Rows lists the pulp_ids the motion speaks of, sorted.
func (m *Motion) Rows() []string {
	if m == nil {
		return nil
	}
	ids := make([]string, 0, len(m.rows))
	for id := range m.rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// UnsettledMotion says of each row in ids that no second read settled it.
func UnsettledMotion(ids []string) *Motion {
	m := &Motion{rows: make(map[string]RowMotion, len(ids))}
	for _, id := range ids {
		m.rows[id] = RowMotion{Settlement: Unsettled}
	}
	return m
}

// Settle says what two reads, earlier and later (database clocks, earlier
// first), say of the rows in ids, which a pass found dead in one of them.
//
//   - A row whose heartbeat moved between the reads, both within its ttl +
//     grace of each other, is Moving.
//   - The rows stale in the earlier read (older than their ttl) form groups:
//     heartbeats within one period of each other, chained. A row of a group
//     of which some row moved is Stalled.
//   - A row that did not move, was stale in the earlier read, and was read
//     again at least RecheckAfter(recheck) later, is Settled.
//   - Anything else (no row in the earlier read, reads too close) is
//     Unsettled.
func Settle(earlier, later Reading, ids []string, grace, recheck time.Duration) *Motion {
	before := byID(earlier.Rows)
	after := byID(later.Rows)
	gap := later.Now.Sub(earlier.Now)
	moved := func(id string) bool {
		a, inA := before[id]
		b, inB := after[id]
		return inA && inB && b.LastHeartbeat.After(a.LastHeartbeat) && gap <= b.TTL+grace
	}
	group := staleGroups(earlier)
	back := map[int]int{}
	size := map[int]int{}
	for id, g := range group {
		size[g]++
		if moved(id) {
			back[g]++
		}
	}
	m := &Motion{rows: make(map[string]RowMotion, len(ids))}
	for _, id := range ids {
		rm := RowMotion{Settlement: Unsettled}
		if g, ok := group[id]; ok {
			rm.Group, rm.Back = size[g], back[g]
		}
		a, inA := before[id]
		switch {
		case moved(id):
			rm.Settlement = Moving
			rm.Behind = max(earlier.Now.Sub(after[id].LastHeartbeat), 0)
		case rm.Back > 0:
			rm.Settlement = Stalled
		case inA && earlier.Now.Sub(a.LastHeartbeat) > a.TTL && gap >= a.RecheckAfter(recheck):
			rm.Settlement = Settled
		}
		m.rows[id] = rm
	}
	return m
}

// Merge is what two motions say together: a row either saw move is
// Moving, one either saw stall is Stalled, and a row either settled is
// Settled; what neither settled stays Unsettled. Either may be nil.
func (m *Motion) Merge(o *Motion) *Motion {
	if m == nil {
		return o
	}
	if o == nil {
		return m
	}
	out := &Motion{rows: make(map[string]RowMotion, len(m.rows)+len(o.rows))}
	for _, src := range []*Motion{m, o} {
		for id, rm := range src.rows {
			prev, seen := out.rows[id]
			if !seen || mergeRank(rm.Settlement) > mergeRank(prev.Settlement) {
				out.rows[id] = rm
			}
		}
	}
	return out
}

// mergeRank orders what one pair of reads says against another's: a move
// seen is life, a stall seen holds, one pair that settles suffices.
func mergeRank(s Settlement) int {
	switch s {
	case Moving:
		return 3
	case Stalled:
		return 2
	case Settled:
		return 1
	}
	return 0
}

// staleGroups groups the rows stale in a read (older than their ttl) by
// their heartbeats: sorted by heartbeat, a row joins the group of the one
// before it when their heartbeats are within the longer of their periods.
// It returns each stale row's group number.
func staleGroups(rd Reading) map[string]int {
	var stale []AppStatus
	for _, r := range rd.Rows {
		if rd.Now.Sub(r.LastHeartbeat) > r.TTL {
			stale = append(stale, r)
		}
	}
	slices.SortFunc(stale, func(a, b AppStatus) int { return a.LastHeartbeat.Compare(b.LastHeartbeat) })
	group := make(map[string]int, len(stale))
	g := 0
	for i, r := range stale {
		if i > 0 {
			prev := stale[i-1]
			if r.LastHeartbeat.Sub(prev.LastHeartbeat) > max(r.Period(), prev.Period()) {
				g++
			}
		}
		group[r.ID] = g
	}
	return group
}

func byID(rows []AppStatus) map[string]AppStatus {
	m := make(map[string]AppStatus, len(rows))
	for _, r := range rows {
		m[r.ID] = r
	}
	return m
}

// WithMotion applies what the second reads said to the fleet's dead rows: a
// Moving row is alive, a Stalled or Unsettled one late (held this pass), a
// Settled one stays dead. Only rows dead by the rules so far change, and a
// row whose death the pods prove stays dead: the kubelet's report of an
// ended container is no stalled write. Liveness only rises here. A nil
// motion changes nothing.
func (f *Fleet) WithMotion(m *Motion) *Fleet {
	if f == nil || m == nil {
		return f
	}
	f.motion = m
	if f.heartbeatNames == nil {
		// The names by heartbeats alone, which the mass-death guard weighs:
		// a moving heartbeat is one, a held row is not.
		f.heartbeatNames = maps.Clone(f.names)
	}
	for id, rm := range m.rows {
		r, ok := f.rows[id]
		if !ok || f.rowLiveness(r) != Dead || f.podEvidence[id].Rule.provesDeath() {
			continue
		}
		var live Liveness
		switch rm.Settlement {
		case Moving:
			live = Alive
		case Stalled, Unsettled:
			live = Late
		default:
			continue
		}
		if f.podLiveness == nil {
			f.podLiveness = map[string]Liveness{}
		}
		f.podLiveness[id] = live
		o := f.names[r.Name]
		if live > o.Liveness {
			o.Liveness = live
			o.Motion = &rm
			f.names[r.Name] = o
		}
		if rm.Settlement == Moving {
			if ho, ok := f.heartbeatNames[r.Name]; ok && ho.Liveness < Alive {
				ho.Liveness = Alive
				f.heartbeatNames[r.Name] = ho
			}
		}
	}
	return f
}

// moving says the second reads saw the row's heartbeat move: it is not
// dead by its heartbeat, whatever its age.
func (f *Fleet) moving(id string) bool {
	rm, ok := f.motion.Of(id)
	return ok && rm.Settlement == Moving
}

// Behind is, per row whose heartbeat moved between two consecutive reads
// (oldest first), how far its clock is at least behind the database's, as
// its newest move shows: the read before the heartbeat landed, less that
// heartbeat. Reads close together bound it tightly. A write delayed by a
// stall lands old too, once: the next move bounds it again.
func Behind(reads []Reading) map[string]time.Duration {
	out := map[string]time.Duration{}
	for i := 1; i < len(reads); i++ {
		before := byID(reads[i-1].Rows)
		for _, r := range reads[i].Rows {
			if a, ok := before[r.ID]; ok && r.LastHeartbeat.After(a.LastHeartbeat) {
				out[r.ID] = max(reads[i-1].Now.Sub(r.LastHeartbeat), 0)
			}
		}
	}
	return out
}

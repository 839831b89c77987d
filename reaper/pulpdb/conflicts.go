package pulpdb

import "github.com/lock-reaper/lock-reaper/reaper/judge"

// Which reservations of one resource pulpcore's scheduler lets run together:
// what explain and the blocked queue ask of the rows they read. It is
// pulpcore's rule, not the reaper's: no verdict rests on it.

// Conflicts says whether two reservations of one resource exclude each
// other: exclusive against anything does, shared against shared does not.
func Conflicts(a, b judge.Kind) bool {
	return a == judge.KindExclusive || b == judge.KindExclusive
}

// entry is the record entry that reserves r: the inverse of
// judge.ParseReservation.
func entry(r judge.Reservation) string {
	if r.Kind == judge.KindShared {
		return judge.SharedPrefix + r.Resource
	}
	return r.Resource
}

// ConflictingEntries lists the record entries of another task that conflict
// with this record, each once: an exclusive reservation conflicts with the
// resource in both forms (R and shared:R), a shared one only with R itself,
// since shared holders coexist.
func ConflictingEntries(record []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range judge.Reservations(record) {
		for _, kind := range []judge.Kind{judge.KindExclusive, judge.KindShared} {
			e := entry(judge.Reservation{Resource: r.Resource, Kind: kind})
			if Conflicts(r.Kind, kind) && !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

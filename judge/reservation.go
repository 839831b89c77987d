package judge

// SharedPrefix marks a shared resource in a task's reserved_resources_record;
// an exclusive one is written plain.
const SharedPrefix = "shared:"

// Reservation is one resource a task reserved, with the kind of lock it takes.
type Reservation struct {
	Resource string
	Kind     Kind
}

// ParseReservation reads one entry of a reserved_resources_record. It is the
// one reader of the record's format: the judge, explain, inspect and the
// database decoder all go through it.
func ParseReservation(entry string) Reservation {
	if IsShared(entry) {
		return Reservation{entry[len(SharedPrefix):], KindShared}
	}
	return Reservation{entry, KindExclusive}
}

// IsShared says a record entry reserves its resource shared. It takes bytes
// or a string, so the decoder can ask before it makes a string of a value.
func IsShared[T string | []byte](entry T) bool {
	return len(entry) >= len(SharedPrefix) && string(entry[:len(SharedPrefix)]) == SharedPrefix
}

// Entry is the record entry that reserves r: the inverse of ParseReservation.
func (r Reservation) Entry() string {
	if r.Kind == KindShared {
		return SharedPrefix + r.Resource
	}
	return r.Resource
}

// Reservations lists a record's reservations in record order, each once.
func Reservations(record []string) []Reservation {
	out := make([]Reservation, 0, len(record))
	seen := make(map[Reservation]bool, len(record))
	for _, entry := range record {
		r := ParseReservation(entry)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// Conflicts says whether two reservations of one resource exclude each
// other: exclusive against anything does, shared against shared does not.
func Conflicts(a, b Kind) bool {
	return a == KindExclusive || b == KindExclusive
}

// ConflictingEntries lists the record entries of another task that conflict
// with this record, each once: an exclusive reservation conflicts with the
// resource in both forms (R and shared:R), a shared one only with R itself,
// since shared holders coexist.
func ConflictingEntries(record []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range Reservations(record) {
		for _, kind := range []Kind{KindExclusive, KindShared} {
			e := Reservation{r.Resource, kind}.Entry()
			if Conflicts(r.Kind, kind) && !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	return out
}

package judge

import "slices"

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

// Reservations lists a record's reservations in record order, each once.
func Reservations(record []string) []Reservation {
	out := make([]Reservation, 0, len(record))
	for _, entry := range record {
		// A record names a few resources: a scan beats a map.
		if r := ParseReservation(entry); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

package heartbeat

// Liveness: whether a Pulp lock owner is alive, from the rows of
// core_appstatus and the database's clock.

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Liveness of one owner name or one core_appstatus row.
type Liveness int

const (
	// Gone: no core_appstatus row carries the name.
	Gone Liveness = iota
	// Dead: rows exist and the newest heartbeat is older than ttl + grace.
	Dead
	// Late: no row is online, but one is still within ttl + grace. A slow
	// heartbeat is not a death, so late owners are left alone.
	Late
	// Alive: some row with the name has last_heartbeat >= now - ttl.
	Alive
)

var livenessNames = [...]string{Gone: "gone", Dead: "dead", Late: "late", Alive: "alive"}

// String is the liveness's name; a value no constant has prints as
// "liveness(N)", never as a real liveness word.
func (l Liveness) String() string {
	if l < Gone || l > Alive {
		return "liveness(" + strconv.Itoa(int(l)) + ")"
	}
	return livenessNames[l]
}

// MarshalText makes liveness print as its name in JSON reports.
func (l Liveness) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (l *Liveness) UnmarshalText(b []byte) error {
	i := slices.Index(livenessNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("unknown liveness %q", b)
	}
	*l = Liveness(i)
	return nil
}

// AppStatus is one core_appstatus row, with only the columns lock-reaper uses.
type AppStatus struct {
	ID            string
	Name          string
	AppType       string
	TTL           time.Duration
	LastHeartbeat time.Time
	// PulpCreated is when the row was created, by the worker's clock, as its
	// uuid7 pulp_id says (zero for older, version 4 ids); the Kubernetes
	// rules compare it with the container's start.
	PulpCreated time.Time
	// Versions is core_appstatus.versions, the row's app label -> version
	// (pulpcore compares a task's needs with a worker's); nil when not read.
	Versions map[string]string
}

// Liveness of the row at the database's now.
func (r AppStatus) Liveness(now time.Time, grace time.Duration) Liveness {
	age := now.Sub(r.LastHeartbeat)
	switch {
	case age <= r.TTL:
		return Alive
	case age <= r.TTL+grace:
		return Late
	default:
		return Dead
	}
}

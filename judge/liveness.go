package judge

// Liveness: whether a Pulp lock owner is alive, from the rows of
// core_appstatus and the database's clock. NewFleet takes the rows and the
// database's now and never reads a clock of its own.

import (
	"maps"
	"slices"
	"strings"
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

// String is the liveness's name; a value no constant has is gone.
func (l Liveness) String() string {
	if l < Gone || l > Alive {
		return "gone"
	}
	return livenessNames[l]
}

// MarshalText makes liveness print as its name in JSON reports.
func (l Liveness) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (l *Liveness) UnmarshalText(b []byte) error {
	return unmarshalName(livenessNames[:], b, "liveness", l)
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

// Owner is what the fleet says about one owner name.
type Owner struct {
	Name     string
	Liveness Liveness
	// HeartbeatAge is the age of the newest heartbeat among the name's rows;
	// zero when the name has no row.
	HeartbeatAge time.Duration
	// Rows counts the core_appstatus rows carrying the name (a stale row and a
	// live successor may share it).
	Rows int
	// Kubernetes is the pod evidence of the pass, when pods were read.
	Kubernetes *PodEvidence
}

// Fleet is the liveness of every row and owner name at one instant.
type Fleet struct {
	Now   time.Time
	Grace time.Duration
	rows  map[string]AppStatus
	names map[string]Owner
	// podLiveness is a row's liveness after the Kubernetes rules, for the
	// rows they changed (WithPods).
	podLiveness map[string]Liveness
	// heartbeatNames is each name by heartbeats alone, kept when the
	// Kubernetes rules changed names: the mass-death guard weighs both.
	heartbeatNames map[string]Owner
	// podEvidence is the rule that decided each row the pods speak of, with
	// the pod, and viewTrusted whether the pod list could prove an absence
	// (WithPods).
	podEvidence map[string]PodEvidence
	viewTrusted bool
}

// FleetOf judges the liveness of the snapshot's owners: by their heartbeats,
// then by the pass's pods when it read them.
func FleetOf(snap Snapshot, p Policy) *Fleet {
	return NewFleet(snap.AppStatuses, snap.Now, p.HeartbeatGrace).WithPods(snap.Pods, p.Kubernetes)
}

// NewFleet computes the liveness of every row and every owner name.
func NewFleet(rows []AppStatus, now time.Time, grace time.Duration) *Fleet {
	f := &Fleet{Now: now, Grace: grace, rows: make(map[string]AppStatus, len(rows)), names: make(map[string]Owner, len(rows))}
	for _, r := range rows {
		f.rows[r.ID] = r
		age := now.Sub(r.LastHeartbeat)
		o, seen := f.names[r.Name]
		if !seen {
			o = Owner{Name: r.Name, Liveness: Gone, HeartbeatAge: age}
		}
		o.Liveness = max(o.Liveness, r.Liveness(now, grace))
		o.HeartbeatAge = min(o.HeartbeatAge, age)
		o.Rows++
		f.names[r.Name] = o
	}
	return f
}

// Owner returns the liveness of an owner name; a name without rows is Gone.
func (f *Fleet) Owner(name string) Owner {
	if o, ok := f.names[name]; ok {
		return o
	}
	return Owner{Name: name, Liveness: Gone}
}

// Row returns the row with the given pulp_id and its liveness.
func (f *Fleet) Row(id string) (AppStatus, Liveness, bool) {
	r, ok := f.rows[id]
	if !ok {
		return AppStatus{}, Gone, false
	}
	return r, f.rowLiveness(r), true
}

// rowLiveness is the row's liveness by its heartbeat, or as the Kubernetes
// rules changed it.
func (f *Fleet) rowLiveness(r AppStatus) Liveness {
	if l, ok := f.podLiveness[r.ID]; ok {
		return l
	}
	return r.Liveness(f.Now, f.Grace)
}

// Owners lists every owner name, sorted.
func (f *Fleet) Owners() []Owner {
	out := slices.AppendSeq(make([]Owner, 0, len(f.names)), maps.Values(f.names))
	slices.SortFunc(out, func(a, b Owner) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// nameOutlives says a live or late row carries the name, by heartbeats and
// by the Kubernetes rules alike. With the rule that only a row dead by its
// heartbeat is left out, pod evidence may make the guard see more deaths,
// never fewer.
func (f *Fleet) nameOutlives(name string) bool {
	if o, ok := f.heartbeatNames[name]; ok && o.Liveness <= Dead {
		return false
	}
	return f.names[name].Liveness > Dead
}

// WorkerRow is what the mass-death guard weighs of one worker row.
type WorkerRow struct {
	ID, Name string
	// Live says the row is alive or late, by its heartbeat and by the
	// Kubernetes rules alike.
	Live bool
	// Superseded says the row is dead by its heartbeat and a live or late
	// row carries its name again: that worker restarted under the same
	// pid@hostname. Such rows are never counted as deaths: they would pile
	// up with every restart until the guard tripped for good.
	Superseded bool
	// DeadFor is how long a row not live has been dead: since its last
	// heartbeat plus its ttl plus the grace (negative for a row the
	// Kubernetes rules made dead within its grace).
	DeadFor time.Duration
	// PodProven says the Kubernetes rules prove the death: the pod is gone,
	// or the kubelet reports its container ended (ended or restarted) since
	// the row's last heartbeat.
	PodProven bool
}

// WorkerRows lists the worker rows as the mass-death guard weighs them, in
// pulp_id order. A row is dead when its heartbeat or the Kubernetes rules
// say so: a worker held as alive by Kubernetes is still dead here, so pod
// evidence never lifts the guard; and a row is superseded only when it is
// dead by its heartbeat.
func (f *Fleet) WorkerRows() []WorkerRow {
	var out []WorkerRow
	for _, r := range f.rows {
		if r.AppType != "worker" {
			continue
		}
		heartbeatDead := r.Liveness(f.Now, f.Grace) == Dead
		w := WorkerRow{ID: r.ID, Name: r.Name, Live: !heartbeatDead && f.rowLiveness(r) != Dead}
		if !w.Live {
			w.Superseded = heartbeatDead && f.nameOutlives(r.Name)
			w.DeadFor = f.Now.Sub(r.LastHeartbeat.Add(r.TTL + f.Grace))
			w.PodProven = f.podEvidence[r.ID].Rule.provesDeath()
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WorkerRow) int { return strings.Compare(a.ID, b.ID) })
	return out
}

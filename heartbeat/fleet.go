package heartbeat

// The fleet: the liveness of every core_appstatus row and owner name at one
// instant. NewFleet takes the rows and the database's now and never reads a
// clock of its own.

import (
	"maps"
	"slices"
	"strings"
	"time"
)

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
	// Motion is what a second read of the heartbeats said of the row that
	// made the name live again, when it did (WithMotion).
	Motion *RowMotion
}

// Fleet is the liveness of every row and owner name at one instant.
type Fleet struct {
	Now   time.Time
	Grace time.Duration
	rows  map[string]AppStatus
	names map[string]Owner
	// podLiveness is a row's liveness after the Kubernetes rules and the
	// second reads of the heartbeats, for the rows they changed (WithPods,
	// WithMotion).
	podLiveness map[string]Liveness
	// heartbeatNames is each name by heartbeats alone, kept when the
	// Kubernetes rules changed names: the mass-death guard weighs both.
	heartbeatNames map[string]Owner
	// podEvidence is the rule that decided each row the pods speak of, with
	// the pod, and viewTrusted whether the pod list could prove an absence
	// (WithPods).
	podEvidence map[string]PodEvidence
	viewTrusted bool
	// holdsUnconfirmed: some row would be held alive by a view too old to
	// hold by itself, which no list confirmed (MustConfirmHolds).
	holdsUnconfirmed bool
	// motion is what second reads of the heartbeats said (WithMotion).
	motion *Motion
}

// NewFleet computes the liveness of every row and every owner name.
func NewFleet(rows []AppStatus, now time.Time, grace time.Duration) *Fleet {
	f := &Fleet{Now: now, Grace: grace, rows: make(map[string]AppStatus, len(rows)), names: make(map[string]Owner, len(rows))}
	for _, r := range rows {
		f.rows[r.ID] = r
		// A heartbeat ahead of the database's clock (the worker's clock runs
		// ahead) is no younger than one written now.
		age := max(now.Sub(r.LastHeartbeat), 0)
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
		heartbeatDead := r.Liveness(f.Now, f.Grace) == Dead && !f.moving(r.ID)
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

// AheadMargin is how far a heartbeat may be ahead of the database's clock
// before it is reported: clocks a little apart are normal.
const AheadMargin = 2 * time.Second

// RowsAhead lists the rows whose heartbeat is more than AheadMargin ahead of
// the database's clock, in pulp_id order. pulpcore stamps last_heartbeat with
// the worker's own clock: a worker whose clock runs ahead by some minutes is
// judged alive those minutes longer after it dies.
func (f *Fleet) RowsAhead() []AppStatus {
	var out []AppStatus
	for _, r := range f.rows {
		if r.LastHeartbeat.Sub(f.Now) > AheadMargin {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b AppStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

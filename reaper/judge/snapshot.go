package judge

import (
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Kind of lock a holding is. It is one byte, not a string: a pass holds a
// Holding for every lock in Redis, and prints the kind as its name.
type Kind uint8

const (
	// KindTask is a task:<uuid> string lock.
	KindTask Kind = iota + 1
	// KindExclusive is a pulp:resource_lock:<R> string lock.
	KindExclusive
	// KindShared is one member of a pulp:resource_lock:<R> set.
	KindShared
)

var kindNames = [...]string{KindTask: "task", KindExclusive: "exclusive", KindShared: "shared"}

// String is the kind's name: task, exclusive or shared ("" for none).
func (k Kind) String() string { return nameOf(kindNames[:], uint8(k)) }

// MarshalText writes the kind's name, in JSON values and map keys alike.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	return unmarshalName(kindNames[:], b, "lock kind", k)
}

// Holding is one (lock key, owner) pair: a task key or an exclusive key gives
// one, a shared set gives one per member. A pass holds one for every lock in
// Redis, so it keeps only the key; the task id and the resource name are
// read from it.
type Holding struct {
	Key   string
	Owner string
	// Registered says whether the owner registry lists the key for this owner;
	// locks of older workers have no registry entry ("legacy").
	Registered bool
	Kind       Kind
}

// TaskID is the task of a task lock, the canonical lowercase UUID of its
// key; "" for a resource holding.
func (h *Holding) TaskID() string {
	if h.Kind != KindTask {
		return ""
	}
	return strings.TrimPrefix(h.Key, TaskKeyPrefix)
}

// Resource is the resource of a resource holding, its key without the
// prefix; "" for a task lock.
func (h *Holding) Resource() string {
	if h.Kind == KindTask {
		return ""
	}
	return strings.TrimPrefix(h.Key, ResourceKeyPrefix)
}

// Task is one core_task row, with only the columns lock-reaper uses.
type Task struct {
	ID    string
	Name  string
	State string
	// AppLockID is core_task.app_lock_id, empty when NULL.
	AppLockID string
	// Reserved is reserved_resources_record: exclusive names plain, shared
	// ones as shared:<name>.
	Reserved   []string
	FinishedAt *time.Time
	// NeverStarted says a canceling or waiting task's started_at is NULL.
	// It is read only for those (no other verdict asks), and only when the
	// role may read started_at (Snapshot.StartsUnread is false).
	NeverStarted bool
	// Versions is core_task.versions, app label -> least version a worker
	// must have to run it (pulpcore's is_compatible); read for claimed
	// waiting tasks when Snapshot.Versions says so.
	Versions map[string]string
}

// Task states, as pulpcore writes them.
const (
	StateWaiting   = "waiting"
	StateRunning   = "running"
	StateCanceling = "canceling"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCanceled  = "canceled"
	StateSkipped   = "skipped"
)

// Final reports whether a task state is terminal. Unknown states are treated
// as incomplete, so that an odd state never makes a lock look finished.
func Final(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCanceled || state == StateSkipped
}

// SuspectKey names a remembered suspect: a holding (lock key and owner) or,
// for stuck claims, a task and the app_lock it was claimed by.
type SuspectKey struct {
	Key   string
	Owner string
}

// Suspect is a finding that needs confirmation, as first sighted.
type Suspect struct {
	Verdict   Verdict
	FirstSeen time.Time
}

// SeenAlive is a worker row a pass saw alive or late.
type SeenAlive struct {
	Name string
	// At is when a pass last saw it so (database clock).
	At time.Time
}

// Snapshot is everything one pass judges: what Redis held, then what the
// database said, read in that order.
type Snapshot struct {
	// Now is the database's clock at the snapshot; every age is measured against it.
	Now      time.Time
	Holdings []Holding
	// AppStatuses is every core_appstatus row.
	AppStatuses []heartbeat.AppStatus
	// Tasks holds the tasks named by task locks or by immediate-<uuid> owners,
	// and the incomplete tasks that are claimed or running without a claim.
	Tasks map[string]Task
	// Suspects remembered from earlier passes.
	Suspects map[SuspectKey]Suspect
	// SeenAlive is the mass-death guard's memory: the worker rows earlier
	// passes saw alive or late, by pulp_id, and not yet explained since
	// (see MassDeathCount). nil when no pass remembered any.
	SeenAlive map[string]SeenAlive
	// FullScan says the keyspace was scanned, not only the owner registry; only
	// then can the absence of a lock be trusted.
	FullScan bool
	// StartsUnread says the role may not read core_task.started_at, so no
	// task's NeverStarted is known: a stuck canceling task is then only
	// reported, never written (a task canceled while running, whose worker
	// released its locks before writing canceled, looks the same).
	StartsUnread bool
	// Pods is this pass's list of pods, read after the database; nil when
	// Kubernetes evidence is off or the list failed.
	Pods *heartbeat.PodView
	// Motion is what reads of the heartbeats a period apart said of the
	// rows the snapshot found dead (DeathsToSettle); nil when none was
	// made, as for an inspection, which writes nothing.
	Motion *heartbeat.Motion
	// Versions says the tasks' and workers' versions were read (the
	// optional grant on core_task.versions): only then is a claimed waiting
	// task judged stranded rather than stuck.
	Versions bool
}

// FleetOf judges the liveness of the snapshot's owners: by their heartbeats,
// then by the pass's pods when it read them, then by the second reads of
// the heartbeats.
func FleetOf(snap Snapshot, p Policy) *heartbeat.Fleet {
	return heartbeat.NewFleet(snap.AppStatuses, snap.Now, p.HeartbeatGrace).WithPods(snap.Pods, p.Kubernetes).WithMotion(snap.Motion)
}

package reaper

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Kind of lock a holding is.
type Kind string

const (
	// KindTask is a task:<uuid> string lock.
	KindTask Kind = "task"
	// KindExclusive is a pulp:resource_lock:<R> string lock.
	KindExclusive Kind = "exclusive"
	// KindShared is one member of a pulp:resource_lock:<R> set.
	KindShared Kind = "shared"
)

// Holding is one (lock key, owner) pair: a task key or an exclusive key gives
// one, a shared set gives one per member.
type Holding struct {
	Key   string `json:"key"`
	Kind  Kind   `json:"kind"`
	Owner string `json:"owner"`
	// TaskID is set for task locks: the canonical lowercase UUID from the key.
	TaskID string `json:"task_id,omitempty"`
	// Resource is set for resource holdings: the key without its prefix.
	Resource string `json:"resource,omitempty"`
	// Registered says whether the owner registry lists the key for this owner;
	// locks of older workers have no registry entry ("legacy").
	Registered bool `json:"registered"`
}

// Ignored is a key under a lock prefix that is not a Pulp lock. It is reported
// and never touched.
type Ignored struct {
	Key    string `json:"key"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// Task is one core_task row, with only the columns lock-reaper uses.
type Task struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
	// AppLockID is core_task.app_lock_id, empty when NULL.
	AppLockID string `json:"app_lock_id,omitempty"`
	// Reserved is reserved_resources_record: exclusive names plain, shared
	// ones as shared:<name>.
	Reserved   []string   `json:"reserved_resources_record"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
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
	switch state {
	case StateCompleted, StateFailed, StateCanceled, StateSkipped:
		return true
	}
	return false
}

// SuspectKey names a remembered suspect: a holding (lock key and owner) or,
// for stuck claims, a task and the app_lock it was claimed by.
type SuspectKey struct {
	Key   string `json:"key"`
	Owner string `json:"owner"`
}

// Suspect is a finding that needs confirmation, as first sighted.
type Suspect struct {
	Verdict   Verdict   `json:"verdict"`
	FirstSeen time.Time `json:"first_seen"`
}

// Snapshot is everything one pass judges: what Redis held, then what the
// database said, read in that order.
type Snapshot struct {
	// Now is the database's clock at the snapshot; every age is measured against it.
	Now      time.Time
	Holdings []Holding
	Ignored  []Ignored
	// AppStatuses is every core_appstatus row.
	AppStatuses []heartbeat.AppStatus
	// Tasks holds the tasks named by task locks or by immediate-<uuid> owners,
	// and the incomplete tasks that are claimed or running without a claim.
	Tasks map[string]Task
	// Suspects remembered from earlier passes.
	Suspects map[SuspectKey]Suspect
	// FullScan says the keyspace was scanned, not only the owner registry; only
	// then can the absence of a lock be trusted.
	FullScan bool
	// KeysScanned counts the keys the Redis read looked at.
	KeysScanned int
}

package sim

import "strings"

// Redis key names of pulpcore's lock protocol.
const (
	// TaskKeyPrefix + task UUID is a task lock: a string holding the owner.
	TaskKeyPrefix = "task:"
	// ResourceKeyPrefix + resource name is a resource lock: a string for an
	// exclusive holder, a set of owners for shared holders.
	ResourceKeyPrefix = "pulp:resource_lock:"
	// OwnerLocksPrefix + owner is the owner registry: the set of lock keys the
	// owner holds.
	OwnerLocksPrefix = "pulp:owner_locks:"
	// ActiveOwnersKey is the set of owners that have held a lock.
	ActiveOwnersKey = "pulp:active_owners"
	// CancelKeyPrefix + task UUID asks the worker running that task to cancel it.
	CancelKeyPrefix = "pulp:task:cancel:"
	// SharedPrefix marks a shared resource in core_task.reserved_resources_record.
	SharedPrefix = "shared:"
	// TaskLockBlocked is what Acquire reports when the task key itself is
	// already held, as pulpcore's script does.
	TaskLockBlocked = "__task_lock__"
)

// cancelSignalTTLSeconds is how long pulpcore's API keeps a cancel request: a day.
const cancelSignalTTLSeconds = 86400

// TaskKey is the lock key of a task.
func TaskKey(taskID string) string { return TaskKeyPrefix + taskID }

// ResourceKey is the lock key of a resource.
func ResourceKey(resource string) string { return ResourceKeyPrefix + resource }

// OwnerLocksKey is the registry key of an owner.
func OwnerLocksKey(owner string) string { return OwnerLocksPrefix + owner }

// CancelKey is the cancel-request key of a task.
func CancelKey(taskID string) string { return CancelKeyPrefix + taskID }

// ImmediateOwner is the owner name pulpcore uses for an immediate task released
// by a process that has no AppStatus row.
func ImmediateOwner(taskID string) string { return "immediate-" + taskID }

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

// FinalState reports whether a task state is terminal.
func FinalState(state string) bool {
	switch state {
	case StateCompleted, StateFailed, StateCanceled, StateSkipped:
		return true
	}
	return false
}

// App types of core_appstatus rows.
const (
	AppTypeWorker = "worker"
	AppTypeAPI    = "api"
)

// parseTaskKey returns the task id of a task:<uuid> key; other keys under the
// prefix are not Pulp locks (a cache may use the same prefix).
func parseTaskKey(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, TaskKeyPrefix)
	if !ok || !isUUID(id) {
		return "", false
	}
	return id, true
}

package judge

import "strings"

// The two key prefixes a holding's key starts with: the judge reads a task
// lock's task and a resource holding's resource from its key.
const (
	TaskKeyPrefix     = "task:"
	ResourceKeyPrefix = "pulp:resource_lock:"
)

// ImmediateOwnerPrefix starts the owner name pulpcore's immediate dispatch
// takes a task lock under: immediate-<task uuid>. Such an owner stands for
// one immediate task rather than a process.
const ImmediateOwnerPrefix = "immediate-"

// IsTaskUUID reports whether s is a UUID in the canonical lowercase text form
// pulpcore uses for task keys.
func IsTaskUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range []byte(s) {
		dash := i == 8 || i == 13 || i == 18 || i == 23
		hex := '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
		if dash && c != '-' || !dash && !hex {
			return false
		}
	}
	return true
}

// ImmediateTaskID returns the task an immediate-<uuid> owner name stands for.
func ImmediateTaskID(owner string) (string, bool) {
	id, ok := strings.CutPrefix(owner, ImmediateOwnerPrefix)
	if !ok || !IsTaskUUID(id) {
		return "", false
	}
	return id, true
}

// isImmediateOwnerOf says owner is immediate-<taskID>, without building the
// name for each of a hundred thousand task locks.
func isImmediateOwnerOf(owner, taskID string) bool {
	id, ok := strings.CutPrefix(owner, ImmediateOwnerPrefix)
	return ok && id == taskID
}

package judge

import "strings"

// The two key prefixes a holding's key starts with: the judge reads a task
// lock's task and a resource holding's resource from its key.
const (
	TaskKeyPrefix     = "task:"
	ResourceKeyPrefix = "pulp:resource_lock:"
)

// immediateOwnerPrefix marks an owner name that stands for one immediate task
// rather than a process: immediate-<task-uuid>.
// ImmediateOwnerPrefix starts the owner name pulpcore's immediate dispatch
// takes a task lock under: immediate-<task uuid>.
const ImmediateOwnerPrefix = "immediate-"

const immediateOwnerPrefix = ImmediateOwnerPrefix

// IsTaskUUID reports whether s is a UUID in the canonical lowercase text form
// pulpcore uses for task keys.
func IsTaskUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// ImmediateTaskID returns the task an immediate-<uuid> owner name stands for.
func ImmediateTaskID(owner string) (string, bool) {
	id, ok := strings.CutPrefix(owner, immediateOwnerPrefix)
	if !ok || !IsTaskUUID(id) {
		return "", false
	}
	return id, true
}

// isImmediateOwnerOf says owner is immediate-<taskID>, without building the
// name for each of a hundred thousand task locks.
func isImmediateOwnerOf(owner, taskID string) bool {
	id, ok := strings.CutPrefix(owner, immediateOwnerPrefix)
	return ok && id == taskID
}

package redislocks

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Pulp's Redis key names besides the lock prefixes (judge.TaskKeyPrefix,
// judge.ResourceKeyPrefix).
const (
	OwnerLocksPrefix = "pulp:owner_locks:"
	ActiveOwnersKey  = "pulp:active_owners"
	// SuspectsKey is lock-reaper's own hash of remembered suspects.
	SuspectsKey = "pulp:lock_reaper:suspects"
	// SeenAliveKey is lock-reaper's own hash of the worker rows passes saw
	// alive: the mass-death guard's memory.
	SeenAliveKey = "pulp:lock_reaper:seen_alive"
	// PodsSeenKey is lock-reaper's own hash of the pods earlier complete
	// lists showed (pods_seen.go).
	PodsSeenKey = "pulp:lock_reaper:pods_seen"
	// OpenWritesKey is lock-reaper's own hash of the uncommitted writes to
	// core_task passes saw, with their first sighting (open_writes.go).
	OpenWritesKey = "pulp:lock_reaper:open_writes"
)

// MaxOwnerLen bounds an owner name; pulpcore's are pid@hostname or
// immediate-<uuid>, far shorter. A longer value is not an owner name.
const MaxOwnerLen = 1024

// ParseTaskKey returns the task id of a task:<uuid> key.
func ParseTaskKey(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, judge.TaskKeyPrefix)
	if !ok || !judge.IsTaskUUID(id) {
		return "", false
	}
	return id, true
}

// ParseResourceKey returns the resource name of a pulp:resource_lock:<R> key.
// Resource names are opaque; only an empty one is refused.
func ParseResourceKey(key string) (string, bool) {
	r, ok := strings.CutPrefix(key, judge.ResourceKeyPrefix)
	if !ok || r == "" {
		return "", false
	}
	return r, true
}

// OwnerProblem says why a lock value is not an owner name, or "" when it is
// one. Owner names may hold spaces, '@', ':' and any printable Unicode.
func OwnerProblem(v string) string {
	switch {
	case v == "":
		return "empty owner name"
	case len(v) > MaxOwnerLen:
		return "owner name longer than 1024 bytes"
	case !utf8.ValidString(v):
		return "owner name is not valid UTF-8"
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return "owner name contains control characters"
		}
	}
	return ""
}

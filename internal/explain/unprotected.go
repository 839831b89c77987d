package explain

import (
	"fmt"
	"strings"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// StatusUnprotected: running on a live claim, but its task lock, or one of
// its resource locks, is absent from Redis (a Redis restart without
// persistence, an eviction, a split Redis, an operator's DEL): nothing keeps
// another task from taking those resources.
const StatusUnprotected Status = "unprotected"

// Unprotected is the condition of a running task whose task lock is gone,
// as explain shows it. The reaper never writes a lock on anyone's behalf:
// it only reports the task (task verdict unprotected).
type Unprotected struct {
	// Unguarded are the resources it reserves that its claim's owner holds
	// no lock of.
	Unguarded []string `json:"unguarded"`
	// OtherHolders hold one of its resources under another owner.
	OtherHolders []Holder `json:"other_holders"`
}

// unprotected says whether the explained task is unprotected: running,
// claimed by a live (or late) process, and its task lock absent from a
// full scan, the only read that can tell a lock is absent.
func (x *explainer) unprotected() *Unprotected {
	t, claim := x.e.Task, x.e.Claim
	if t == nil || t.State != judge.StateRunning || !x.in.Snapshot.FullScan ||
		claim == nil || (claim.Liveness != heartbeat.Alive && claim.Liveness != heartbeat.Late) {
		return nil
	}
	// With its task lock held, by its worker alone, the task is unprotected
	// when a resource lock is missing (below).
	if len(x.e.TaskLocks) > 1 || len(x.e.TaskLocks) == 1 && x.e.TaskLocks[0].Owner != claim.Name {
		return nil
	}
	u := &Unprotected{Unguarded: []string{}, OtherHolders: []Holder{}}
	for _, rn := range x.e.Resources {
		guarded := false
		for _, h := range rn.Holders {
			if h.Owner == claim.Name {
				guarded = true
			} else {
				u.OtherHolders = append(u.OtherHolders, h)
			}
		}
		if !guarded {
			u.Unguarded = append(u.Unguarded, rn.Resource)
		}
	}
	if len(x.e.TaskLocks) > 0 && len(u.Unguarded) == 0 {
		return nil
	}
	return u
}

func (x *explainer) unprotectedConclusion() string {
	u := x.e.Unprotected
	msg := fmt.Sprintf("unprotected: running on %s, but its task lock %s%s is absent from Redis (a restart without persistence, an eviction or a split Redis)",
		processPhrase(x.e.Claim), judge.TaskKeyPrefix, x.id)
	if len(x.e.TaskLocks) > 0 {
		msg = fmt.Sprintf("unprotected: running on %s, which holds its task lock %s%s but not every resource lock the task reserves (an operator's DEL or SREM, a lost write)",
			processPhrase(x.e.Claim), judge.TaskKeyPrefix, x.id)
	}
	if n := len(u.Unguarded); n > 0 {
		msg += fmt.Sprintf("; %d of its %d resources are unguarded (%s)", n, len(x.e.Resources), strings.Join(u.Unguarded, ", "))
	}
	if len(u.OtherHolders) > 0 {
		var others []string
		for _, h := range u.OtherHolders {
			others = append(others, fmt.Sprintf("%s %s by %s", h.Key, h.Kind, h.Owner))
		}
		msg += "; also held: " + strings.Join(others, ", ")
	}
	return msg + "; lock-reaper writes no lock for it and only reports it"
}

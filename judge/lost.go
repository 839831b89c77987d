package judge

import (
	"fmt"
	"slices"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// taskFacts is what the lost task table of verdicts.md looks at, for one
// incomplete task.
type taskFacts struct {
	state string
	// claimed says app_lock_id is set; claim is the liveness of its row
	// (gone when the row is missing).
	claimed bool
	claim   heartbeat.Liveness
	// locks counts the task:<T> locks held, by any owner; immediate says one
	// is held by immediate-<T>.
	locks     int
	immediate bool
	// fullScan says the keyspace was scanned: only then is an absent lock
	// really absent.
	fullScan bool
}

// claimLive says the claim's row is alive or late.
func (f taskFacts) claimLive() bool {
	return f.claimed && (f.claim == heartbeat.Alive || f.claim == heartbeat.Late)
}

// mayBeLost is the one lost-task predicate on a task's state and claim
// alone: a task for which it is false gets no verdict whatever its locks,
// so only these are looked up among the task locks. It is decideTask's
// condition with the lock facts left open.
func mayBeLost(f taskFacts) bool {
	for _, locks := range []taskFacts{{locks: 0}, {locks: 1}, {locks: 1, immediate: true}} {
		g := f
		g.locks, g.immediate = locks.locks, locks.immediate
		if decideTask(g) != "" {
			return true
		}
	}
	return false
}

// decideTask applies the lost task table of verdicts.md: the verdict on one
// incomplete task, or "" when it deserves none.
func decideTask(f taskFacts) Verdict {
	switch f.state {
	case StateRunning, StateCanceling:
		switch {
		case f.claimLive() && f.state == StateRunning && f.fullScan && f.locks == 0:
			// A live worker runs it, but nothing in Redis guards its
			// resources any more: reported, never written.
			return VerdictUnprotected
		case f.claimLive():
			return ""
		case !f.claimed && f.immediate:
			// pulpcore runs an immediate task with no AppStatus in the
			// dispatching process under immediate-<T> and app_lock NULL:
			// that owner is alive while the task is incomplete.
			return ""
		}
		// No claim: the task lost its worker's row; a claim whose row is
		// missing or dead lost its worker.
		return VerdictLost
	case StateWaiting:
		switch {
		case !f.claimed:
			return ""
		case f.claim == heartbeat.Gone || f.claim == heartbeat.Dead:
			return VerdictOrphanedClaim
		case f.claim == heartbeat.Alive && f.fullScan && f.locks == 0:
			return VerdictStuckClaim
		}
	}
	return ""
}

// taskFactsOf gathers what the snapshot says of task t's claim; the lock
// facts are added from the task locks.
func (j *judge) taskFactsOf(t Task) taskFacts {
	f := taskFacts{state: t.State, claimed: t.AppLockID != "", fullScan: j.snap.FullScan}
	if _, live, ok := j.fleet.Row(t.AppLockID); ok {
		f.claim = live
	}
	return f
}

// taskJudgements applies the lost task table to every incomplete task of the
// snapshot, in task id order: candidates first, then each one's decision,
// then the confirmation of those that need it.
func (j *judge) taskJudgements(taskLocks []judgedTaskLock) []TaskJudgement {
	ids := j.lostCandidates()
	if len(ids) == 0 {
		return nil
	}
	locks := j.taskLocksOf(ids, taskLocks)
	var out []TaskJudgement
	for _, id := range ids {
		t := j.snap.Tasks[id]
		f := j.taskFactsOf(t)
		f.locks = len(locks[id].keys)
		f.immediate = locks[id].owner == immediateOwnerPrefix+id
		v := decideTask(f)
		if v == "" {
			continue
		}
		out = append(out, j.taskJudgement(t, v, locks[id]))
	}
	return out
}

// lostCandidates lists, sorted, the tasks mayBeLost: most tasks of a
// snapshot run under a live claim and are never looked at again.
func (j *judge) lostCandidates() []string {
	var ids []string
	for id, t := range j.snap.Tasks {
		if mayBeLost(j.taskFactsOf(t)) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// taskLocksHeld is what the snapshot holds of one task's lock.
type taskLocksHeld struct {
	keys  []string
	owner string
}

func (j *judge) taskLocksOf(ids []string, taskLocks []judgedTaskLock) map[string]taskLocksHeld {
	held := make(map[string]taskLocksHeld, len(ids))
	for _, id := range ids {
		held[id] = taskLocksHeld{}
	}
	for _, tl := range taskLocks {
		h := &j.snap.Holdings[tl.at]
		if l, want := held[h.TaskID()]; want {
			held[h.TaskID()] = taskLocksHeld{keys: append(l.keys, h.Key), owner: h.Owner}
		}
	}
	return held
}

// taskJudgement is what verdict v does to task t, given its task locks.
func (j *judge) taskJudgement(t Task, v Verdict, locks taskLocksHeld) TaskJudgement {
	row, _, _ := j.fleet.Row(t.AppLockID)
	owner := row.Name
	if owner == "" {
		owner = locks.owner
	}
	tj := TaskJudgement{ID: t.ID, Name: t.Name, Verdict: v, Action: v.action(), StateBefore: t.State, AppLockID: t.AppLockID, Owner: owner}
	switch v {
	case VerdictLost:
		tj.StateAfter = StateCanceled
		if t.State == StateRunning {
			tj.StateAfter = j.p.LostRunning
		}
		tj.Reason = lostReason(owner, tj.StateAfter)
	case VerdictOrphanedClaim:
		tj.AfterRelease = locks.keys
		if j.p.OrphanedWaiting == WaitingCancel {
			tj.StateAfter, tj.Reason = StateCanceled, lostReason(owner, StateCanceled)
		} else {
			tj.StateAfter, tj.ClearClaim = StateWaiting, true
		}
	case VerdictStuckClaim:
		tj.StateAfter, tj.ClearClaim = StateWaiting, true
		s := j.remember(stuckClaimKey(t.ID, t.AppLockID), v)
		tj.FirstSeen = &s.FirstSeen
		if !confirmed(s.FirstSeen, j.snap.Now, j.p) {
			tj.Action = ActionSuspect
		}
	case VerdictUnprotected:
		tj.StateAfter = t.State
		tj.Resources = j.unguarded(t, owner)
		tj.Reason = fmt.Sprintf("Worker %s runs the task, but its lock %s%s is gone from Redis: its resources are unguarded.", owner, TaskKeyPrefix, t.ID)
	}
	return tj
}

func lostReason(owner, stateAfter string) string {
	if owner == "" {
		owner = "(unknown)"
	}
	return fmt.Sprintf("Worker %s has gone missing; lock reaper %s.", owner, stateAfter)
}

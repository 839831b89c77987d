package judge

import (
	"cmp"
	"slices"
	"strings"

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
	// unheld says the claim's worker holds the task lock, alone, but not
	// every resource lock the task's record reserves.
	unheld bool
	// fullScan says the keyspace was scanned: only then is an absent lock
	// really absent.
	fullScan bool
	// neverStarted says started_at is NULL; startsUnread says the role may
	// not read it, so neverStarted is unknown.
	neverStarted, startsUnread bool
	// claimHolds says the claim's worker holds the task's lock.
	claimHolds bool
	// tooOld says the claim's worker lacks a version the task needs, as
	// pulpcore's is_compatible decides (stranded.go).
	tooOld bool
}

// stuckCanceling says a canceling task is claimed by a live row and, in a
// full scan, no task lock is held for it, while it never started (or, with
// startsUnread, may never have): pulpcore's cancel_task only signals a
// claimed task, and no worker supervises it, so it stays canceling forever.
// A task its worker really cancels holds its task lock until it is canceled.
func (f taskFacts) stuckCanceling() bool {
	return f.state == StateCanceling && f.claimed && f.claim == heartbeat.Alive && f.fullScan && f.locks == 0 &&
		(f.neverStarted || f.startsUnread)
}

// justifiesNothing says the task's row must not justify its owner's
// resource locks: a stuck canceling task, known never started, runs
// nothing, so a lock a finished task of the same owner leaked on a
// resource it reserves would otherwise never be released.
func (f taskFacts) justifiesNothing() bool {
	return f.stuckCanceling() && !f.startsUnread

}

// claimLive says the claim's row is alive or late.
func (f taskFacts) claimLive() bool {
	return f.claimed && (f.claim == heartbeat.Alive || f.claim == heartbeat.Late)
}

// decideTask applies the lost task table of verdicts.md: the verdict on one
// incomplete task, or "" when it deserves none.
func decideTask(f taskFacts) Verdict {
	switch f.state {
	case StateRunning, StateCanceling:
		switch {
		case f.claimLive() && f.state == StateRunning && f.fullScan && (f.locks == 0 || f.unheld):
			// A live worker runs it, but Redis no longer guards its
			// resources, or not all of them (pulpcore takes and releases
			// a task's locks together): reported, never written.
			return VerdictUnprotected
		case f.stuckCanceling():
			return VerdictStuckCanceling
		case f.claimLive():
			return noVerdict
		case !f.claimed && f.immediate:
			// pulpcore runs an immediate task with no AppStatus in the
			// dispatching process under immediate-<T> and app_lock NULL:
			// that owner is alive while the task is incomplete.
			return noVerdict
		}
		// No claim: the task lost its worker's row; a claim whose row is
		// missing or dead lost its worker.
		return VerdictLost
	case StateWaiting:
		switch {
		case !f.claimed:
			return noVerdict
		case f.claim == heartbeat.Gone || f.claim == heartbeat.Dead:
			return VerdictOrphanedClaim
		case f.claim == heartbeat.Alive && f.fullScan && f.locks == 0 && f.tooOld:
			// pulpcore's worker found itself too old, released the
			// task's locks and left app_lock set: no worker fetches it.
			return VerdictStranded
		case f.claim == heartbeat.Alive && f.fullScan && f.locks == 0:
			return VerdictStuckClaim
		case f.claimedNotStarted():
			return VerdictClaimedNotStarted
		}
	}
	return noVerdict
}

// taskFactsOf gathers what the snapshot says of task t's claim, and the
// claim's row; the lock facts are added from the task locks.
func (j *judge) taskFactsOf(t Task) (taskFacts, heartbeat.AppStatus) {
	row, live, _ := j.fleet.Row(t.AppLockID)
	return taskFacts{state: t.State, claimed: t.AppLockID != "", claim: live, fullScan: j.snap.FullScan,
		neverStarted: t.NeverStarted, startsUnread: j.snap.StartsUnread}, row
}

// taskJudgements applies the lost task table to every incomplete task of the
// snapshot, in task id order, with what Redis holds of its task lock; a
// verdict that needs it is confirmed.
func (j *judge) taskJudgements() []TaskJudgement {
	// The tasks of owners not alive are most of the verdicts, and when one
	// worker dies holding everything there is one per task: the list is
	// made once at about its size instead of grown by copies.
	expected := 0
	for _, t := range j.snap.Tasks {
		if f, _ := j.taskFactsOf(t); !f.claimLive() {
			expected++
		}
	}
	out := make([]TaskJudgement, 0, expected)
	j.rowReserved = map[holdingKey]string{}
	for id, t := range j.snap.Tasks {
		f, row := j.taskFactsOf(t)
		held := j.held[id]
		f.locks, f.immediate = int(held.count), isImmediateOwnerOf(j.lastHolder(held).Owner, id)
		f.unheld = held.count == 1 && j.unheld[id] && j.lastHolder(held).Owner == row.Name
		f.claimHolds = held.count > 0 && j.lastHolder(held).Owner == row.Name
		f.tooOld = j.snap.Versions && t.State == StateWaiting && f.claimed && !Compatible(row.Versions, t.Versions)
		if runs(t.State) && f.claimLive() && !f.justifiesNothing() {
			j.rowReserves(id, t, row.Name, held)
		}
		if v := decideTask(f); v != noVerdict {
			if v == VerdictClaimedNotStarted && !j.claimedNotStartedConfirmed(id, t) {
				// Only remembered: a worker sets a task running moments
				// after it claims and locks it.
				continue
			}
			out = append(out, j.taskJudgement(id, t, v, held))
		}
	}
	slices.SortFunc(out, func(a, b TaskJudgement) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// taskLocksHeld is what the snapshot holds of one task's lock: how many
// holdings of its key, and where the last of them is in the snapshot. It
// is kept for each task lock: two numbers, not the key and owner.
type taskLocksHeld struct{ count, last int32 }

// lastHolder is the last holding of a task's lock, the zero holding when
// none is held.
func (j *judge) lastHolder(held taskLocksHeld) Holding {
	if held.count == 0 {
		return Holding{}
	}
	return j.snap.Holdings[held.last]
}

// taskJudgement is what verdict v does to task t, given its task locks.
func (j *judge) taskJudgement(id string, t Task, v Verdict, held taskLocksHeld) TaskJudgement {
	last := j.lastHolder(held)
	row, _, _ := j.fleet.Row(t.AppLockID)
	owner := cmp.Or(row.Name, last.Owner)
	tj := TaskJudgement{ID: id, Name: t.Name, Verdict: v, Action: v.action(), StateBefore: t.State, AppLockID: t.AppLockID, Owner: owner}
	switch v {
	case VerdictLost:
		tj.StateAfter = StateCanceled
		if t.State == StateRunning {
			tj.StateAfter = j.p.LostRunning
		}
	case VerdictOrphanedClaim:
		if held.count > 0 {
			tj.AfterRelease = last.Key
		}
		if j.p.OrphanedWaiting == WaitingCancel {
			tj.StateAfter = StateCanceled
		} else {
			tj.StateAfter, tj.ClearClaim = StateWaiting, true
		}
	case VerdictStuckClaim:
		tj.StateAfter, tj.ClearClaim = StateWaiting, true
		s := remember(j.suspects, &j.snap, StuckClaimKey(id, t.AppLockID), v)
		tj.FirstSeen = &s.FirstSeen
		if !confirmed(s.FirstSeen, j.snap.Now, j.p) {
			tj.Action = ActionSuspect
		}
	case VerdictUnprotected:
		tj.StateAfter, tj.LockHeld = t.State, held.count > 0
	case VerdictStuckCanceling:
		// Remembered under the claim's key, as a stuck claim is: a task
		// is never both, and a changed verdict starts a new sighting.
		tj.StateAfter = StateCanceled
		s := remember(j.suspects, &j.snap, StuckClaimKey(id, t.AppLockID), v)
		tj.FirstSeen = &s.FirstSeen
		switch {
		case j.snap.StartsUnread:
			// Never guessed: a task canceled while running looks the same.
			tj.Action, tj.Deferred = ActionReport, DeferredStartsUnread
		case !confirmed(s.FirstSeen, j.snap.Now, j.p):
			tj.Action = ActionSuspect
		}
	case VerdictStranded:
		j.strandedJudgement(&tj, t)
	case VerdictClaimedNotStarted:
		j.claimedNotStartedJudgement(&tj, t, held)
	}
	return tj
}

package pulpdb

import (
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/humantext"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TaskReason is the message a task update finishes a lost or orphaned task
// with, as its error's description, and for an unprotected task what the
// report says of it, and for a stranded task why it waits (a requeue writes
// no message); "" for other requeues, which finish nothing. It is made
// from the judgement when it is written or shown, not kept in it: a worker
// that dies holding a hundred thousand tasks costs the plan no message.
func TaskReason(tj *judge.TaskJudgement) string {
	switch {
	case tj.Verdict == judge.VerdictUnprotected && tj.LockHeld:
		return fmt.Sprintf("Worker %s runs the task and holds its lock %s%s, but not every resource lock the task reserves: those resources are unguarded.", tj.Owner, judge.TaskKeyPrefix, tj.ID)
	case tj.Verdict == judge.VerdictUnprotected:
		return fmt.Sprintf("Worker %s runs the task, but its lock %s%s is gone from Redis: its resources are unguarded.", tj.Owner, judge.TaskKeyPrefix, tj.ID)
	case tj.Verdict == judge.VerdictStuckCanceling:
		return fmt.Sprintf(stuckCancelingReason, tj.Owner)
	case tj.Verdict == judge.VerdictClaimedNotStarted:
		return ClaimedNotStartedWords(tj.Owner, tj.NotStartedFor) + "; lock reaper writes nothing for it: a requeue would let a second worker run it."
	case tj.Verdict == judge.VerdictStranded && tj.Stranded != nil:
		return fmt.Sprintf("Worker %s is too old for the task, which %s.", tj.Owner, tj.Stranded)
	case tj.ClearClaim || tj.Verdict != judge.VerdictLost && tj.Verdict != judge.VerdictOrphanedClaim:
		return ""
	}
	owner := tj.Owner
	if owner == "" {
		owner = "(unknown)"
	}
	return fmt.Sprintf(lostReason, owner, tj.StateAfter)
}

// ClaimedNotStartedWords says what is known of a claimed-not-started task:
// pulpcore keeps no time of the claim, so the time since the first sighting
// is a least one.
func ClaimedNotStartedWords(owner string, notStartedFor time.Duration) string {
	return fmt.Sprintf("claimed by %s and not started for at least %s, while it holds the task's lock; its process may hang: restarting that worker frees it",
		owner, humantext.Duration(notStartedFor))
}

// stuckCancelingReason is TaskReason's message for a stuck canceling task:
// its worker claimed it, never started it, and holds no lock of it, so no
// worker would ever finish its cancel.
const stuckCancelingReason = "Worker %s claimed the task and never started it; lock reaper canceled it, as no worker would finish its cancel."

// lostReason is TaskReason's message for a task it finishes: the worker,
// then the state.
const lostReason = "Worker %s has gone missing; lock reaper %s."

// reaperReasonLikes match every message a task the reaper finished carries,
// whatever the worker's name and the state (ReadFinishedByReaper): a lost
// or orphaned task's and a stuck canceling task's, whose cancel the reaper
// also signalled (judge.NeedsCancelSignal).
var reaperReasonLikes = []string{
	"Worker % has gone missing; lock reaper %.",
	"Worker % claimed the task and never started it; lock reaper canceled it, as no worker would finish its cancel.",
}

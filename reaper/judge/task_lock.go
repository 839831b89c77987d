package judge

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// taskLockFacts is what the task lock table of verdicts.md looks at, for one
// task:<T> lock.
type taskLockFacts struct {
	// owner is the lock owner's liveness.
	owner heartbeat.Liveness
	// found says the snapshot has T's row; the fields below are read from it.
	found bool
	state string
	// finished says finished_at is set, finishedFor how long ago that was.
	finished    bool
	finishedFor time.Duration
	// immediate says the owner is immediate-<T>.
	immediate bool
	// claimedByOwner says T's app_lock is a row carrying the owner's name,
	// whose liveness is claim.
	claimedByOwner bool
	claim          heartbeat.Liveness
}

// decideTaskLock applies the task lock table of verdicts.md; the first
// matching row decides.
func decideTaskLock(f taskLockFacts, p Policy) Verdict {
	final := f.found && Final(f.state)
	switch {
	case final && (!f.finished || f.finishedFor > p.FinishedGrace):
		return VerdictTaskFinished
	case final || f.owner == heartbeat.Late:
		return VerdictPending
	case f.owner == heartbeat.Dead:
		return VerdictOwnerDead
	case f.owner == heartbeat.Gone:
		return VerdictOwnerGone
	case !f.found:
		return VerdictTaskMissing
	case f.immediate:
		return VerdictHealthy
	case f.claimedByOwner && f.claim == heartbeat.Alive:
		return VerdictHealthy
	case f.claimedByOwner && f.claim == heartbeat.Late:
		return VerdictPending
	case f.claimedByOwner:
		return VerdictTaskLost
	default:
		return VerdictUnclaimed
	}
}

// taskLockFactsOf gathers the facts of task lock h, whose owner's liveness
// is owner and whose task is t when found.
func (j *judge) taskLockFactsOf(h *Holding, owner heartbeat.Liveness, t Task, found bool) taskLockFacts {
	f := taskLockFacts{owner: owner, found: found}
	if !found {
		return f
	}
	f.state = t.State
	if t.FinishedAt != nil {
		f.finished, f.finishedFor = true, j.snap.Now.Sub(*t.FinishedAt)
	}
	f.immediate = isImmediateOwnerOf(h.Owner, t.ID)
	if row, live, ok := j.fleet.Row(t.AppLockID); ok && row.Name == h.Owner {
		f.claimedByOwner, f.claim = true, live
	}
	return f
}

// taskLockJudgement is the verdict on task lock h, whose task is t when
// found, with its evidence and the action the verdict calls for, before
// confirmation; confirm makes it the lock's judgement.
func (j *judge) taskLockJudgement(h *Holding, t Task, found bool) Judgement {
	v := decideTaskLock(j.taskLockFactsOf(h, j.record(h.Owner).liveness, t, found), j.p)
	jd := Judgement{Holding: *h, Verdict: v, Action: v.action()}
	if !j.lists(v) {
		// Only counted: its evidence is never assembled.
		return jd
	}
	return j.judgement(jd, j.taskRowShown(t, found))
}

package judge

import "github.com/lock-reaper/lock-reaper/heartbeat"

// A waiting task claimed by a live worker that holds its task lock is what
// pulpcore's worker leaves between fetching it and the task's subprocess
// setting it running (redis_worker.py supervise_task, then Task.set_running).
// An exception in supervise_task ends the worker process, and then
// orphaned-claim applies; but a subprocess that has not reached set_running
// can wait without bound (PgBouncer's queue, a row lock, a failover). A
// requeue would let a second worker run the task beside it, so the pass
// never writes it: once confirmed it is reported, naming the worker whose
// restart frees it.

// claimedNotStarted says a waiting task is claimed by a live row whose
// worker holds its task lock, and started_at is known to be NULL.
func (f taskFacts) claimedNotStarted() bool {
	return f.state == StateWaiting && f.claimed && f.claim == heartbeat.Alive && f.claimHolds &&
		f.neverStarted && !f.startsUnread
}

// claimedNotStartedConfirmed remembers the task's first sighting under its
// claim's key, as a stuck claim is (a task is never both, and a changed
// verdict starts a new sighting), and says whether it was seen for
// confirm_after.
func (j *judge) claimedNotStartedConfirmed(id string, t Task) bool {
	s := remember(j.suspects, &j.snap, StuckClaimKey(id, t.AppLockID), VerdictClaimedNotStarted)
	return confirmed(s.FirstSeen, j.snap.Now, j.p)
}

// claimedNotStartedJudgement fills a confirmed claimed-not-started task's
// judgement: a report that leaves the task as it is.
func (j *judge) claimedNotStartedJudgement(tj *TaskJudgement, t Task, held taskLocksHeld) {
	s := j.suspects[StuckClaimKey(tj.ID, t.AppLockID)]
	tj.Action, tj.StateAfter, tj.LockHeld = ActionReport, t.State, held.count > 0
	tj.FirstSeen = &s.FirstSeen
	tj.NotStartedFor = j.snap.Now.Sub(s.FirstSeen)
}

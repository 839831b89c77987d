package judge

import "time"

// What a pass decides after acting: rules whose facts include what the
// release did, applied by the actor between its steps.

// DeferredTaskLockHeld is why a task update waits for a later pass.
const DeferredTaskLockHeld = "its task lock is still held"

// DeferredStartsUnread is why a stuck canceling task is only reported: the
// role may not read core_task.started_at, without which a task canceled
// while running cannot be told from one never started.
const DeferredStartsUnread = "the role may not read core_task.started_at (GRANT SELECT (started_at) ON core_task)"

// DeferredTooManyReservers is why a guarded shared membership waits for a
// later pass: more incomplete tasks reserve its resource than one release
// call may check for a new task of its owner's.
const DeferredTooManyReservers = "too many tasks reserve its resource to check in one call"

// NeedsCancelSignal says a task update finishes a task that a worker may
// still be running: pulpcore's cancel signal then makes a worker that was
// only late abort it, rather than run on beside the next holder of its
// resources.
func NeedsCancelSignal(tj *TaskJudgement) bool {
	return !tj.ClearClaim && runs(tj.StateBefore) && (tj.StateAfter == StateCanceled || tj.StateAfter == StateFailed)
}

// UpdateWaits says a task update must wait for a later pass: a task lock
// its update needs gone (TaskJudgement.AfterRelease) is still held after the
// release. A task requeued while its old lock remains would block the next
// worker that picks it up. stillHeld names the task lock keys the plan
// listed that the release left in place.
func UpdateWaits(tj *TaskJudgement, stillHeld map[string]bool) bool {
	return tj.AfterRelease != "" && stillHeld[tj.AfterRelease]
}

// CancelSignalLifetime is how long pulpcore's cancel signal lives once set
// (publish_cancel_signal's expiry): a worker that has not read it by then
// never will.
const CancelSignalLifetime = 24 * time.Hour

// SignalLifetimeLeft is how much longer the cancel signal of a task the
// reaper finished at finishedAt lives, on the database clock now: the expiry
// a signal published again gets, so that it never outlives the first. Zero
// or less means the signal has expired and is not published again. The
// signal was published just before the update that set finishedAt, so the
// lifetime left is at most the update's own duration too long.
func SignalLifetimeLeft(finishedAt, now time.Time) time.Duration {
	return finishedAt.Add(CancelSignalLifetime).Sub(now)
}

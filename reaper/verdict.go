package reaper

// Verdict names the rule of verdicts.md that decided a holding or a task.
type Verdict string

// Holding verdicts.
const (
	VerdictHealthy      Verdict = "healthy"
	VerdictPending      Verdict = "pending"
	VerdictTaskFinished Verdict = "task-finished"
	VerdictOwnerDead    Verdict = "owner-dead"
	VerdictOwnerGone    Verdict = "owner-gone"
	VerdictTaskMissing  Verdict = "task-missing"
	VerdictTaskLost     Verdict = "task-lost"
	VerdictUnclaimed    Verdict = "unclaimed"
	VerdictNoTask       Verdict = "no-task"
	// VerdictJustified is a resource holding of a task lock kept this pass.
	VerdictJustified Verdict = "justified"
)

// Task verdicts.
const (
	VerdictLost          Verdict = "lost"
	VerdictOrphanedClaim Verdict = "orphaned-claim"
	VerdictStuckClaim    Verdict = "stuck-claim"
)

// needsConfirmation lists the verdicts whose finding is only released on a
// later pass that sees it again: a live owner may be between two legitimate
// protocol steps.
func (v Verdict) needsConfirmation() bool {
	switch v {
	case VerdictTaskMissing, VerdictUnclaimed, VerdictNoTask, VerdictStuckClaim:
		return true
	}
	return false
}

// finding says a holding with the verdict is reported: every verdict but
// healthy and justified.
func (v Verdict) finding() bool {
	return v != VerdictHealthy && v != VerdictJustified
}

// onDeadGrounds says the verdict rests on a heartbeat having stopped, which
// the mass-death guard distrusts when much of the fleet looks dead at once.
func (v Verdict) onDeadGrounds() bool {
	return v == VerdictOwnerDead || v == VerdictTaskLost
}

// Action is what the pass does with a holding or a task.
type Action string

const (
	ActionKeep    Action = "keep"
	ActionRelease Action = "release"
	// ActionSuspect remembers the finding; a later pass confirms it.
	ActionSuspect Action = "suspect"
	// ActionUpdate changes a task's state or claim.
	ActionUpdate Action = "update"
)

// Result of acting on a holding or a task.
type Result string

const (
	ResultReleased     Result = "released"
	ResultAlreadyGone  Result = "already-gone"
	ResultOwnerChanged Result = "owner-changed"
	ResultWouldRelease Result = "would-release"
	ResultSuspected    Result = "suspected"
	ResultKept         Result = "kept"
	// ResultDeferred is work a guard or a per-pass limit held back.
	ResultDeferred Result = "deferred"
	// ResultFailed is work the pass could not finish (a Redis or database error).
	ResultFailed Result = "failed"

	ResultUpdated     Result = "updated"
	ResultWouldUpdate Result = "would-update"
	// ResultSkipped is a conditional write that lost a race: nothing changed.
	ResultSkipped Result = "skipped"
)

package judge

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
	// VerdictUnprotected is a running task of a live claim whose task lock
	// a full scan did not find: reported, never written.
	VerdictUnprotected Verdict = "unprotected"
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

// Finding says a holding with the verdict is reported: every verdict but
// healthy and justified.
func (v Verdict) Finding() bool {
	return v != VerdictHealthy && v != VerdictJustified
}

// action is what a verdict calls for before confirmation: a verdict that
// needs confirmation is a suspect until confirmed.
func (v Verdict) action() Action {
	switch v {
	case VerdictHealthy, VerdictPending, VerdictJustified:
		return ActionKeep
	case VerdictTaskFinished, VerdictOwnerDead, VerdictOwnerGone, VerdictTaskLost:
		return ActionRelease
	case VerdictLost, VerdictOrphanedClaim, VerdictStuckClaim:
		return ActionUpdate
	case VerdictUnprotected:
		return ActionReport
	}
	return ActionSuspect
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
	// ActionReport only reports a task: nothing is written for it.
	ActionReport Action = "report"
)

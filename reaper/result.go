package reaper

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
	// ResultReported is a task only reported (verdict unprotected).
	ResultReported Result = "reported"
)

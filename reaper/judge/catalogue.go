package judge

import (
	"fmt"
	"slices"
	"strconv"
)

// The catalogue: every verdict, action and guard name the judge gives, in
// one place that the metrics, the report and the command line range over.

// Verdict names the rule of verdicts.md that decided a holding or a task.
// It is one byte, printed as its name: a pass holds a judgement of every
// stale holding, a few hundred thousand in an incident.
type Verdict uint8

// Holding verdicts.
const (
	// noVerdict is the verdict of a task that deserves none, and of a
	// resource holding that inherits its task lock's.
	noVerdict Verdict = iota
	VerdictHealthy
	VerdictPending
	VerdictTaskFinished
	VerdictOwnerDead
	VerdictOwnerGone
	VerdictTaskMissing
	VerdictTaskLost
	VerdictUnclaimed
	VerdictNoTask
	// VerdictJustified is a resource holding of a task lock kept this pass.
	VerdictJustified
	// Task verdicts.
	VerdictLost
	VerdictOrphanedClaim
	VerdictStuckClaim
	// VerdictUnprotected is a running task of a live claim whose task lock
	// a full scan did not find: reported, never written.
	VerdictUnprotected
	// VerdictStuckCanceling is a canceling task claimed by a live row that
	// never started it and holds no task lock: no worker will ever finish
	// its cancel.
	VerdictStuckCanceling
	// VerdictStranded is a waiting task claimed by a live worker whose
	// versions are too old for it (stranded.go).
	VerdictStranded
	// VerdictClaimedNotStarted is a waiting task whose live worker claimed
	// it and holds its task lock but never started it: its process may
	// hang before set_running. Reported, never written
	// (claimed_not_started.go).
	VerdictClaimedNotStarted
)

var verdictNames = [...]string{
	VerdictHealthy: "healthy", VerdictPending: "pending", VerdictTaskFinished: "task-finished",
	VerdictOwnerDead: "owner-dead", VerdictOwnerGone: "owner-gone", VerdictTaskMissing: "task-missing",
	VerdictTaskLost: "task-lost", VerdictUnclaimed: "unclaimed", VerdictNoTask: "no-task",
	VerdictJustified: "justified", VerdictLost: "lost", VerdictOrphanedClaim: "orphaned-claim",
	VerdictStuckClaim: "stuck-claim", VerdictUnprotected: "unprotected",
	VerdictStuckCanceling:    "stuck-canceling",
	VerdictStranded:          "stranded",
	VerdictClaimedNotStarted: "claimed-not-started",
}

// String is the verdict's name as verdicts.md writes it ("" for none).
func (v Verdict) String() string { return nameOf(verdictNames[:], uint8(v)) }

// MarshalText writes the verdict's name.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads a verdict's name.
func (v *Verdict) UnmarshalText(b []byte) error {
	return unmarshalName(verdictNames[:], b, "verdict", v)
}

// nameOf is the i-th name, "" for none, a number for an unknown one.
func nameOf(names []string, i uint8) string {
	if int(i) < len(names) {
		return names[i]
	}
	return "#" + strconv.Itoa(int(i))
}

// unmarshalName sets *v to the value that names gives the name text, the
// one a MarshalText wrote.
func unmarshalName[T ~uint8 | ~int](names []string, text []byte, what string, v *T) error {
	i := slices.Index(names, string(text))
	if i < 0 {
		return fmt.Errorf("unknown %s %q", what, text)
	}
	*v = T(i)
	return nil
}

// Verdicts is every verdict, most severe first: a dead owner's running
// task and a lost task block work now; a finished task's leftover lock only
// waits for its release. Reports sort by it.
var Verdicts = []Verdict{
	VerdictTaskLost, VerdictLost, VerdictOwnerDead, VerdictOwnerGone, VerdictTaskMissing,
	VerdictUnclaimed, VerdictNoTask, VerdictUnprotected, VerdictOrphanedClaim, VerdictStuckClaim,
	VerdictStuckCanceling,
	VerdictStranded,
	VerdictClaimedNotStarted,
	VerdictTaskFinished, VerdictPending, VerdictJustified, VerdictHealthy,
}

// HoldingVerdicts are the verdicts a holding can get, most severe first.
var HoldingVerdicts = []Verdict{
	VerdictTaskLost, VerdictOwnerDead, VerdictOwnerGone, VerdictTaskMissing, VerdictUnclaimed,
	VerdictNoTask, VerdictTaskFinished, VerdictPending, VerdictJustified, VerdictHealthy,
}

// TaskVerdicts are the verdicts an incomplete task can get, most severe first.
var TaskVerdicts = []Verdict{VerdictLost, VerdictUnprotected, VerdictOrphanedClaim, VerdictStuckClaim,
	VerdictStuckCanceling,
	VerdictStranded,
	VerdictClaimedNotStarted,
}

// Writes says a finding with this verdict is acted on, now or once
// confirmed: a release or a task update, not a report only.
func (v Verdict) Writes() bool {
	a := v.action()
	return a == ActionRelease || a == ActionUpdate || a == ActionSuspect
}

// needsConfirmation lists the verdicts whose finding is only released on a
// later pass that sees it again: a live owner may be between two legitimate
// protocol steps.
func (v Verdict) needsConfirmation() bool {
	return v == VerdictTaskMissing || v == VerdictUnclaimed || v == VerdictNoTask || v == VerdictStuckClaim ||
		v == VerdictStuckCanceling || v == VerdictStranded
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
	case VerdictStuckCanceling, VerdictStranded:
		// A requeue once confirmed, when a compatible worker is online;
		// a report otherwise (TaskJudgement.Action).
		return ActionUpdate
	case VerdictUnprotected, VerdictClaimedNotStarted:
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
type Action uint8

const (
	ActionKeep Action = iota + 1
	ActionRelease
	// ActionSuspect remembers the finding; a later pass confirms it.
	ActionSuspect
	// ActionUpdate changes a task's state or claim.
	ActionUpdate
	// ActionReport only reports a task: nothing is written for it.
	ActionReport
)

var actionNames = [...]string{ActionKeep: "keep", ActionRelease: "release", ActionSuspect: "suspect", ActionUpdate: "update", ActionReport: "report"}

// String is the action's name ("" for none).
func (a Action) String() string { return nameOf(actionNames[:], uint8(a)) }

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an action's name.
func (a *Action) UnmarshalText(b []byte) error {
	return unmarshalName(actionNames[:], b, "action", a)
}

// Names of the guards that hold back a plan's work (Plan.Guards).
const (
	// GuardMassDeath holds back every release on dead grounds and every
	// task update when much of the fleet died at once (guards.go).
	GuardMassDeath = "mass-death"
	// GuardMaxReleases and GuardMaxTaskUpdates cut a pass's work to the
	// policy's limits; the rest waits for the next pass.
	GuardMaxReleases    = "max-releases"
	GuardMaxTaskUpdates = "max-task-updates"
	// GuardAliveOwner refuses a break-glass release of an owner whose
	// heartbeat is current (release_owner.go).
	GuardAliveOwner = "alive-owner"
	// GuardHeartbeatStall holds the rows that look dead while others whose
	// heartbeats stopped with them write again: a stall is ending.
	GuardHeartbeatStall = "heartbeat-stall"
	// GuardHeartbeatRecheck holds the rows that look dead when no second
	// read of the heartbeats, a period later, could settle their death.
	GuardHeartbeatRecheck = "heartbeat-recheck"
)

// PassGuards are the guards a pass can raise; GuardAliveOwner is the
// break-glass release's.
var PassGuards = []string{GuardMassDeath, GuardHeartbeatStall, GuardHeartbeatRecheck, GuardMaxReleases, GuardMaxTaskUpdates, GuardUncommittedTaskWrite}

package reaper

import (
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
)

// The judge's types and constants, under the names the rest of the program
// has always used: the rules live in package judge.

type (
	Kind              = judge.Kind
	Holding           = judge.Holding
	Ignored           = judge.Ignored
	Task              = judge.Task
	SuspectKey        = judge.SuspectKey
	Suspect           = judge.Suspect
	Snapshot          = judge.Snapshot
	Verdict           = judge.Verdict
	Action            = judge.Action
	Policy            = judge.Policy
	Evidence          = judge.Evidence
	Judgement         = judge.Judgement
	TaskJudgement     = judge.TaskJudgement
	Guard             = judge.Guard
	Plan              = judge.Plan
	OwnerReport       = judge.OwnerReport
	Duration          = judge.Duration
	UnguardedResource = judge.UnguardedResource
	ResourceHolder    = judge.ResourceHolder
)

const (
	KindTask      = judge.KindTask
	KindExclusive = judge.KindExclusive
	KindShared    = judge.KindShared

	StateWaiting   = judge.StateWaiting
	StateRunning   = judge.StateRunning
	StateCanceling = judge.StateCanceling
	StateCompleted = judge.StateCompleted
	StateFailed    = judge.StateFailed
	StateCanceled  = judge.StateCanceled
	StateSkipped   = judge.StateSkipped

	VerdictHealthy       = judge.VerdictHealthy
	VerdictPending       = judge.VerdictPending
	VerdictTaskFinished  = judge.VerdictTaskFinished
	VerdictOwnerDead     = judge.VerdictOwnerDead
	VerdictOwnerGone     = judge.VerdictOwnerGone
	VerdictTaskMissing   = judge.VerdictTaskMissing
	VerdictTaskLost      = judge.VerdictTaskLost
	VerdictUnclaimed     = judge.VerdictUnclaimed
	VerdictNoTask        = judge.VerdictNoTask
	VerdictJustified     = judge.VerdictJustified
	VerdictLost          = judge.VerdictLost
	VerdictOrphanedClaim = judge.VerdictOrphanedClaim
	VerdictStuckClaim    = judge.VerdictStuckClaim
	VerdictUnprotected   = judge.VerdictUnprotected

	ActionKeep    = judge.ActionKeep
	ActionRelease = judge.ActionRelease
	ActionSuspect = judge.ActionSuspect
	ActionUpdate  = judge.ActionUpdate
	ActionReport  = judge.ActionReport

	DefaultHeartbeatGrace  = judge.DefaultHeartbeatGrace
	DefaultFinishedGrace   = judge.DefaultFinishedGrace
	DefaultConfirmAfter    = judge.DefaultConfirmAfter
	DefaultMaxDeadFraction = judge.DefaultMaxDeadFraction
	DefaultMinWorkers      = judge.DefaultMinWorkers
	DefaultMaxReleases     = judge.DefaultMaxReleases
	DefaultMaxTaskUpdates  = judge.DefaultMaxTaskUpdates
	DefaultLostRunning     = judge.DefaultLostRunning
	DefaultOrphanedWaiting = judge.DefaultOrphanedWaiting
	WaitingRequeue         = judge.WaitingRequeue
	WaitingCancel          = judge.WaitingCancel
)

// Final reports whether a task state is terminal (see judge.Final).
func Final(state string) bool { return judge.Final(state) }

// DefaultPolicy returns the policy with every default of verdicts.md.
func DefaultPolicy() Policy { return judge.DefaultPolicy() }

// judgeFor judges a snapshot the way the pass options ask: a normal pass, or
// the break-glass release of one owner.
func judgeFor(snap Snapshot, p Policy, opts PassOptions) Plan {
	if opts.ReleaseOwner != "" {
		return judge.OwnerRelease(snap, p, opts.ReleaseOwner)
	}
	return judge.Findings(snap, p)
}

// OwnerRelease is the plan of a break-glass release of owner on this
// inspection: what `lock-reaper release --owner` would do.
func (in *Inspection) OwnerRelease(owner string) Plan {
	return judge.OwnerRelease(in.Snapshot, in.Policy, owner)
}

func immediateTaskID(owner string) (string, bool) { return judge.ImmediateTaskID(owner) }

func stuckClaimKey(taskID, appLockID string) SuspectKey {
	return judge.StuckClaimKey(taskID, appLockID)
}

func guarded(jd Judgement) bool { return judge.Guarded(jd) }

func durationPtr(d time.Duration) *Duration { v := Duration(d); return &v }

// immediateOwnerPrefix starts the owner name of an immediate task's lock.
const immediateOwnerPrefix = judge.ImmediateOwnerPrefix

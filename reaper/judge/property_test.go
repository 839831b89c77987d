package judge

// Property tests of the judge (All, Findings) over random fleets. Every property is stated from
// verdicts.md and pulp-protocol.md, not from the rules' code: the helpers below
// recompute liveness, health and the guards on their own.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The one mistake the reaper must never make.
func TestJudgePropertyHealthyNeverReleased(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		require.Len(t, plan.Holdings, len(c.snap.Holdings))
		healthy := 0
		for _, h := range c.snap.Holdings {
			jd := ptJudgement(t, plan, h)
			if ptHealthy(c, h) {
				healthy++
				require.NotEqual(t, ActionRelease, jd.Action, "healthy holding %+v released as %s", h, jd.Verdict)
				require.Contains(t, []Verdict{VerdictHealthy, VerdictJustified}, jd.Verdict, "healthy holding %+v", h)
			}
		}
		// A task whose worker is online and holds its lock is not lost.
		for _, tj := range plan.Tasks {
			if tj.Action != ActionUpdate {
				continue
			}
			for _, h := range c.snap.Holdings {
				if h.Kind == KindTask && h.TaskID() == tj.ID && !strings.HasPrefix(h.Owner, "immediate-") {
					require.False(t, ptHealthyTask(c, h.Owner, h.TaskID()), "healthy task %s updated as %s", tj.ID, tj.Verdict)
				}
			}
		}
		released := 0
		for _, jd := range plan.Holdings {
			if jd.Action == ActionRelease {
				released++
			}
		}
		t.Logf("%d holdings, %d healthy, %d released, %d tasks updated or suspected", len(c.snap.Holdings), healthy, released, len(plan.Tasks))
	})
}

// A resource holding of a live or late owner whose running or canceling task
// row reserves it is never released, whether or not its task lock is there:
// the task runs, and another worker would take the resource beside it.
func TestJudgePropertyRunningTaskRowKeepsItsResources(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		for _, plan := range []Plan{All(c.snap, c.p), Findings(c.snap, c.p)} {
			for _, h := range c.snap.Holdings {
				id := ptRunningReserver(c, h)
				if id == "" {
					continue
				}
				for _, jd := range plan.Holdings {
					if jd.Key == h.Key && jd.Owner == h.Owner {
						require.NotEqual(t, ActionRelease, jd.Action, "%s of %s, reserved by running task %s, released as %s", h.Key, h.Owner, id, jd.Verdict)
						require.Equal(t, VerdictJustified, jd.Verdict, "%s of %s", h.Key, h.Owner)
					}
				}
			}
		}
	})
}

// ptRunningReserver names a running or canceling task reserving resource
// holding h whose claim is a live or late row named after h's owner (or,
// for immediate-<T>, T itself), as verdicts.md states it; "" for none.
func ptRunningReserver(c ptCase, h Holding) string {
	if h.Kind == KindTask {
		return ""
	}
	if live := ptLiveness(c, h.Owner); live != heartbeat.Alive && live != heartbeat.Late {
		return ""
	}
	for id, task := range c.snap.Tasks {
		if task.State != StateRunning && task.State != StateCanceling || !ptReserves(task, h) {
			continue
		}
		if h.Owner == "immediate-"+id {
			return id
		}
		if row, ok := ptRow(c, task.AppLockID); ok && row.Name == h.Owner && !ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace) {
			return id
		}
	}
	return ""
}

// Same input, same plan, whatever the order Redis returned the holdings in;
// and the snapshot is left as it was.
func TestJudgePropertyDeterministic(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		holdings := slices.Clone(c.snap.Holdings)
		suspects := map[SuspectKey]Suspect{}
		for k, s := range c.snap.Suspects {
			suspects[k] = s
		}
		first := All(c.snap, c.p)
		require.Equal(t, holdings, c.snap.Holdings, "Judge reordered the snapshot's holdings")
		require.Equal(t, suspects, c.snap.Suspects, "Judge changed the remembered suspects")

		require.Equal(t, first, All(c.snap, c.p))
		shuffled := c.snap
		shuffled.Holdings = rapid.Permutation(holdings).Draw(t, "reorder")
		require.Equal(t, first, All(shuffled, c.p))
	})
}

// Late owners are left alone: only task-finished (on the task lock, or
// inherited by its resources) and task-lost may release them, and no-task,
// which verdicts.md applies to "O alive or late" once confirmed.
func TestJudgePropertyLateOwnersLeftAlone(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		for _, jd := range plan.Holdings {
			if jd.Action != ActionRelease || ptLiveness(c, jd.Owner) != heartbeat.Late {
				continue
			}
			require.Contains(t, []Verdict{VerdictTaskFinished, VerdictTaskLost, VerdictNoTask}, jd.Verdict, "late owner's %s released", jd.Key)
			if jd.Verdict == VerdictNoTask {
				s, ok := c.snap.Suspects[SuspectKey{Key: jd.Key, Owner: jd.Owner}]
				require.True(t, ok)
				require.Equal(t, VerdictNoTask, s.Verdict)
			}
		}
	})
}

// A finding that needs confirmation is released only after a suspect with
// the same key, owner and verdict was first seen at least confirm_after ago.
func TestJudgePropertyConfirmationBeforeRelease(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		confirmed := func(k SuspectKey, v Verdict) {
			s, ok := c.snap.Suspects[k]
			require.True(t, ok, "%s of %+v released without a suspect", v, k)
			require.Equal(t, v, s.Verdict, "%+v", k)
			require.True(t, s.FirstSeen.Before(c.snap.Now), "%+v first seen %v", k, s.FirstSeen)
			require.GreaterOrEqual(t, c.snap.Now.Sub(s.FirstSeen), c.p.ConfirmAfter, "%+v", k)
		}
		for _, jd := range plan.Holdings {
			if jd.Action == ActionSuspect {
				require.True(t, ptNeedsConfirmation(jd.Verdict), "%s suspected", jd.Verdict)
				require.Contains(t, plan.Suspects, SuspectKey{Key: jd.Key, Owner: jd.Owner})
			}
			if jd.Action != ActionRelease || !ptNeedsConfirmation(jd.Verdict) {
				continue
			}
			if jd.Kind != KindTask && jd.Evidence().Via != "" {
				// Inherited from the task lock that was confirmed.
				confirmed(SuspectKey{Key: jd.Evidence().Via, Owner: jd.Owner}, jd.Verdict)
			} else {
				confirmed(SuspectKey{Key: jd.Key, Owner: jd.Owner}, jd.Verdict)
			}
		}
		for _, tj := range plan.Tasks {
			if tj.Verdict == VerdictStuckClaim && tj.Action == ActionUpdate {
				confirmed(SuspectKey{Key: "stuck-claim:" + tj.ID, Owner: tj.AppLockID}, VerdictStuckClaim)
			}
		}
		// On a full scan, only what this pass saw is remembered.
		if c.snap.FullScan {
			for k, s := range plan.Suspects {
				require.True(t, ptNeedsConfirmation(s.Verdict), "%+v", k)
				require.False(t, s.FirstSeen.After(c.snap.Now), "%+v", k)
			}
		}
	})
}

// When the mass-death guard trips, nothing is released on dead grounds and
// no task is updated; unless forced, or with too few workers.
func TestJudgePropertyMassDeathGuard(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGenerate(t, rapid.IntRange(0, 3).Draw(t, "outage") > 0)
		plan := All(c.snap, c.p)
		trips := ptMassDeath(c)
		require.Equal(t, trips, jtHasGuard(plan, "mass-death"))
		for _, jd := range plan.Holdings {
			if !trips {
				require.NotEqual(t, "mass-death guard", jd.Deferred)
				continue
			}
			if jd.Action == ActionRelease && (jd.Verdict == VerdictOwnerDead || jd.Verdict == VerdictTaskLost) {
				require.NotEmpty(t, jd.Deferred, "%s released on dead grounds (%s) under mass death", jd.Key, jd.Verdict)
			}
		}
		for _, tj := range plan.Tasks {
			if trips && tj.Action == ActionUpdate {
				require.NotEmpty(t, tj.Deferred, "task %s updated under mass death", tj.ID)
			}
			if !trips {
				require.NotEqual(t, "mass-death guard", tj.Deferred)
			}
		}
	})
}

// Per-pass limits: at most max_releases releases and max_task_updates
// updates go ahead; only releases and updates are ever deferred.
func TestJudgePropertyLimits(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		// A release goes with its unit: a task lock and the resource
		// holdings that inherit its verdict. Units are taken in plan order
		// until the next does not fit; a first unit larger than the limit
		// goes alone.
		unitOf := func(jd Judgement) SuspectKey {
			if jd.Kind != KindTask && jd.Evidence().Via != "" {
				return SuspectKey{Key: jd.Evidence().Via, Owner: jd.Owner}
			}
			return SuspectKey{Key: jd.Key, Owner: jd.Owner}
		}
		releases, wanted, cut := 0, 0, false
		unitSize, unitReleased := map[SuspectKey]int{}, map[SuspectKey]int{}
		for _, jd := range plan.Holdings {
			if jd.Deferred != "" {
				require.Equal(t, ActionRelease, jd.Action)
			}
			if jd.Action == ActionRelease && jd.Deferred != "mass-death guard" {
				wanted++
				unitSize[unitOf(jd)]++
			}
			if jd.Action == ActionRelease && jd.Deferred == "" {
				releases++
				unitReleased[unitOf(jd)]++
			}
			cut = cut || jd.Deferred == "max_releases"
		}
		for u, n := range unitReleased {
			require.Equal(t, unitSize[u], n, "unit %v is released whole or not at all", u)
		}
		if len(unitReleased) > 1 {
			require.LessOrEqual(t, releases, c.p.MaxReleases)
		}
		if wanted <= c.p.MaxReleases {
			require.Equal(t, wanted, releases)
		}
		if c.p.MaxReleases > 0 && wanted > 0 {
			require.Positive(t, releases, "a positive limit always releases something")
		}
		require.Equal(t, cut, jtHasGuard(plan, "max-releases"))
		require.Equal(t, wanted > releases, cut)

		updates, wantedUpdates := 0, 0
		for _, tj := range plan.Tasks {
			if tj.Deferred != "" {
				require.Equal(t, ActionUpdate, tj.Action)
			}
			if tj.Action == ActionUpdate && tj.Deferred != "mass-death guard" {
				wantedUpdates++
			}
			if tj.Action == ActionUpdate && tj.Deferred == "" {
				updates++
			}
		}
		require.LessOrEqual(t, updates, c.p.MaxTaskUpdates)
		require.Equal(t, min(wantedUpdates, c.p.MaxTaskUpdates), updates)
		require.Equal(t, wantedUpdates > c.p.MaxTaskUpdates, jtHasGuard(plan, "max-task-updates"))
	})
}

// Every verdict's condition holds, recomputed from the snapshot.
func TestJudgePropertyVerdictConditions(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		plan := All(c.snap, c.p)
		taskLocked := map[string]bool{}
		for _, h := range c.snap.Holdings {
			if h.Kind == KindTask {
				taskLocked[h.TaskID()] = true
			}
		}
		for _, jd := range plan.Holdings {
			live := ptLiveness(c, jd.Owner)
			require.Equal(t, live, jd.Evidence().OwnerLiveness, "%s of %s", jd.Key, jd.Owner)
			taskID := jd.TaskID()
			if jd.Kind != KindTask {
				if !slices.Contains([]Verdict{VerdictNoTask, VerdictOwnerDead, VerdictOwnerGone}, jd.Verdict) {
					require.NotEmpty(t, jd.Evidence().Via, "%s %s: justified or inherited", jd.Key, jd.Verdict)
				}
				if jd.Evidence().Via != "" {
					id, ok := strings.CutPrefix(jd.Evidence().Via, TaskKeyPrefix)
					require.True(t, ok && IsTaskUUID(id))
					taskID = id
					require.True(t, ptReserves(c.snap.Tasks[id], jd.Holding), "%s via %s", jd.Key, jd.Evidence().Via)
				}
			}
			task, found := c.snap.Tasks[taskID]
			what := fmt.Sprintf("%s held by %s: %s", jd.Key, jd.Owner, jd.Verdict)
			switch jd.Verdict {
			case VerdictTaskFinished:
				require.True(t, found && ptFinal(task.State), what)
				require.True(t, task.FinishedAt == nil || c.snap.Now.Sub(*task.FinishedAt) > c.p.FinishedGrace, what)
			case VerdictOwnerDead:
				require.Equal(t, heartbeat.Dead, live, what)
			case VerdictOwnerGone:
				require.Equal(t, heartbeat.Gone, live, what)
			case VerdictTaskMissing:
				require.False(t, found, what)
				require.Equal(t, heartbeat.Alive, live, what)
			case VerdictTaskLost:
				require.True(t, found && !ptFinal(task.State), what)
				row, ok := ptRow(c, task.AppLockID)
				require.True(t, ok && row.Name == jd.Owner && ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				require.Equal(t, heartbeat.Alive, live, what)
			case VerdictUnclaimed:
				require.True(t, found && !ptFinal(task.State), what)
				require.Equal(t, heartbeat.Alive, live, what)
				row, ok := ptRow(c, task.AppLockID)
				require.True(t, !ok || row.Name != jd.Owner, what)
			case VerdictNoTask:
				require.Contains(t, []heartbeat.Liveness{heartbeat.Alive, heartbeat.Late}, live, what)
			case VerdictHealthy:
				require.True(t, ptHealthyTask(c, jd.Owner, taskID), what)
			case VerdictPending:
				require.True(t, live == heartbeat.Late || found && ptFinal(task.State) || found && func() bool {
					row, ok := ptRow(c, task.AppLockID)
					return ok && row.Name == jd.Owner && !ptOnline(row, c.snap.Now) && !ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace)
				}(), what)
			case VerdictJustified:
				require.Equal(t, ActionKeep, jd.Action, what)
			default:
				require.Failf(t, "unexpected verdict", what)
			}
		}
		for _, tj := range plan.Tasks {
			task := c.snap.Tasks[tj.ID]
			row, claimed := ptRow(c, task.AppLockID)
			what := fmt.Sprintf("task %s %s: %s", tj.ID, task.State, tj.Verdict)
			require.Equal(t, task.State, tj.StateBefore, what)
			require.Equal(t, task.AppLockID, tj.AppLockID, what)
			switch tj.Verdict {
			case VerdictLost:
				require.Contains(t, []string{StateRunning, StateCanceling}, task.State, what)
				require.True(t, task.AppLockID == "" || !claimed || ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				want := StateCanceled
				if task.State == StateRunning {
					want = c.p.LostRunning
				}
				require.Equal(t, want, tj.StateAfter, what)
			case VerdictOrphanedClaim:
				require.Equal(t, StateWaiting, task.State, what)
				require.NotEmpty(t, task.AppLockID, what)
				require.True(t, !claimed || ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				if c.p.OrphanedWaiting == WaitingRequeue {
					require.True(t, tj.ClearClaim, what)
					require.Equal(t, StateWaiting, tj.StateAfter, what)
				} else {
					require.False(t, tj.ClearClaim, what)
					require.Equal(t, StateCanceled, tj.StateAfter, what)
				}
				if taskLocked[tj.ID] {
					require.Equal(t, TaskKeyPrefix+tj.ID, tj.AfterRelease, what)
				}
			case VerdictStuckClaim:
				require.Equal(t, StateWaiting, task.State, what)
				require.True(t, c.snap.FullScan, what)
				require.True(t, claimed && ptOnline(row, c.snap.Now), what)
				require.False(t, taskLocked[tj.ID], what)
			case VerdictUnprotected:
				// Reported only: a running task of a live claim whose lock
				// a full scan did not find, or whose lock is held but a
				// resource it reserves is not (LockHeld).
				require.Equal(t, StateRunning, task.State, what)
				require.True(t, c.snap.FullScan, what)
				require.True(t, claimed && !ptRowDead(row, c.snap.Now, c.p.HeartbeatGrace), what)
				require.Equal(t, taskLocked[tj.ID], tj.LockHeld, what)
				require.Equal(t, ActionReport, tj.Action, what)
				require.Equal(t, StateRunning, tj.StateAfter, what)
			default:
				require.Failf(t, "unexpected task verdict", what)
			}
		}
	})
}

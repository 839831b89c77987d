package judge

// Tests of the stuck-canceling verdict (verdicts.md, lost task table): a
// canceling task claimed by a live row that never started it and holds no
// task lock in a full scan is canceled once confirmed; its row justifies
// no resource lock; a task its worker really cancels is never touched.

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRuleStuckCanceling is the stuck-canceling row of the lost task table.
func TestRuleStuckCanceling(t *testing.T) {
	t.Parallel()
	stuck := taskFacts{state: StateCanceling, claimed: true, claim: heartbeat.Alive, fullScan: true, neverStarted: true}
	with := func(f func(*taskFacts)) taskFacts { c := stuck; f(&c); return c }
	for _, c := range []struct {
		row  string
		f    taskFacts
		want Verdict
	}{
		{"stuck-canceling: canceling, app_lock alive, never started, no task lock in a full scan", stuck, VerdictStuckCanceling},
		{"stuck-canceling: started_at unreadable (held by the pass)", with(func(f *taskFacts) { f.neverStarted, f.startsUnread = false, true }), VerdictStuckCanceling},
		{"not stuck: started (canceled while running)", with(func(f *taskFacts) { f.neverStarted = false }), noVerdict},
		{"not stuck: its task lock is held (its worker cancels it)", with(func(f *taskFacts) { f.locks = 1 }), noVerdict},
		{"not stuck: a registry-only read", with(func(f *taskFacts) { f.fullScan = false }), noVerdict},
		{"not stuck: app_lock late", with(func(f *taskFacts) { f.claim = heartbeat.Late }), noVerdict},
		{"lost, not stuck: app_lock dead", with(func(f *taskFacts) { f.claim = heartbeat.Dead }), VerdictLost},
		{"not stuck: running", with(func(f *taskFacts) { f.state = StateRunning }), VerdictUnprotected},
	} {
		require.Equal(t, c.want, decideTask(c.f), c.row)
	}
	require.True(t, stuck.justifiesNothing())
	require.False(t, with(func(f *taskFacts) { f.neverStarted, f.startsUnread = false, true }).justifiesNothing(),
		"without started_at a canceling row still justifies its resources")
}

// TestJudgeStuckCanceling: confirmation, the hold without the grant, and
// the tasks it leaves alone.
func TestJudgeStuckCanceling(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		unread     bool          // the role may not read started_at
		started    bool          // started_at is set
		locked     bool          // its worker holds its task lock
		full       bool          // a full scan
		ago        time.Duration // remembered first sighting, 0 for none
		wantJudged bool
		wantAction Action
	}{
		{"first sighting", false, false, false, true, 0, true, ActionSuspect},
		{"seen again before confirm_after", false, false, false, true, time.Minute, true, ActionSuspect},
		{"confirmed", false, false, false, true, jtConfirmAfter, true, ActionUpdate},
		{"without the started_at grant: held", true, false, false, true, jtConfirmAfter, true, ActionReport},
		{"started: canceled while running", false, true, false, true, jtConfirmAfter, false, 0},
		{"its task lock held", false, false, true, true, jtConfirmAfter, false, 0},
		{"registry-only", false, false, false, false, jtConfirmAfter, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			w.snap.FullScan, w.snap.StartsUnread = tc.full, tc.unread
			row := w.worker("1@w", time.Second)
			id := w.task(StateCanceling, row, "R")
			task := w.snap.Tasks[id]
			task.NeverStarted = !tc.started && !tc.unread
			w.snap.Tasks[id] = task
			if tc.locked {
				w.acquire(id, "1@w")
			}
			key := StuckClaimKey(id, row)
			if tc.ago > 0 {
				w.remember(key.Key, key.Owner, VerdictStuckCanceling, tc.ago)
			}
			plan := w.judge(jtPolicy())
			tj, ok := jtTask(plan, id)
			require.Equal(t, tc.wantJudged, ok)
			if !ok {
				return
			}
			require.Equal(t, VerdictStuckCanceling, tj.Verdict)
			require.Equal(t, tc.wantAction, tj.Action)
			require.Equal(t, StateCanceling, tj.StateBefore)
			require.Equal(t, StateCanceled, tj.StateAfter)
			require.False(t, tj.ClearClaim)
			require.Equal(t, row, tj.AppLockID)
			require.Equal(t, "1@w", tj.Owner)
			if tc.unread {
				require.Equal(t, DeferredStartsUnread, tj.Deferred)
			} else {
				require.Empty(t, tj.Deferred)
			}
			require.Contains(t, plan.Suspects, key)
		})
	}
}

// TestJudgeStuckCancelingJustifiesNothing: a lock the live owner leaked on a
// resource a stuck canceling task reserves is not justified by that row;
// without the started_at grant the row still justifies it.
func TestJudgeStuckCancelingJustifiesNothing(t *testing.T) {
	t.Parallel()
	for _, unread := range []bool{false, true} {
		w := jtNewWorld()
		w.snap.StartsUnread = unread
		row := w.worker("1@w", time.Second)
		id := w.task(StateCanceling, row, "R")
		task := w.snap.Tasks[id]
		task.NeverStarted = !unread
		w.snap.Tasks[id] = task
		w.resource("R", KindExclusive, "1@w") // leaked by a finished task
		jd := jtHolding(t, w.judge(jtPolicy()), ResourceKeyPrefix+"R", "1@w")
		if unread {
			require.Equal(t, VerdictJustified, jd.Verdict)
		} else {
			require.Equal(t, VerdictNoTask, jd.Verdict)
		}
	}
}

// A canceling task its live worker really cancels holds its task lock: it
// is never updated, nor remembered to be, whatever else the fleet holds.
func TestJudgePropertyCancelingTaskLockedNeverUpdated(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		ptAddLockedClaims(t, &c, StateCanceling, 5000, noVerdict)
		ptLockedByLiveClaim(c, StateCanceling, func(tj TaskJudgement, holder string) {
			require.Failf(t, "canceling task with its lock held judged", "%s held by %s: %s, %s", tj.ID, holder, tj.Verdict, tj.Action)
		})
	})
}

package judge

// Tests of the claimed-not-started verdict (verdicts.md, lost task table): a
// waiting task claimed by a live worker that holds its task lock and never
// started it is reported once confirmed, and never written.

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRuleClaimedNotStarted is the claimed-not-started row of the lost task table.
func TestRuleClaimedNotStarted(t *testing.T) {
	t.Parallel()
	claimed := taskFacts{state: StateWaiting, claimed: true, claim: heartbeat.Alive, fullScan: true, locks: 1, claimHolds: true, neverStarted: true}
	with := func(f func(*taskFacts)) taskFacts { c := claimed; f(&c); return c }
	for _, c := range []struct {
		row  string
		f    taskFacts
		want Verdict
	}{
		{"claimed-not-started: waiting, app_lock alive, its worker holds the task lock, started_at NULL", claimed, VerdictClaimedNotStarted},
		{"claimed-not-started: a registry-only read (the lock was seen)", with(func(f *taskFacts) { f.fullScan = false }), VerdictClaimedNotStarted},
		{"not said: started_at unreadable", with(func(f *taskFacts) { f.neverStarted, f.startsUnread = false, true }), noVerdict},
		{"not said: started_at not known NULL", with(func(f *taskFacts) { f.neverStarted = false }), noVerdict},
		{"not said: another owner holds the task lock", with(func(f *taskFacts) { f.claimHolds = false }), noVerdict},
		{"not said: app_lock late", with(func(f *taskFacts) { f.claim = heartbeat.Late }), noVerdict},
		{"orphaned-claim: app_lock dead", with(func(f *taskFacts) { f.claim = heartbeat.Dead }), VerdictOrphanedClaim},
		{"stuck-claim: no task lock in a full scan", with(func(f *taskFacts) { f.locks, f.claimHolds = 0, false }), VerdictStuckClaim},
		{"not said: running", with(func(f *taskFacts) { f.state = StateRunning }), noVerdict},
	} {
		require.Equal(t, c.want, decideTask(c.f), c.row)
	}
}

// TestJudgeClaimedNotStarted: remembered on first sighting without a
// finding, reported once confirmed, never written.
func TestJudgeClaimedNotStarted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		unread     bool          // the role may not read started_at
		started    bool          // started_at is set
		locked     bool          // its worker holds its task lock
		ago        time.Duration // remembered first sighting, 0 for none
		wantJudged bool
	}{
		{"first sighting", false, false, true, 0, false},
		{"seen again before confirm_after", false, false, true, time.Minute, false},
		{"confirmed", false, false, true, jtConfirmAfter, true},
		{"long confirmed", false, false, true, 14 * time.Minute, true},
		{"without the started_at grant", true, false, true, jtConfirmAfter, false},
		{"started_at set", false, true, true, jtConfirmAfter, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			w.snap.StartsUnread = tc.unread
			row := w.worker("1@w", time.Second)
			id := w.task(StateWaiting, row, "R")
			task := w.snap.Tasks[id]
			task.NeverStarted = !tc.started && !tc.unread
			w.snap.Tasks[id] = task
			w.acquire(id, "1@w")
			key := StuckClaimKey(id, row)
			if tc.ago > 0 {
				w.remember(key.Key, key.Owner, VerdictClaimedNotStarted, tc.ago)
			}
			plan := w.judge(jtPolicy())
			tj, ok := jtTask(plan, id)
			require.Equal(t, tc.wantJudged, ok)
			if !tc.unread && !tc.started {
				require.Contains(t, plan.Suspects, key, "the first sighting is remembered")
			}
			for _, h := range plan.Holdings {
				require.NotEqual(t, ActionRelease, h.Action, "%s: its lock is kept", h.Key)
			}
			if !ok {
				return
			}
			require.Equal(t, VerdictClaimedNotStarted, tj.Verdict)
			require.Equal(t, ActionReport, tj.Action)
			require.False(t, tj.Verdict.Writes())
			require.Equal(t, StateWaiting, tj.StateBefore)
			require.Equal(t, StateWaiting, tj.StateAfter)
			require.False(t, tj.ClearClaim)
			require.True(t, tj.LockHeld)
			require.Equal(t, "1@w", tj.Owner)
			require.Equal(t, tc.ago, tj.NotStartedFor)
			require.NotNil(t, tj.FirstSeen)
		})
	}
}

// A waiting task whose claim's live worker holds its task lock is never
// updated, whatever else the fleet holds: requeueing it would let two
// workers run it.
func TestJudgePropertyClaimedLockedWaitingNeverUpdated(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		c := ptGen(t)
		ptAddLockedClaims(t, &c, StateWaiting, 6000, VerdictClaimedNotStarted)
		ptLockedByLiveClaim(c, StateWaiting, func(tj TaskJudgement, holder string) {
			require.Equalf(t, ActionReport, tj.Action, "%s held by %s: %s", tj.ID, holder, tj.Verdict)
			require.Equal(t, StateWaiting, tj.StateAfter)
			require.False(t, tj.ClearClaim)
		})
	})
}

package judge

// Table tests of Judge against verdicts.md: one case per row of every table
// (owner liveness, task locks, resource holdings, confirmation, lost tasks,
// guards). Judge is pure, so these need no services.
//
// Helpers in this file are prefixed with jt so that they cannot collide with
// the helpers of the integration tests that share the package.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJudgeConfirmation(t *testing.T) {
	t.Parallel()
	const owner = "1@worker-a"
	// Each case holds one unclaimed task lock (verdict "unclaimed") of an
	// alive owner, with what earlier passes remembered.
	type remembered struct {
		verdict Verdict
		ago     time.Duration
		owner   string
	}
	cases := []struct {
		name          string
		remembered    *remembered
		confirmAfter  time.Duration
		wantAction    Action
		wantFirstSeen time.Time
	}{
		{"first sighting", nil, jtConfirmAfter, ActionSuspect, jtNow},
		{"seen again before confirm_after", &remembered{VerdictUnclaimed, jtConfirmAfter - time.Nanosecond, owner}, jtConfirmAfter, ActionSuspect, jtNow.Add(-jtConfirmAfter + time.Nanosecond)},
		{"seen again exactly confirm_after later", &remembered{VerdictUnclaimed, jtConfirmAfter, owner}, jtConfirmAfter, ActionRelease, jtNow.Add(-jtConfirmAfter)},
		{"seen again long after", &remembered{VerdictUnclaimed, time.Hour, owner}, jtConfirmAfter, ActionRelease, jtNow.Add(-time.Hour)},
		{"verdict changed restarts", &remembered{VerdictTaskMissing, time.Hour, owner}, jtConfirmAfter, ActionSuspect, jtNow},
		{"another owner's suspect does not count", &remembered{VerdictUnclaimed, time.Hour, "2@worker-b"}, jtConfirmAfter, ActionSuspect, jtNow},
		{"first seen in the future restarts", &remembered{VerdictUnclaimed, -time.Minute, owner}, jtConfirmAfter, ActionSuspect, jtNow},
		{"confirm_after 0: first sighting is still a suspect", nil, 0, ActionSuspect, jtNow},
		{"confirm_after 0: any later pass confirms", &remembered{VerdictUnclaimed, time.Nanosecond, owner}, 0, ActionRelease, jtNow.Add(-time.Nanosecond)},
		{"confirm_after 0: same instant does not confirm", &remembered{VerdictUnclaimed, 0, owner}, 0, ActionSuspect, jtNow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			w.worker(owner, time.Second)
			id := w.task(StateWaiting, "")
			h := w.taskLock(id, owner)
			if r := tc.remembered; r != nil {
				w.remember(h.Key, r.owner, r.verdict, r.ago)
			}
			p := jtPolicy()
			p.ConfirmAfter = tc.confirmAfter
			plan := w.judge(p)
			jd := jtHolding(t, plan, h.Key, owner)
			require.Equal(t, VerdictUnclaimed, jd.Verdict)
			require.Equal(t, tc.wantAction, jd.Action)
			require.NotNil(t, jd.FirstSeen)
			require.Equal(t, tc.wantFirstSeen, *jd.FirstSeen)
			// The finding is remembered (a released one too: the actor
			// forgets it once the release succeeded).
			require.Equal(t, Suspect{Verdict: VerdictUnclaimed, FirstSeen: tc.wantFirstSeen}, plan.Suspects[SuspectKey{Key: h.Key, Owner: owner}])
		})
	}
}

func TestJudgeConfirmationOfEveryVerdictClass(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.worker("1@w", time.Second)
	missing := w.taskLock(jtID(900), "1@w")
	unclaimed := w.taskLock(w.task(StateWaiting, ""), "1@w")
	noTask := w.resource("R", KindExclusive, "1@w")
	for _, h := range []Holding{missing, unclaimed, noTask} {
		v := map[string]Verdict{missing.Key: VerdictTaskMissing, unclaimed.Key: VerdictUnclaimed, noTask.Key: VerdictNoTask}[h.Key]
		w.remember(h.Key, h.Owner, v, 5*time.Minute)
	}
	plan := w.judge(jtPolicy())
	for _, h := range []Holding{missing, unclaimed, noTask} {
		jd := jtHolding(t, plan, h.Key, h.Owner)
		require.Equal(t, ActionRelease, jd.Action, "%s %s", h.Key, jd.Verdict)
		require.Equal(t, jtNow.Add(-5*time.Minute), *jd.FirstSeen)
	}
}

// Verdicts that do not need confirmation ignore remembered suspects.
func TestJudgeConfirmationNotNeeded(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.worker("1@w", time.Hour)
	h := w.resource("R", KindExclusive, "1@w")
	w.remember(h.Key, h.Owner, VerdictNoTask, 10*time.Second)
	plan := w.judge(jtPolicy())
	jd := jtHolding(t, plan, h.Key, h.Owner)
	require.Equal(t, VerdictOwnerDead, jd.Verdict)
	require.Equal(t, ActionRelease, jd.Action)
	require.Nil(t, jd.FirstSeen)
	require.NotContains(t, plan.Suspects, SuspectKey{Key: h.Key, Owner: h.Owner})
}

func TestJudgeSuspectsNotSeenAgain(t *testing.T) {
	t.Parallel()
	gone := SuspectKey{Key: ResourceKeyPrefix + "vanished", Owner: "1@w"}
	stuck := SuspectKey{Key: "stuck-claim:" + jtID(77), Owner: jtID(78)}
	build := func(full bool) Plan {
		w := jtNewWorld()
		w.snap.FullScan = full
		w.worker("1@w", time.Second)
		w.remember(gone.Key, gone.Owner, VerdictNoTask, time.Minute)
		w.remember(stuck.Key, stuck.Owner, VerdictStuckClaim, time.Minute)
		return w.judge(jtPolicy())
	}
	t.Run("full scan forgets them", func(t *testing.T) {
		t.Parallel()
		plan := build(true)
		require.Empty(t, plan.Suspects)
	})
	t.Run("registry-only snapshot carries them", func(t *testing.T) {
		t.Parallel()
		plan := build(false)
		require.Equal(t, map[SuspectKey]Suspect{
			gone:  {Verdict: VerdictNoTask, FirstSeen: jtNow.Add(-time.Minute)},
			stuck: {Verdict: VerdictStuckClaim, FirstSeen: jtNow.Add(-time.Minute)},
		}, plan.Suspects)
	})
}

// A suspect whose holding is seen again, but now with a verdict that needs no
// confirmation (here: healthy, once the worker claimed the task), is no longer
// a suspect: "verdict changed → restarts" and "a suspect not seen again is
// forgotten". judge.go forgets it on a full scan, but a registry-only snapshot
// carries it forward unchanged, because carryUnobservedSuspects only checks
// plan.Suspects, not whether the holding was observed. A later pass that sees
// the verdict flip back (e.g. the API takes app_lock while cancelling the
// waiting task) then releases at once, on the stale first sighting, instead of
// after a fresh confirm_after.
func TestJudgeRegistryOnlyForgetsSuspectSeenWithOtherVerdict(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.snap.FullScan = false
	row := w.worker("1@w", time.Second)
	id := w.task(StateWaiting, row)
	h := w.taskLock(id, "1@w") // healthy now: claimed by 1@w's online row
	w.remember(h.Key, h.Owner, VerdictUnclaimed, time.Minute)
	plan := w.judge(jtPolicy())
	require.Equal(t, VerdictHealthy, jtHolding(t, plan, h.Key, h.Owner).Verdict)
	require.NotContains(t, plan.Suspects, SuspectKey{Key: h.Key, Owner: h.Owner})
}

// The consequence of the bug above over three passes.
func TestJudgeRegistryOnlyHealthyPassRestartsConfirmation(t *testing.T) {
	t.Parallel()
	const owner = "1@w"
	w := jtNewWorld()
	row := w.worker(owner, time.Second)
	api := w.row("7@api", "api", jtAPITTL, time.Second)
	id := w.task(StateWaiting, "")
	h := w.taskLock(id, owner)

	// Pass 1, full scan, t0-150s: acquired, not yet claimed.
	w.snap.Now = jtNow.Add(-150 * time.Second)
	p1 := w.judge(jtPolicy())
	require.Equal(t, ActionSuspect, jtHolding(t, p1, h.Key, owner).Action)

	// Pass 2, registry-only, t0-90s: claimed, healthy.
	w.snap.Now = jtNow.Add(-90 * time.Second)
	w.snap.FullScan = false
	w.snap.Suspects = p1.Suspects
	tk := w.snap.Tasks[id]
	tk.AppLockID = row
	w.snap.Tasks[id] = tk
	p2 := w.judge(jtPolicy())
	require.Equal(t, VerdictHealthy, jtHolding(t, p2, h.Key, owner).Verdict)

	// Pass 3, t0: the API is cancelling the task (app_lock = API).
	w.snap.Now = jtNow
	w.snap.FullScan = true
	w.snap.Suspects = p2.Suspects
	tk.State, tk.AppLockID = StateCanceling, api
	w.snap.Tasks[id] = tk
	p3 := w.judge(jtPolicy())
	jd := jtHolding(t, p3, h.Key, owner)
	require.Equal(t, VerdictUnclaimed, jd.Verdict)
	require.Equal(t, ActionSuspect, jd.Action, "first unclaimed sighting after a healthy one")
}

func TestJudgeSuspectsNotMutated(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.worker("1@w", time.Second)
	h := w.resource("R", KindExclusive, "1@w")
	w.remember(h.Key, h.Owner, VerdictTaskMissing, time.Hour)
	before := map[SuspectKey]Suspect{}
	for k, v := range w.snap.Suspects {
		before[k] = v
	}
	plan := w.judge(jtPolicy())
	require.Equal(t, before, w.snap.Suspects)
	require.Equal(t, Suspect{Verdict: VerdictNoTask, FirstSeen: jtNow}, plan.Suspects[SuspectKey{Key: h.Key, Owner: h.Owner}])
}

// ---------------------------------------------------------------------------
// Lost tasks

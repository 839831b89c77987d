package judge

// Table tests of Judge against verdicts.md: one case per row of every table
// (owner liveness, task locks, resource holdings, confirmation, lost tasks,
// guards). Judge is pure, so these need no services.
//
// Helpers in this file are prefixed with jt so that they cannot collide with
// the helpers of the integration tests that share the package.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJudgeResourceHolding(t *testing.T) {
	t.Parallel()
	const (
		owner  = "1@worker-a"
		domain = "prn:core.domain:00000000-0000-4000-8000-000000000001"
		repo   = "prn:rpm.rpmrepository:0198a5c4-0000-7000-8000-0000000000aa"
	)
	type want struct {
		verdict Verdict
		action  Action
		via     bool // Evidence.Via names the task lock
	}
	cases := []struct {
		name string
		// build returns the resource holding under test.
		build func(w *jtWorld) Holding
		want  want
	}{
		{
			name: "justified exclusive",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.acquire(w.task(StateRunning, row, repo, "shared:"+domain), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified shared",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.acquire(w.task(StateRunning, row, repo, "shared:"+domain), owner)
				return Holding{Key: ResourceKeyPrefix + domain, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified shared, several members of one set",
			build: func(w *jtWorld) Holding {
				a := w.worker(owner, time.Second)
				b := w.worker("2@worker-b", time.Second)
				w.acquire(w.task(StateRunning, a, "shared:"+domain), owner)
				w.acquire(w.task(StateRunning, b, "shared:"+domain), "2@worker-b")
				return Holding{Key: ResourceKeyPrefix + domain, Owner: "2@worker-b"}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "kind mismatch: task reserves shared:R, holding is exclusive R",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.taskLock(w.task(StateRunning, row, "shared:"+repo), owner)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "kind mismatch: task reserves R, holding is a shared member of R",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				id := w.task(StateRunning, row, repo)
				w.taskLock(id, owner)
				return w.resource(repo, KindShared, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "not reserved by the task",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.acquire(w.task(StateRunning, row, "shared:"+domain), owner)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "a healthy task lock of another owner does not justify",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				b := w.worker("2@worker-b", time.Second)
				w.acquire(w.task(StateRunning, b, repo), "2@worker-b")
				// A stray exclusive R of owner next to b's (impossible in
				// Redis for one key, but the judge must not pair them).
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "justified by a suspect task lock not yet confirmed (unclaimed)",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				w.acquire(w.task(StateWaiting, "", repo, "shared:"+domain), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a pending task lock (owner late)",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, 45*time.Second)
				w.acquire(w.task(StateRunning, row, repo), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a pending task lock (final within finished_grace)",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				w.acquire(w.finished(StateCompleted, jtDur(5*time.Second), repo), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a healthy immediate-<T> task lock",
			build: func(w *jtWorld) Holding {
				id := w.task(StateRunning, "", repo)
				w.acquire(id, "immediate-"+id)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: "immediate-" + id}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified beats a released task lock of the same owner reserving it too",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.acquire(w.finished(StateCompleted, jtDur(time.Hour), "shared:"+domain), owner)
				w.taskLock(w.task(StateRunning, row, "shared:"+domain), owner)
				return Holding{Key: ResourceKeyPrefix + domain, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a running task row, its task lock gone (exclusive)",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.task(StateRunning, row, repo, "shared:"+domain)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a running task row, its task lock gone (shared)",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.task(StateRunning, row, repo, "shared:"+domain)
				return w.resource(domain, KindShared, owner)
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a running task row whose task lock another owner holds",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.worker("2@worker-b", time.Second)
				w.taskLock(w.task(StateRunning, row, repo), "2@worker-b")
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a canceling task row of a late owner, its task lock gone",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, 50*time.Second)
				w.task(StateCanceling, row, repo)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "justified by a running task row of an immediate-<T> owner, its task lock gone",
			build: func(w *jtWorld) Holding {
				id := w.task(StateRunning, "", "shared:"+domain)
				return w.resource(domain, KindShared, "immediate-"+id)
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "a running task row beats a released task lock reserving the shared resource too",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.acquire(w.finished(StateCompleted, jtDur(time.Hour), "shared:"+domain), owner)
				w.task(StateRunning, row, "shared:"+domain)
				return Holding{Key: ResourceKeyPrefix + domain, Owner: owner}
			},
			want: want{VerdictJustified, ActionKeep, true},
		},
		{
			name: "a running task row of another owner's claim does not justify",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				b := w.worker("2@worker-b", time.Second)
				w.task(StateRunning, b, repo)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "a waiting task row claimed by the owner does not justify",
			build: func(w *jtWorld) Holding {
				row := w.worker(owner, time.Second)
				w.task(StateWaiting, row, repo)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "a running task row claimed by a dead row of the owner's name does not justify",
			build: func(w *jtWorld) Holding {
				dead := w.worker(owner, time.Hour)
				w.worker(owner, time.Second)
				w.task(StateRunning, dead, repo)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "inherited task-finished",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				w.acquire(w.finished(StateCompleted, jtDur(time.Hour), repo, "shared:"+domain), owner)
				return Holding{Key: ResourceKeyPrefix + domain, Owner: owner}
			},
			want: want{VerdictTaskFinished, ActionRelease, true},
		},
		{
			name: "inherited task-finished with owner late",
			build: func(w *jtWorld) Holding {
				w.worker(owner, 50*time.Second)
				w.acquire(w.finished(StateFailed, nil, repo), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictTaskFinished, ActionRelease, true},
		},
		{
			name: "inherited task-lost",
			build: func(w *jtWorld) Holding {
				dead := w.worker(owner, time.Hour)
				w.worker(owner, time.Second)
				w.acquire(w.task(StateRunning, dead, repo), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictTaskLost, ActionRelease, true},
		},
		{
			name: "inherited owner-dead",
			build: func(w *jtWorld) Holding {
				dead := w.worker(owner, time.Hour)
				w.acquire(w.task(StateRunning, dead, repo), owner)
				return Holding{Key: ResourceKeyPrefix + repo, Owner: owner}
			},
			want: want{VerdictOwnerDead, ActionRelease, true},
		},
		{
			name: "inherited owner-gone",
			build: func(w *jtWorld) Holding {
				w.acquire(w.task(StateRunning, "", "shared:"+domain), owner)
				return Holding{Key: ResourceKeyPrefix + domain, Owner: owner}
			},
			want: want{VerdictOwnerGone, ActionRelease, true},
		},
		{
			name: "owner-dead, no task lock",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Hour)
				return w.resource(domain, KindShared, owner)
			},
			want: want{VerdictOwnerDead, ActionRelease, false},
		},
		{
			name: "owner-gone, no task lock",
			build: func(w *jtWorld) Holding {
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictOwnerGone, ActionRelease, false},
		},
		{
			name: "owner-dead: task lock is task-missing (no record to justify)",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Hour)
				w.taskLock(jtID(900), owner)
				return w.resource(repo, KindExclusive, owner)
			},
			// The task lock is owner-dead, but no record says it reserves
			// R, so the holding is judged on its own.
			want: want{VerdictOwnerDead, ActionRelease, false},
		},
		{
			name: "no-task, owner alive",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				return w.resource(domain, KindShared, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "no-task, owner late",
			build: func(w *jtWorld) Holding {
				w.worker(owner, 50*time.Second)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
		{
			name: "no-task, owner alive, its task lock is task-missing",
			build: func(w *jtWorld) Holding {
				w.worker(owner, time.Second)
				w.taskLock(jtID(900), owner)
				return w.resource(repo, KindExclusive, owner)
			},
			want: want{VerdictNoTask, ActionSuspect, false},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			h := tc.build(w)
			plan := w.judge(jtPolicy())
			jd := jtHolding(t, plan, h.Key, h.Owner)
			require.NotEqual(t, KindTask, jd.Kind)
			require.Equal(t, tc.want.verdict, jd.Verdict)
			require.Equal(t, tc.want.action, jd.Action)
			if tc.want.via {
				require.NotEmpty(t, jd.Evidence().Via)
				id, ok := strings.CutPrefix(jd.Evidence().Via, TaskKeyPrefix)
				require.True(t, ok && IsTaskUUID(id), "Via %q is a task key", jd.Evidence().Via)
			} else {
				require.Empty(t, jd.Evidence().Via)
			}
			if tc.want.action == ActionSuspect {
				require.Equal(t, Suspect{Verdict: tc.want.verdict, FirstSeen: jtNow}, plan.Suspects[SuspectKey{Key: h.Key, Owner: h.Owner}])
			}
		})
	}
}

// The case: a live worker runs T holding task:<T>, the exclusive
// repository and the shared domain, and only task:<T> vanishes. Both
// resource holdings stay, named after T, and are never remembered as
// suspects, however long the lock stays gone.
func TestJudgeResourceKeptByRunningTaskRow(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	row := w.worker("1@w", time.Second)
	other := w.worker("2@w", time.Second)
	w.acquire(w.task(StateRunning, other, "R2"), "2@w")
	id := w.task(StateRunning, row, "R", "shared:D")
	w.resource("R", KindExclusive, "1@w")
	w.resource("D", KindShared, "1@w")
	w.remember(ResourceKeyPrefix+"R", "1@w", VerdictNoTask, time.Hour)
	plan := w.judge(jtPolicy())
	for _, key := range []string{ResourceKeyPrefix + "R", ResourceKeyPrefix + "D"} {
		jd := jtHolding(t, plan, key, "1@w")
		require.Equal(t, VerdictJustified, jd.Verdict, key)
		require.Equal(t, ActionKeep, jd.Action, key)
		require.Equal(t, TaskKeyPrefix+id, jd.Evidence().Via, key)
		require.Equal(t, StateRunning, jd.Evidence().TaskState, key)
		require.NotContains(t, plan.Suspects, SuspectKey{Key: key, Owner: "1@w"})
	}
	// The task itself is still reported: nothing guards it against others.
	tj, ok := jtTask(plan, id)
	require.True(t, ok)
	require.Equal(t, VerdictUnprotected, tj.Verdict)
}

// A resource of a confirmed (released) suspect task lock inherits its
// verdict and is released with it.
func TestJudgeResourceInheritsConfirmedSuspect(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.worker("1@w", time.Second)
	id := w.task(StateWaiting, "", "R", "shared:D")
	w.acquire(id, "1@w")
	w.remember(TaskKeyPrefix+id, "1@w", VerdictUnclaimed, 3*time.Minute)
	plan := w.judge(jtPolicy())

	tl := jtHolding(t, plan, TaskKeyPrefix+id, "1@w")
	require.Equal(t, VerdictUnclaimed, tl.Verdict)
	require.Equal(t, ActionRelease, tl.Action)
	for _, key := range []string{ResourceKeyPrefix + "R", ResourceKeyPrefix + "D"} {
		jd := jtHolding(t, plan, key, "1@w")
		require.Equal(t, VerdictUnclaimed, jd.Verdict, key)
		require.Equal(t, ActionRelease, jd.Action, key)
		require.Equal(t, TaskKeyPrefix+id, jd.Evidence().Via, key)
	}
}

// ---------------------------------------------------------------------------
// Confirmation

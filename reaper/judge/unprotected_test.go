package judge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJudgeUnprotected: a running task of a live claim whose task lock, or
// one of whose resource locks, a full scan did not find is reported;
// nothing is written for it. (What it
// reserves and who else holds each, the report adds: reaper/report.go.)
func TestJudgeUnprotected(t *testing.T) {
	t.Parallel()
	const worker = "1@worker-a"
	cases := []struct {
		name string
		// build returns the task under test, whose lock is never taken.
		build       func(w *jtWorld) string
		unprotected bool
		// lockHeld: its task lock is held, a resource lock is not.
		lockHeld bool
	}{
		{
			name: "no other holder",
			build: func(w *jtWorld) string {
				return w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:D")
			},
			unprotected: true,
		},
		{
			name: "another task took its exclusive resource",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R")
				other := w.task(StateRunning, w.worker("2@worker-b", time.Second), "R")
				w.acquire(other, "2@worker-b")
				return id
			},
			unprotected: true,
		},
		{
			name: "its own worker's holdings are not other holders",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:D")
				w.resource("R", KindExclusive, worker)
				w.resource("D", KindShared, worker)
				w.resource("D", KindShared, "3@worker-c")
				return id
			},
			unprotected: true,
		},
		{
			name: "its task lock held, its shared membership missing",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:D")
				w.taskLock(id, worker)
				w.resource("R", KindExclusive, worker)
				w.resource("D", KindShared, "3@worker-c")
				return id
			},
			unprotected: true, lockHeld: true,
		},
		{
			name: "its task lock held, its exclusive lock missing",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:D")
				w.taskLock(id, worker)
				w.resource("D", KindShared, worker)
				return id
			},
			unprotected: true, lockHeld: true,
		},
		{
			name: "its task lock and every resource lock held",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:D")
				w.acquire(id, worker)
				return id
			},
		},
		{
			name: "a resource reserved both ways is held by its exclusive lock",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:R")
				w.taskLock(id, worker)
				w.resource("R", KindExclusive, worker)
				return id
			},
		},
		{
			name: "a resource lock missing in a registry-only read",
			build: func(w *jtWorld) string {
				w.snap.FullScan = false
				id := w.task(StateRunning, w.worker(worker, time.Second), "R", "shared:D")
				w.taskLock(id, worker)
				w.resource("R", KindExclusive, worker)
				return id
			},
		},
		{
			name: "its task lock held by another owner: the task lock's own rules judge it",
			build: func(w *jtWorld) string {
				id := w.task(StateRunning, w.worker(worker, time.Second), "R")
				w.worker("2@worker-b", time.Second)
				w.taskLock(id, "2@worker-b")
				w.resource("R", KindExclusive, worker)
				return id
			},
		},
		{
			name: "a dead claim is lost, not unprotected",
			build: func(w *jtWorld) string {
				return w.task(StateRunning, w.worker(worker, time.Hour), "R")
			},
		},
		{
			name: "a registry-only read cannot tell the lock is gone",
			build: func(w *jtWorld) string {
				w.snap.FullScan = false
				return w.task(StateRunning, w.worker(worker, time.Second), "R")
			},
		},
		{
			name: "a waiting task is not running",
			build: func(w *jtWorld) string {
				w.snap.FullScan = false // a full scan would make it a stuck claim
				return w.task(StateWaiting, w.worker(worker, time.Second), "R")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			id := tc.build(w)
			plan := w.judge(jtPolicy())
			tj, ok := jtTask(plan, id)
			if !tc.unprotected {
				require.False(t, ok && tj.Verdict == VerdictUnprotected, "judged %+v", tj)
				return
			}
			require.True(t, ok)
			require.Equal(t, VerdictUnprotected, tj.Verdict)
			require.Equal(t, ActionReport, tj.Action, "reported, never written")
			require.Equal(t, StateRunning, tj.StateAfter)
			require.Equal(t, worker, tj.Owner)
			require.Equal(t, tc.lockHeld, tj.LockHeld)
			require.Empty(t, tj.Deferred)
			require.Empty(t, plan.Guards, "an unprotected task is no work for a guard")
		})
	}
}

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

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

func TestJudgeTaskLock(t *testing.T) {
	t.Parallel()
	const owner = "1@worker-a"
	cases := []struct {
		name string
		// build returns the task id whose task lock owner holds.
		build      func(w *jtWorld) string
		owner      string // default owner
		suspect    bool   // ActionSuspect expected (first sighting)
		verdict    Verdict
		action     Action
		ownerLives heartbeat.Liveness
	}{
		{
			name: "task-finished: completed long ago, owner alive",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.finished(StateCompleted, jtDur(61*time.Second))
			},
			verdict: VerdictTaskFinished, action: ActionRelease, ownerLives: heartbeat.Alive,
		},
		{
			name: "task-finished: finished_at NULL",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.finished(StateFailed, nil)
			},
			verdict: VerdictTaskFinished, action: ActionRelease, ownerLives: heartbeat.Alive,
		},
		{
			name: "task-finished: canceled, owner late (first row decides)",
			build: func(w *jtWorld) string {
				w.worker(owner, 45*time.Second)
				return w.finished(StateCanceled, jtDur(10*time.Minute))
			},
			verdict: VerdictTaskFinished, action: ActionRelease, ownerLives: heartbeat.Late,
		},
		{
			name: "task-finished: skipped, owner dead (first row decides)",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Hour)
				return w.finished(StateSkipped, jtDur(10*time.Minute))
			},
			verdict: VerdictTaskFinished, action: ActionRelease, ownerLives: heartbeat.Dead,
		},
		{
			name: "pending: finished exactly finished_grace ago",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.finished(StateCompleted, jtDur(jtFinishedGrace))
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "task-finished: finished finished_grace+1ns ago",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.finished(StateCompleted, jtDur(jtFinishedGrace+time.Nanosecond))
			},
			verdict: VerdictTaskFinished, action: ActionRelease, ownerLives: heartbeat.Alive,
		},
		{
			name: "pending: final within finished_grace",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.finished(StateCompleted, jtDur(10*time.Second))
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "pending: final within finished_grace beats owner dead",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Hour)
				return w.finished(StateFailed, jtDur(10*time.Second))
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Dead,
		},
		{
			name: "pending: owner late, task running on its row",
			build: func(w *jtWorld) string {
				row := w.worker(owner, 45*time.Second)
				return w.task(StateRunning, row)
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Late,
		},
		{
			name: "pending: owner late, task unclaimed",
			build: func(w *jtWorld) string {
				w.worker(owner, 45*time.Second)
				return w.task(StateWaiting, "")
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Late,
		},
		{
			name: "pending: owner late, task missing",
			build: func(w *jtWorld) string {
				w.worker(owner, 45*time.Second)
				return jtID(900)
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Late,
		},
		{
			name: "owner-dead: task running on the dead row",
			build: func(w *jtWorld) string {
				row := w.worker(owner, time.Hour)
				return w.task(StateRunning, row)
			},
			verdict: VerdictOwnerDead, action: ActionRelease, ownerLives: heartbeat.Dead,
		},
		{
			name: "owner-dead: task missing",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Hour)
				return jtID(900)
			},
			verdict: VerdictOwnerDead, action: ActionRelease, ownerLives: heartbeat.Dead,
		},
		{
			name: "owner-gone: no row, task waiting",
			build: func(w *jtWorld) string {
				return w.task(StateWaiting, "")
			},
			verdict: VerdictOwnerGone, action: ActionRelease, ownerLives: heartbeat.Gone,
		},
		{
			name: "owner-gone: no row, task missing",
			build: func(w *jtWorld) string {
				return jtID(900)
			},
			verdict: VerdictOwnerGone, action: ActionRelease, ownerLives: heartbeat.Gone,
		},
		{
			name: "task-missing: owner alive, no task row",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return jtID(900)
			},
			suspect: true, verdict: VerdictTaskMissing, action: ActionSuspect, ownerLives: heartbeat.Alive,
		},
		{
			name:  "healthy: immediate-<T>, T running unclaimed",
			owner: "immediate-" + jtID(1),
			build: func(w *jtWorld) string {
				return w.task(StateRunning, "")
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name:  "healthy: immediate-<T>, T waiting",
			owner: "immediate-" + jtID(1),
			build: func(w *jtWorld) string {
				return w.task(StateWaiting, "")
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "healthy: claimed by the owner's online row",
			build: func(w *jtWorld) string {
				row := w.worker(owner, time.Second)
				return w.task(StateRunning, row)
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "healthy: waiting, claimed by the owner's online row",
			build: func(w *jtWorld) string {
				row := w.worker(owner, time.Second)
				return w.task(StateWaiting, row)
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "healthy: canceling, claimed by the owner's online row at exactly ttl",
			build: func(w *jtWorld) string {
				row := w.worker(owner, jtWorkerTTL)
				return w.task(StateCanceling, row)
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name:  "healthy: immediate task claimed by the API row",
			owner: "7@api-0",
			build: func(w *jtWorld) string {
				row := w.row("7@api-0", "api", jtAPITTL, 90*time.Second)
				return w.task(StateRunning, row)
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "pending: claim row named owner is late, another row alive",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				late := w.worker(owner, 45*time.Second)
				return w.task(StateRunning, late)
			},
			verdict: VerdictPending, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
		{
			name: "task-lost: claim row named owner is dead, a successor row alive",
			build: func(w *jtWorld) string {
				dead := w.worker(owner, time.Hour)
				w.worker(owner, time.Second)
				return w.task(StateRunning, dead)
			},
			verdict: VerdictTaskLost, action: ActionRelease, ownerLives: heartbeat.Alive,
		},
		{
			name: "task-lost: waiting claimed by dead predecessor",
			build: func(w *jtWorld) string {
				dead := w.worker(owner, time.Hour)
				w.worker(owner, time.Second)
				return w.task(StateWaiting, dead)
			},
			verdict: VerdictTaskLost, action: ActionRelease, ownerLives: heartbeat.Alive,
		},
		{
			name: "unclaimed: app_lock NULL",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.task(StateWaiting, "")
			},
			suspect: true, verdict: VerdictUnclaimed, action: ActionSuspect, ownerLives: heartbeat.Alive,
		},
		{
			name: "unclaimed: app_lock names another owner",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				other := w.worker("2@worker-b", time.Second)
				return w.task(StateRunning, other)
			},
			suspect: true, verdict: VerdictUnclaimed, action: ActionSuspect, ownerLives: heartbeat.Alive,
		},
		{
			name: "unclaimed: canceling, app_lock names the API that cancels it",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				api := w.row("7@api-0", "api", jtAPITTL, time.Second)
				return w.task(StateCanceling, api)
			},
			suspect: true, verdict: VerdictUnclaimed, action: ActionSuspect, ownerLives: heartbeat.Alive,
		},
		{
			name: "unclaimed: app_lock names a row that does not exist",
			build: func(w *jtWorld) string {
				w.worker(owner, time.Second)
				return w.task(StateRunning, jtID(901))
			},
			suspect: true, verdict: VerdictUnclaimed, action: ActionSuspect, ownerLives: heartbeat.Alive,
		},
		{
			name:  "unclaimed: immediate owner of another, incomplete task",
			owner: "immediate-" + jtID(1),
			build: func(w *jtWorld) string {
				w.task(StateRunning, "") // jtID(1), the owner's task
				return w.task(StateWaiting, "")
			},
			suspect: true, verdict: VerdictUnclaimed, action: ActionSuspect, ownerLives: heartbeat.Alive,
		},
		{
			name: "unknown task state counts as incomplete",
			build: func(w *jtWorld) string {
				row := w.worker(owner, time.Second)
				return w.task("exploding", row)
			},
			verdict: VerdictHealthy, action: ActionKeep, ownerLives: heartbeat.Alive,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := jtNewWorld()
			o := owner
			if tc.owner != "" {
				o = tc.owner
			}
			id := tc.build(w)
			w.taskLock(id, o)
			plan := w.judge(jtPolicy())
			jd := jtHolding(t, plan, TaskKeyPrefix+id, o)
			require.Equal(t, tc.verdict, jd.Verdict)
			require.Equal(t, tc.action, jd.Action)
			require.Equal(t, tc.ownerLives, jd.Evidence().OwnerLiveness)
			require.Equal(t, id, jd.TaskID())
			require.Empty(t, jd.Deferred)
			if tc.suspect {
				require.NotNil(t, jd.FirstSeen)
				require.Equal(t, jtNow, *jd.FirstSeen)
				require.Equal(t, Suspect{Verdict: tc.verdict, FirstSeen: jtNow}, plan.Suspects[SuspectKey{Key: jd.Key, Owner: o}])
			} else {
				require.Nil(t, jd.FirstSeen)
				require.NotContains(t, plan.Suspects, SuspectKey{Key: jd.Key, Owner: o})
			}
		})
	}
}

func TestJudgeTaskLockEvidence(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	dead := w.worker("1@w", time.Hour)
	w.worker("1@w", 2*time.Second)
	id := w.task(StateRunning, dead)
	w.taskLock(id, "1@w")
	jd := jtHolding(t, w.judge(jtPolicy()), TaskKeyPrefix+id, "1@w")
	require.Equal(t, VerdictTaskLost, jd.Verdict)
	require.Equal(t, StateRunning, jd.Evidence().TaskState)
	require.Equal(t, "1@w", jd.Evidence().AppLock)
	require.NotNil(t, jd.Evidence().AppLockLiveness)
	require.Equal(t, heartbeat.Dead, *jd.Evidence().AppLockLiveness)
	require.NotNil(t, jd.Evidence().HeartbeatAge)
	require.Equal(t, Duration(2*time.Second), *jd.Evidence().HeartbeatAge)

	w2 := jtNewWorld()
	w2.worker("1@w", time.Second)
	fid := w2.finished(StateCompleted, jtDur(90*time.Second))
	w2.taskLock(fid, "1@w")
	jd = jtHolding(t, w2.judge(jtPolicy()), TaskKeyPrefix+fid, "1@w")
	require.NotNil(t, jd.Evidence().FinishedAge)
	require.Equal(t, Duration(90*time.Second), *jd.Evidence().FinishedAge)
	require.Equal(t, StateCompleted, jd.Evidence().TaskState)
}

func TestJudgeFinishedGraceIsConfigurable(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.worker("1@w", time.Second)
	id := w.finished(StateCompleted, jtDur(10*time.Second))
	w.taskLock(id, "1@w")
	p := jtPolicy()
	p.FinishedGrace = 5 * time.Second
	require.Equal(t, VerdictTaskFinished, jtHolding(t, w.judge(p), TaskKeyPrefix+id, "1@w").Verdict)
	p.FinishedGrace = 0
	require.Equal(t, VerdictTaskFinished, jtHolding(t, w.judge(p), TaskKeyPrefix+id, "1@w").Verdict)
	p.FinishedGrace = 10 * time.Second
	require.Equal(t, VerdictPending, jtHolding(t, w.judge(p), TaskKeyPrefix+id, "1@w").Verdict)
}

func TestJudgeHeartbeatGraceIsConfigurable(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	row := w.worker("1@w", 40*time.Second)
	id := w.task(StateRunning, row)
	w.taskLock(id, "1@w")
	p := jtPolicy()
	require.Equal(t, VerdictPending, jtHolding(t, w.judge(p), TaskKeyPrefix+id, "1@w").Verdict)
	p.HeartbeatGrace = 5 * time.Second
	require.Equal(t, VerdictOwnerDead, jtHolding(t, w.judge(p), TaskKeyPrefix+id, "1@w").Verdict)
	p.HeartbeatGrace = 10 * time.Second
	require.Equal(t, VerdictPending, jtHolding(t, w.judge(p), TaskKeyPrefix+id, "1@w").Verdict)
}

// ---------------------------------------------------------------------------
// Resource holdings

package reaper

// Table tests of Explain: each case builds one inspection the way a pass
// would see it (a snapshot judged by Judge, plus the rows explain reads) and
// checks the status and conclusion. Explain is pure, so these need no
// services. Helpers are prefixed with ex so that they cannot collide with
// the other tests of the package.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/pulpdb"
)

var exNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

const (
	exRepo   = "prn:rpm.rpmrepository:0000000a-0000-4000-8000-00000000000a"
	exDomain = "prn:core.domain:00000000-0000-4000-8000-000000000001"
)

// exWorld is a snapshot under construction; the explained task is always
// exTarget.
type exWorld struct {
	snap   judge.Snapshot
	policy judge.Policy
	ahead  []pulpdb.TaskRow
	next   int
}

const exTarget = "0000ffff-0000-4000-8000-00000000ffff"

func exNewWorld() *exWorld {
	return &exWorld{
		snap:   judge.Snapshot{Now: exNow, Tasks: map[string]judge.Task{}, Suspects: map[judge.SuspectKey]judge.Suspect{}, FullScan: true},
		policy: judge.DefaultPolicy(),
	}
}

func (w *exWorld) id() string {
	w.next++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", w.next, w.next)
}

func (w *exWorld) worker(name string, age time.Duration) string {
	id := w.id()
	w.snap.AppStatuses = append(w.snap.AppStatuses, judge.AppStatus{ID: id, Name: name, AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: exNow.Add(-age)})
	return id
}

// task adds a core_task row with the given id ("" for a new one).
func (w *exWorld) task(id, state, appLock string, reserved ...string) string {
	if id == "" {
		id = w.id()
	}
	w.snap.Tasks[id] = judge.Task{ID: id, Name: "sync", State: state, AppLockID: appLock, Reserved: reserved}
	return id
}

func (w *exWorld) finishedAgo(id string, ago time.Duration) {
	t := w.snap.Tasks[id]
	at := exNow.Add(-ago)
	t.FinishedAt = &at
	w.snap.Tasks[id] = t
}

// hold writes the locks of a task as Pulp's acquire script does.
func (w *exWorld) hold(owner, taskID string, reserved ...string) {
	w.snap.Holdings = append(w.snap.Holdings, judge.Holding{Key: judge.TaskKeyPrefix + taskID, Kind: judge.KindTask, Owner: owner, Registered: true})
	for _, n := range judge.Reservations(reserved) {
		w.snap.Holdings = append(w.snap.Holdings, judge.Holding{Key: judge.ResourceKeyPrefix + n.Resource, Kind: n.Kind, Owner: owner, Registered: true})
	}
}

// older adds an older incomplete task that explain's own query found.
func (w *exWorld) older(state, appLock string, reserved ...string) string {
	id := w.task("", state, appLock, reserved...)
	w.ahead = append(w.ahead, pulpdb.TaskRow{Task: w.snap.Tasks[id], Created: exNow.Add(-time.Hour)})
	return id
}

func (w *exWorld) explain() Explanation {
	in := &Inspection{Snapshot: w.snap, Plan: judge.All(w.snap, w.policy), Policy: w.policy}
	ex := &pulpdb.ExplainedTask{TaskID: exTarget, Ahead: w.ahead, AheadTotal: len(w.ahead)}
	if t, ok := w.snap.Tasks[exTarget]; ok {
		ex.Row = &pulpdb.TaskRow{Task: t, Created: exNow.Add(-time.Minute)}
	}
	in.Explained = ex
	return Explain(in, exTarget)
}

func TestExplain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// build fills the world; it returns the ids the want strings use.
		build      func(w *exWorld) []any
		status     Status
		conclusion string // a format over build's ids
	}{
		{
			name:       "not found",
			build:      func(w *exWorld) []any { return []any{exTarget} },
			status:     StatusNotFound,
			conclusion: "not found: no task %s",
		},
		{
			name: "not found but its task lock is held",
			build: func(w *exWorld) []any {
				w.worker("1@live", time.Second)
				w.hold("1@live", exTarget)
				return []any{exTarget}
			},
			status:     StatusNotFound,
			conclusion: "not found: no task %s; yet 1@live holds its task lock (task-missing): released once confirmed, confirm_after after its first sighting",
		},
		{
			name: "finished",
			build: func(w *exWorld) []any {
				w.task(exTarget, judge.StateCompleted, "")
				w.finishedAgo(exTarget, time.Hour)
				return nil
			},
			status:     StatusFinished,
			conclusion: "finished (completed)",
		},
		{
			name: "finished with a leaked lock",
			build: func(w *exWorld) []any {
				w.worker("1@live", time.Second)
				w.task(exTarget, judge.StateFailed, "", exRepo)
				w.finishedAgo(exTarget, 10*time.Minute)
				w.hold("1@live", exTarget, exRepo)
				return nil
			},
			status:     StatusFinished,
			conclusion: "finished (failed); 1@live still holds its task lock (task-finished): the next pass releases it",
		},
		{
			name: "lost: running on a dead worker",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				w.task(exTarget, judge.StateRunning, dead, exRepo)
				w.hold("1@dead", exTarget, exRepo)
				return nil
			},
			status:     StatusLost,
			conclusion: "lost: claimed by dead worker 1@dead (heartbeat 1h0m0s ago); the next pass cancels it",
		},
		{
			name: "lost: failed by policy",
			build: func(w *exWorld) []any {
				w.policy.LostRunning = judge.StateFailed
				dead := w.worker("1@dead", time.Hour)
				w.task(exTarget, judge.StateRunning, dead)
				return nil
			},
			status:     StatusLost,
			conclusion: "lost: claimed by dead worker 1@dead (heartbeat 1h0m0s ago); the next pass fails it",
		},
		{
			name:       "lost: running with no claim",
			build:      func(w *exWorld) []any { w.task(exTarget, judge.StateRunning, ""); return nil },
			status:     StatusLost,
			conclusion: "lost: running with no claim, its worker's row is gone; the next pass cancels it",
		},
		{
			name: "lost but held back by the mass-death guard",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				w.worker("2@dead", time.Hour)
				w.worker("3@dead", time.Hour)
				w.task(exTarget, judge.StateRunning, dead)
				return nil
			},
			status:     StatusLost,
			conclusion: "lost: claimed by dead worker 1@dead (heartbeat 1h0m0s ago); the next pass cancels it (held back this pass: mass-death guard)",
		},
		{
			name: "orphaned: waiting, claimed by a dead worker that holds its lock",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				w.task(exTarget, judge.StateWaiting, dead, exRepo)
				w.hold("1@dead", exTarget, exRepo)
				return nil
			},
			status:     StatusOrphaned,
			conclusion: "orphaned: claimed by dead worker 1@dead (heartbeat 1h0m0s ago); the next pass releases its lock and requeues it",
		},
		{
			name: "orphaned, canceled by policy",
			build: func(w *exWorld) []any {
				w.policy.OrphanedWaiting = judge.WaitingCancel
				dead := w.worker("1@dead", time.Hour)
				w.task(exTarget, judge.StateWaiting, dead, exRepo)
				return nil
			},
			status:     StatusOrphaned,
			conclusion: "orphaned: claimed by dead worker 1@dead (heartbeat 1h0m0s ago); the next pass cancels it",
		},
		{
			name: "stuck: claimed by a live worker without a lock",
			build: func(w *exWorld) []any {
				live := w.worker("1@live", 2*time.Second)
				w.task(exTarget, judge.StateWaiting, live, exRepo)
				return nil
			},
			status:     StatusStuck,
			conclusion: "stuck: claimed by live worker 1@live (heartbeat 2s ago), which holds no lock for it; requeued once confirmed (suspect since 2026-07-24T12:00:00Z)",
		},
		{
			name: "running on a live worker",
			build: func(w *exWorld) []any {
				live := w.worker("1@live", 2*time.Second)
				w.task(exTarget, judge.StateRunning, live, exRepo)
				w.hold("1@live", exTarget, exRepo)
				return nil
			},
			status:     StatusRunning,
			conclusion: "running on live worker 1@live (heartbeat 2s ago)",
		},
		{
			name: "running on a late worker",
			build: func(w *exWorld) []any {
				late := w.worker("1@late", 45*time.Second)
				w.task(exTarget, judge.StateCanceling, late)
				return nil
			},
			status:     StatusRunning,
			conclusion: "canceling on late worker 1@late (heartbeat 45s ago)",
		},
		{
			name: "starting: claimed by a live worker that holds its locks",
			build: func(w *exWorld) []any {
				live := w.worker("1@live", time.Second)
				w.task(exTarget, judge.StateWaiting, live, exRepo)
				w.hold("1@live", exTarget, exRepo)
				return nil
			},
			status:     StatusStarting,
			conclusion: "claimed by live worker 1@live (heartbeat 1s ago): about to run",
		},
		{
			name: "blocked by a dead worker's exclusive lock",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				other := w.task("", judge.StateRunning, dead, exRepo, "shared:"+exDomain)
				w.hold("1@dead", other, exRepo, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", exRepo, "shared:"+exDomain)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1h0m0s ago): the next pass releases it",
		},
		{
			name: "blocked by a dead worker's shared membership when it needs the domain exclusively",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				other := w.task("", judge.StateRunning, dead, exRepo, "shared:"+exDomain)
				w.hold("1@dead", other, exRepo, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", exDomain)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1h0m0s ago): the next pass releases it",
		},
		{
			name: "blocked by an owner without a row",
			build: func(w *exWorld) []any {
				other := w.task("", judge.StateWaiting, "", exRepo)
				w.hold("7@vanished", other, exRepo)
				w.task(exTarget, judge.StateWaiting, "", exRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of owner 7@vanished, which has no AppStatus row (owner-gone): the next pass releases it",
		},
		{
			name: "blocked by its own task lock left by a dead worker between acquire and claim",
			build: func(w *exWorld) []any {
				w.worker("1@dead", time.Hour)
				w.task(exTarget, judge.StateWaiting, "", exRepo)
				w.hold("1@dead", exTarget, exRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by its own task lock, taken by dead worker 1@dead that never claimed it (owner-dead, heartbeat 1h0m0s ago): the next pass releases it",
		},
		{
			name: "blocked by the leaked lock of a finished task",
			build: func(w *exWorld) []any {
				w.worker("1@live", time.Second)
				other := w.task("", judge.StateCompleted, "", exRepo)
				w.finishedAgo(other, 10*time.Minute)
				w.hold("1@live", other, exRepo)
				w.task(exTarget, judge.StateWaiting, "", exRepo)
				return []any{other}
			},
			status:     StatusBlocked,
			conclusion: "blocked by a lock 1@live kept for finished task %s (task-finished, heartbeat 1s ago): the next pass releases it",
		},
		{
			name: "blocked by a dead worker's lock of a task it finished long ago",
			build: func(w *exWorld) []any {
				w.worker("1@dead", time.Hour)
				other := w.task("", judge.StateCompleted, "", "shared:"+exDomain)
				w.finishedAgo(other, 2*time.Hour)
				w.hold("1@dead", other, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", exDomain)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (task-finished, heartbeat 1h0m0s ago): the next pass releases it",
		},
		{
			name: "blocked by a suspect lock of a live worker",
			build: func(w *exWorld) []any {
				w.worker("1@live", time.Second)
				w.snap.Holdings = append(w.snap.Holdings, judge.Holding{Key: judge.ResourceKeyPrefix + exRepo, Kind: judge.KindExclusive, Owner: "1@live"})
				w.task(exTarget, judge.StateWaiting, "", exRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a suspect lock of live worker 1@live (no-task, heartbeat 1s ago): released once confirmed, confirm_after after its first sighting",
		},
		{
			name: "blocked, but the mass-death guard holds the release back",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				w.worker("2@dead", time.Hour)
				w.worker("3@dead", time.Hour)
				other := w.task("", judge.StateRunning, dead, exRepo)
				w.hold("1@dead", other, exRepo)
				w.task(exTarget, judge.StateWaiting, "", exRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1h0m0s ago): a pass would release it but mass-death guard holds it back",
		},
		{
			name: "waiting behind a task running on a live worker",
			build: func(w *exWorld) []any {
				live := w.worker("1@live", 2*time.Second)
				other := w.task("", judge.StateRunning, live, exRepo, "shared:"+exDomain)
				w.hold("1@live", other, exRepo, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", exRepo, "shared:"+exDomain)
				return []any{other}
			},
			status:     StatusWaiting,
			conclusion: "waiting behind task %s (sync), running on live worker 1@live (heartbeat 2s ago)",
		},
		{
			name: "a shared need is not blocked by shared holders",
			build: func(w *exWorld) []any {
				live := w.worker("1@live", 2*time.Second)
				other := w.task("", judge.StateRunning, live, "shared:"+exDomain)
				w.hold("1@live", other, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", exRepo, "shared:"+exDomain)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "waiting behind an older task that needs the repository exclusively",
			build: func(w *exWorld) []any {
				older := w.older(judge.StateWaiting, "", exRepo, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", "shared:"+exRepo, "shared:"+exDomain)
				return []any{older, exRepo}
			},
			status:     StatusWaiting,
			conclusion: "waiting behind older task %s (sync), waiting, unclaimed, which needs %s first",
		},
		{
			name: "an older task sharing what it shares does not go first",
			build: func(w *exWorld) []any {
				w.older(judge.StateWaiting, "", "shared:"+exRepo, "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", "shared:"+exRepo, "shared:"+exDomain)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "neither an older running task nor one the next pass cancels goes first",
			build: func(w *exWorld) []any {
				w.policy.OrphanedWaiting = judge.WaitingCancel
				dead := w.worker("1@dead", time.Hour)
				w.older(judge.StateRunning, "", exRepo)
				w.older(judge.StateWaiting, dead, exRepo)
				w.task(exTarget, judge.StateWaiting, "", exRepo)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "ready to run",
			build: func(w *exWorld) []any {
				w.task(exTarget, judge.StateWaiting, "", exRepo, "shared:"+exDomain)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "blocked by a dead lock, then behind a live one and an older task",
			build: func(w *exWorld) []any {
				dead := w.worker("1@dead", time.Hour)
				live := w.worker("1@live", 2*time.Second)
				d := w.task("", judge.StateRunning, dead, "shared:"+exDomain)
				w.hold("1@dead", d, "shared:"+exDomain)
				l := w.task("", judge.StateRunning, live, "shared:"+exDomain)
				w.hold("1@live", l, "shared:"+exDomain)
				older := w.older(judge.StateWaiting, "", exDomain)
				w.older(judge.StateWaiting, "", "shared:"+exDomain)
				w.task(exTarget, judge.StateWaiting, "", exDomain)
				return []any{l, older, exDomain}
			},
			status: StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1h0m0s ago): the next pass releases it; " +
				"then waiting behind task %s (sync), running on live worker 1@live (heartbeat 2s ago); " +
				"then waiting behind older task %s (sync), waiting, unclaimed, which needs %s first (and 1 more older task)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := exNewWorld()
			args := tc.build(w)
			ex := w.explain()
			require.Equal(t, tc.status, ex.Status, ex.Conclusion)
			require.Equal(t, fmt.Sprintf(tc.conclusion, args...), ex.Conclusion)
			require.Equal(t, exTarget, ex.TaskID)
			require.Equal(t, exNow, ex.DBNow)
		})
	}
}

// TestExplainHolders checks what an explanation says about each holding: its
// owner's liveness, the task it is held for, whether it is the task's own
// and whether it blocks.
func TestExplainHolders(t *testing.T) {
	t.Parallel()
	w := exNewWorld()
	w.worker("1@dead", time.Hour)
	live := w.worker("1@live", 2*time.Second)
	running := w.task("", judge.StateRunning, live, "shared:"+exDomain)
	w.hold("1@live", running, "shared:"+exDomain)
	w.task(exTarget, judge.StateWaiting, "", exRepo, exDomain)
	w.hold("1@dead", exTarget, exRepo)

	ex := w.explain()
	require.Equal(t, StatusBlocked, ex.Status)
	require.NotNil(t, ex.Task)
	require.Nil(t, ex.Claim)
	require.Len(t, ex.TaskLocks, 1)
	tl := ex.TaskLocks[0]
	require.Equal(t, "1@dead", tl.Owner)
	require.Equal(t, judge.Dead, tl.Liveness)
	require.True(t, tl.Own)
	require.True(t, tl.Blocks, "a held task key fails Pulp's acquire")
	require.Equal(t, judge.VerdictOwnerDead, tl.Verdict)
	require.Equal(t, judge.ActionRelease, tl.Action)

	require.Len(t, ex.Resources, 2)
	repo, dom := ex.Resources[0], ex.Resources[1]
	require.Equal(t, exRepo, repo.Resource)
	require.Equal(t, judge.KindExclusive, repo.Need)
	require.Len(t, repo.Holders, 1)
	require.True(t, repo.Holders[0].Own)
	require.False(t, repo.Holders[0].Blocks, "its own resource holding goes with its task lock")
	require.Equal(t, exTarget, repo.Holders[0].Task.ID)

	require.Equal(t, exDomain, dom.Resource)
	require.Equal(t, judge.KindExclusive, dom.Need)
	require.Len(t, dom.Holders, 1)
	h := dom.Holders[0]
	require.Equal(t, judge.KindShared, h.Kind)
	require.Equal(t, "1@live", h.Owner)
	require.Equal(t, judge.Alive, h.Liveness)
	require.Equal(t, judge.Duration(2*time.Second), *h.HeartbeatAge)
	require.Equal(t, &TaskRef{ID: running, Name: "sync", State: judge.StateRunning}, h.Task)
	require.False(t, h.Own)
	require.True(t, h.Blocks)
	require.Equal(t, judge.VerdictJustified, h.Verdict)
	require.Equal(t, judge.ActionKeep, h.Action)
	require.Contains(t, ex.Conclusion, "then waiting behind task "+running)
}

// TestExplainClaimAndAhead checks the claim of the task and of the tasks
// ahead, and that the snapshot's row stands in when explain's own read has
// none.
func TestExplainClaimAndAhead(t *testing.T) {
	t.Parallel()
	w := exNewWorld()
	live := w.worker("1@live", 2*time.Second)
	older := w.older(judge.StateWaiting, live, exRepo)
	w.hold("1@live", older, exRepo)
	w.task(exTarget, judge.StateWaiting, "", exRepo)
	ex := w.explain()
	require.Len(t, ex.Ahead, 1)
	require.Equal(t, older, ex.Ahead[0].ID)
	require.Equal(t, []string{exRepo}, ex.Ahead[0].Conflicts)
	require.Equal(t, &Process{AppLockID: live, Name: "1@live", AppType: "worker", Liveness: judge.Alive, HeartbeatAge: durationPtr(2 * time.Second)}, ex.Ahead[0].Claim)
	require.Equal(t, StatusWaiting, ex.Status)
	require.Equal(t, fmt.Sprintf("waiting behind task %s (sync), claimed by live worker 1@live (heartbeat 2s ago)", older), ex.Conclusion,
		"a task ahead already named as a lock holder is not named twice")

	// Without explain's own rows, the snapshot's row of a claimed task is used.
	in := &Inspection{Snapshot: w.snap, Plan: judge.All(w.snap, w.policy), Policy: w.policy}
	ex = Explain(in, older)
	require.NotNil(t, ex.Task)
	require.True(t, ex.Task.Created.IsZero())
	require.Equal(t, StatusStarting, ex.Status)
	require.Equal(t, "1@live", ex.Claim.Name)

	// A claim whose AppStatus row is gone.
	w2 := exNewWorld()
	w2.task(exTarget, judge.StateRunning, "deadbeef-0000-4000-8000-000000000000")
	ex = w2.explain()
	require.Equal(t, StatusLost, ex.Status)
	require.Equal(t, judge.Gone, ex.Claim.Liveness)
	require.Equal(t, "lost: claimed by a process whose AppStatus row deadbeef-0000-4000-8000-000000000000 is gone; the next pass cancels it", ex.Conclusion)
}

func TestConflicts(t *testing.T) {
	t.Parallel()
	require.True(t, judge.Conflicts(judge.KindExclusive, judge.KindExclusive))
	require.True(t, judge.Conflicts(judge.KindExclusive, judge.KindShared))
	require.True(t, judge.Conflicts(judge.KindShared, judge.KindExclusive))
	require.False(t, judge.Conflicts(judge.KindShared, judge.KindShared))
	require.Equal(t, []string{"a", "shared:a", "b"}, judge.ConflictingEntries([]string{"a", "shared:b", "a"}))
	require.Equal(t, []judge.Reservation{{Resource: "a", Kind: judge.KindExclusive}, {Resource: "b", Kind: judge.KindShared}}, judge.Reservations([]string{"a", "shared:b", "a", "shared:b"}))
}

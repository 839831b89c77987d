package explain

// Table tests of Explain: each case builds one inspection the way a pass
// would see it (a snapshot judged by Judge, plus the rows explain reads) and
// checks the status and conclusion. Explain is pure, so these need no
// services. Helpers are prefixed with ex so that they cannot collide with
// the other tests of the package.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// exWorld is a snapshot under construction with the rows explain's own
// query found; the explained task is always exTarget.
type exWorld struct {
	*passtest.World
	ahead []pulpdb.TaskRow
}

const exTarget = "0000ffff-0000-4000-8000-00000000ffff"

func exNewWorld() *exWorld { return &exWorld{World: passtest.NewWorld(reaper.DefaultConfig().Policy)} }

// older adds an older incomplete task that explain's own query found.
func (w *exWorld) older(state, appLock string, reserved ...string) string {
	id := w.Task("", state, appLock, reserved...)
	w.ahead = append(w.ahead, pulpdb.TaskRow{Task: w.Snap.Tasks[id], Created: passtest.WorldNow.Add(-time.Hour)})
	return id
}

func (w *exWorld) explain() Explanation { return w.explainPassing(nil) }

// explainPassing explains exTarget told p of the history of passes.
func (w *exWorld) explainPassing(p *Passes) Explanation {
	in := &reaper.Inspection{Snapshot: w.Snap, Plan: judge.All(w.Snap, w.Policy), Policy: w.Policy}
	ex := &pulpdb.ExplainedTask{TaskID: exTarget, Ahead: w.ahead, AheadTotal: len(w.ahead)}
	if t, ok := w.Snap.Tasks[exTarget]; ok {
		ex.Row = &pulpdb.TaskRow{Task: t, Created: passtest.WorldNow.Add(-time.Minute)}
	}
	in.Explained = ex
	return ExplainPassing(in, exTarget, p)
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
				w.Worker("1@live", time.Second)
				w.Hold("1@live", exTarget)
				return []any{exTarget}
			},
			status:     StatusNotFound,
			conclusion: "not found: no task %s; yet 1@live holds its task lock (task-missing): released once confirmed, confirm_after after its first sighting",
		},
		{
			name: "finished",
			build: func(w *exWorld) []any {
				w.Task(exTarget, judge.StateCompleted, "")
				w.FinishedAgo(exTarget, time.Hour)
				return nil
			},
			status:     StatusFinished,
			conclusion: "finished (completed)",
		},
		{
			name: "finished with a leaked lock",
			build: func(w *exWorld) []any {
				w.Worker("1@live", time.Second)
				w.Task(exTarget, judge.StateFailed, "", passtest.WorldRepo)
				w.FinishedAgo(exTarget, 10*time.Minute)
				w.Hold("1@live", exTarget, passtest.WorldRepo)
				return nil
			},
			status:     StatusFinished,
			conclusion: "finished (failed); 1@live still holds its task lock (task-finished): the next pass releases it",
		},
		{
			name: "lost: running on a dead worker",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				w.Task(exTarget, judge.StateRunning, dead, passtest.WorldRepo)
				w.Hold("1@dead", exTarget, passtest.WorldRepo)
				return nil
			},
			status:     StatusLost,
			conclusion: "lost: claimed by dead worker 1@dead (heartbeat 1 h ago); the next pass cancels it",
		},
		{
			name: "lost: failed by policy",
			build: func(w *exWorld) []any {
				w.Policy.LostRunning = judge.StateFailed
				dead := w.Worker("1@dead", time.Hour)
				w.Task(exTarget, judge.StateRunning, dead)
				return nil
			},
			status:     StatusLost,
			conclusion: "lost: claimed by dead worker 1@dead (heartbeat 1 h ago); the next pass fails it",
		},
		{
			name:       "lost: running with no claim",
			build:      func(w *exWorld) []any { w.Task(exTarget, judge.StateRunning, ""); return nil },
			status:     StatusLost,
			conclusion: "lost: running with no claim, its worker's row is gone; the next pass cancels it",
		},
		{
			name: "lost but held back by the mass-death guard",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				w.Worker("2@dead", time.Hour)
				w.Worker("3@dead", time.Hour)
				w.Task(exTarget, judge.StateRunning, dead)
				return nil
			},
			status:     StatusLost,
			conclusion: "lost: claimed by dead worker 1@dead (heartbeat 1 h ago); the next pass cancels it (held back this pass: mass-death guard)",
		},
		{
			name: "orphaned: waiting, claimed by a dead worker that holds its lock",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				w.Task(exTarget, judge.StateWaiting, dead, passtest.WorldRepo)
				w.Hold("1@dead", exTarget, passtest.WorldRepo)
				return nil
			},
			status:     StatusOrphaned,
			conclusion: "orphaned: claimed by dead worker 1@dead (heartbeat 1 h ago); the next pass releases its lock and requeues it",
		},
		{
			name: "orphaned, canceled by policy",
			build: func(w *exWorld) []any {
				w.Policy.OrphanedWaiting = judge.WaitingCancel
				dead := w.Worker("1@dead", time.Hour)
				w.Task(exTarget, judge.StateWaiting, dead, passtest.WorldRepo)
				return nil
			},
			status:     StatusOrphaned,
			conclusion: "orphaned: claimed by dead worker 1@dead (heartbeat 1 h ago); the next pass cancels it",
		},
		{
			name: "stuck: claimed by a live worker without a lock",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", 2*time.Second)
				w.Task(exTarget, judge.StateWaiting, live, passtest.WorldRepo)
				return nil
			},
			status:     StatusStuck,
			conclusion: "stuck: claimed by live worker 1@live (heartbeat 2 s ago), which holds no lock for it; requeued once confirmed (suspect since 2026-07-24T12:00:00Z)",
		},
		{
			name: "stuck canceling: claimed by a live worker that never started it",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", 2*time.Second)
				w.Task(exTarget, judge.StateCanceling, live, passtest.WorldRepo)
				task := w.Snap.Tasks[exTarget]
				task.NeverStarted = true
				w.Snap.Tasks[exTarget] = task
				return nil
			},
			status:     StatusStuck,
			conclusion: "stuck canceling: claimed by live worker 1@live (heartbeat 2 s ago), which never started it and holds no lock for it; canceled once confirmed (suspect since 2026-07-24T12:00:00Z)",
		},
		{
			name: "stuck canceling, without the started_at grant",
			build: func(w *exWorld) []any {
				w.Snap.StartsUnread = true
				live := w.Worker("1@live", 2*time.Second)
				w.Task(exTarget, judge.StateCanceling, live, passtest.WorldRepo)
				return nil
			},
			status:     StatusStuck,
			conclusion: "stuck canceling: claimed by live worker 1@live (heartbeat 2 s ago), which may never have started it and holds no lock for it; a pass never cancels it: " + judge.DeferredStartsUnread,
		},
		{
			name: "stranded: claimed by a live worker too old for it, none online can run it",
			build: func(w *exWorld) []any {
				old := w.Worker("1@old", 2*time.Second)
				w.Snap.AppStatuses[len(w.Snap.AppStatuses)-1].Versions = map[string]string{"file": "1.11.0"}
				w.Task(exTarget, judge.StateWaiting, old, passtest.WorldRepo)
				t := w.Snap.Tasks[exTarget]
				t.Versions = map[string]string{"file": "1.12.0"}
				w.Snap.Tasks[exTarget], w.Snap.Versions = t, true
				return nil
			},
			status:     StatusStuck,
			conclusion: "stranded: claimed by live worker 1@old (heartbeat 2 s ago), too old for it; waits for a worker with file ≥ 1.12.0; none of 1 online workers has it; never requeued while no online worker can run it",
		},
		{
			name: "running on a live worker",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", 2*time.Second)
				w.Task(exTarget, judge.StateRunning, live, passtest.WorldRepo)
				w.Hold("1@live", exTarget, passtest.WorldRepo)
				return nil
			},
			status:     StatusRunning,
			conclusion: "running on live worker 1@live (heartbeat 2 s ago)",
		},
		{
			name: "running on a late worker",
			build: func(w *exWorld) []any {
				late := w.Worker("1@late", 45*time.Second)
				w.Task(exTarget, judge.StateCanceling, late)
				return nil
			},
			status:     StatusRunning,
			conclusion: "canceling on late worker 1@late (heartbeat 45 s ago)",
		},
		{
			name: "starting: claimed by a live worker that holds its locks",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", time.Second)
				w.Task(exTarget, judge.StateWaiting, live, passtest.WorldRepo)
				w.Hold("1@live", exTarget, passtest.WorldRepo)
				return nil
			},
			status:     StatusStarting,
			conclusion: "claimed by live worker 1@live (heartbeat 1 s ago): about to run",
		},
		{
			name: "claimed, not started: its live worker holds its lock, confirmed",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", time.Second)
				w.Task(exTarget, judge.StateWaiting, live, passtest.WorldRepo)
				w.Hold("1@live", exTarget, passtest.WorldRepo)
				task := w.Snap.Tasks[exTarget]
				task.NeverStarted = true
				w.Snap.Tasks[exTarget] = task
				w.Snap.Suspects = map[judge.SuspectKey]judge.Suspect{judge.StuckClaimKey(exTarget, live): {
					Verdict: judge.VerdictClaimedNotStarted, FirstSeen: w.Snap.Now.Add(-14 * time.Minute)}}
				return nil
			},
			status: StatusStuck,
			conclusion: "claimed, not started: claimed by live worker 1@live (heartbeat 1 s ago) and not started for at least 14 min, while it holds the task's lock; " +
				"its process may hang: restarting that worker frees it; a pass never writes it",
		},
		{
			name: "blocked by a dead worker's exclusive lock",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				other := w.Task("", judge.StateRunning, dead, passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Hold("1@dead", other, passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo, "shared:"+passtest.Domain)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1 h ago): the next pass releases it",
		},
		{
			name: "blocked by a dead worker's shared membership when it needs the domain exclusively",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				other := w.Task("", judge.StateRunning, dead, passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Hold("1@dead", other, passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", passtest.Domain)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1 h ago): the next pass releases it",
		},
		{
			name: "blocked by an owner without a row",
			build: func(w *exWorld) []any {
				other := w.Task("", judge.StateWaiting, "", passtest.WorldRepo)
				w.Hold("7@vanished", other, passtest.WorldRepo)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of owner 7@vanished, which has no AppStatus row (owner-gone): the next pass releases it",
		},
		{
			name: "blocked by its own task lock left by a dead worker between acquire and claim",
			build: func(w *exWorld) []any {
				w.Worker("1@dead", time.Hour)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
				w.Hold("1@dead", exTarget, passtest.WorldRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by its own task lock, taken by dead worker 1@dead that never claimed it (owner-dead, heartbeat 1 h ago): the next pass releases it",
		},
		{
			name: "blocked by the leaked lock of a finished task",
			build: func(w *exWorld) []any {
				w.Worker("1@live", time.Second)
				other := w.Task("", judge.StateCompleted, "", passtest.WorldRepo)
				w.FinishedAgo(other, 10*time.Minute)
				w.Hold("1@live", other, passtest.WorldRepo)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
				return []any{other}
			},
			status:     StatusBlocked,
			conclusion: "blocked by a lock 1@live kept for finished task %s (task-finished, heartbeat 1 s ago): the next pass releases it",
		},
		{
			name: "blocked by a dead worker's lock of a task it finished long ago",
			build: func(w *exWorld) []any {
				w.Worker("1@dead", time.Hour)
				other := w.Task("", judge.StateCompleted, "", "shared:"+passtest.Domain)
				w.FinishedAgo(other, 2*time.Hour)
				w.Hold("1@dead", other, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", passtest.Domain)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (task-finished, heartbeat 1 h ago): the next pass releases it",
		},
		{
			name: "blocked by a suspect lock of a live worker",
			build: func(w *exWorld) []any {
				w.Worker("1@live", time.Second)
				w.Snap.Holdings = append(w.Snap.Holdings, judge.Holding{Key: judge.ResourceKeyPrefix + passtest.WorldRepo, Kind: judge.KindExclusive, Owner: "1@live"})
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a suspect lock of live worker 1@live (no-task, heartbeat 1 s ago): released once confirmed, confirm_after after its first sighting",
		},
		{
			name: "blocked, but the mass-death guard holds the release back",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				w.Worker("2@dead", time.Hour)
				w.Worker("3@dead", time.Hour)
				other := w.Task("", judge.StateRunning, dead, passtest.WorldRepo)
				w.Hold("1@dead", other, passtest.WorldRepo)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
				return nil
			},
			status:     StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1 h ago): a pass would release it but mass-death guard holds it back",
		},
		{
			name: "waiting behind a task running on a live worker",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", 2*time.Second)
				other := w.Task("", judge.StateRunning, live, passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Hold("1@live", other, passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo, "shared:"+passtest.Domain)
				return []any{other}
			},
			status:     StatusWaiting,
			conclusion: "waiting behind task %s (sync), running on live worker 1@live (heartbeat 2 s ago)",
		},
		{
			name: "a shared need is not blocked by shared holders",
			build: func(w *exWorld) []any {
				live := w.Worker("1@live", 2*time.Second)
				other := w.Task("", judge.StateRunning, live, "shared:"+passtest.Domain)
				w.Hold("1@live", other, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo, "shared:"+passtest.Domain)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "waiting behind an older task that needs the repository exclusively",
			build: func(w *exWorld) []any {
				older := w.older(judge.StateWaiting, "", passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", "shared:"+passtest.WorldRepo, "shared:"+passtest.Domain)
				return []any{older, passtest.WorldRepo}
			},
			status:     StatusWaiting,
			conclusion: "waiting behind older task %s (sync), waiting, unclaimed, which needs %s first",
		},
		{
			name: "an older task sharing what it shares does not go first",
			build: func(w *exWorld) []any {
				w.older(judge.StateWaiting, "", "shared:"+passtest.WorldRepo, "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", "shared:"+passtest.WorldRepo, "shared:"+passtest.Domain)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "neither an older running task nor one the next pass cancels goes first",
			build: func(w *exWorld) []any {
				w.Policy.OrphanedWaiting = judge.WaitingCancel
				dead := w.Worker("1@dead", time.Hour)
				w.older(judge.StateRunning, "", passtest.WorldRepo)
				w.older(judge.StateWaiting, dead, passtest.WorldRepo)
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "ready to run",
			build: func(w *exWorld) []any {
				w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo, "shared:"+passtest.Domain)
				return nil
			},
			status:     StatusReady,
			conclusion: "ready to run: nothing holds its resources and no older task needs them",
		},
		{
			name: "blocked by a dead lock, then behind a live one and an older task",
			build: func(w *exWorld) []any {
				dead := w.Worker("1@dead", time.Hour)
				live := w.Worker("1@live", 2*time.Second)
				d := w.Task("", judge.StateRunning, dead, "shared:"+passtest.Domain)
				w.Hold("1@dead", d, "shared:"+passtest.Domain)
				l := w.Task("", judge.StateRunning, live, "shared:"+passtest.Domain)
				w.Hold("1@live", l, "shared:"+passtest.Domain)
				older := w.older(judge.StateWaiting, "", passtest.Domain)
				w.older(judge.StateWaiting, "", "shared:"+passtest.Domain)
				w.Task(exTarget, judge.StateWaiting, "", passtest.Domain)
				return []any{l, older, passtest.Domain}
			},
			status: StatusBlocked,
			conclusion: "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1 h ago): the next pass releases it; " +
				"then waiting behind task %s (sync), running on live worker 1@live (heartbeat 2 s ago); " +
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
			require.Equal(t, passtest.WorldNow, ex.DBNow)
			require.Nil(t, ex.Passes)

			// A reaper that recorded a pass lately is the one promised.
			w = exNewWorld()
			tc.build(w)
			recorded := w.explainPassing(RecordedWithin(time.Hour, true))
			require.Equal(t, ex.Conclusion, recorded.Conclusion)
			require.Equal(t, &Passes{Within: reaper.Seconds(time.Hour), Recorded: true}, recorded.Passes)

			// With none recorded, nothing is promised of the next pass,
			// and what a pass would do comes with how to get one.
			w = exNewWorld()
			tc.build(w)
			none := w.explainPassing(RecordedWithin(time.Hour, false)).Conclusion
			require.NotContains(t, none, "the next pass")
			awaits := ex.Conclusion != exNoPassWords(ex.Conclusion) || strings.Contains(ex.Conclusion, "once confirmed") ||
				strings.Contains(ex.Conclusion, "a pass would")
			if awaits {
				require.Equal(t, exNoPassWords(ex.Conclusion)+exNoPassHint, none)
			} else {
				require.Equal(t, ex.Conclusion, none, "nothing awaits a pass: nothing to say of one")
			}

			// An unread history promises nothing, and says nothing of it.
			w = exNewWorld()
			tc.build(w)
			unread := w.explainPassing(&Passes{Unread: "connection refused"}).Conclusion
			require.Equal(t, exNoPassWords(ex.Conclusion), unread)
		})
	}
}

// exNoPassHint ends a conclusion that awaits a pass when none was recorded
// within the hour.
const exNoPassHint = "; no reaper has recorded a pass in the last 1 h: run `lock-reaper once` or install the chart"

// exNoPassWords is a conclusion's wording when no reaper is known to pass.
func exNoPassWords(s string) string {
	return strings.ReplaceAll(s, "the next pass ", "a reaper's pass, once one runs, ")
}

// TestExplainNoPassRecorded pins one conclusion whole, as a reader sees it
// when no reaper has recorded a pass.
func TestExplainNoPassRecorded(t *testing.T) {
	t.Parallel()
	w := exNewWorld()
	dead := w.Worker("1@dead", time.Hour)
	other := w.Task("", judge.StateRunning, dead, passtest.WorldRepo)
	w.Hold("1@dead", other, passtest.WorldRepo)
	w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
	ex := w.explainPassing(RecordedWithin(time.Hour, false))
	require.Equal(t, StatusBlocked, ex.Status)
	require.Equal(t, "blocked by a stale lock of dead worker 1@dead (owner-dead, heartbeat 1 h ago): "+
		"a reaper's pass, once one runs, releases it; no reaper has recorded a pass in the last 1 h: "+
		"run `lock-reaper once` or install the chart", ex.Conclusion)
}

// TestExplainHolders checks what an explanation says about each holding: its
// owner's liveness, the task it is held for, whether it is the task's own
// and whether it blocks.
func TestExplainHolders(t *testing.T) {
	t.Parallel()
	w := exNewWorld()
	w.Worker("1@dead", time.Hour)
	live := w.Worker("1@live", 2*time.Second)
	running := w.Task("", judge.StateRunning, live, "shared:"+passtest.Domain)
	w.Hold("1@live", running, "shared:"+passtest.Domain)
	w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo, passtest.Domain)
	w.Hold("1@dead", exTarget, passtest.WorldRepo)

	ex := w.explain()
	require.Equal(t, StatusBlocked, ex.Status)
	require.NotNil(t, ex.Task)
	require.Nil(t, ex.Claim)
	require.Len(t, ex.TaskLocks, 1)
	tl := ex.TaskLocks[0]
	require.Equal(t, "1@dead", tl.Owner)
	require.Equal(t, heartbeat.Dead, tl.Liveness)
	require.True(t, tl.Own)
	require.True(t, tl.Blocks, "a held task key fails Pulp's acquire")
	require.Equal(t, judge.VerdictOwnerDead, tl.Verdict)
	require.Equal(t, judge.ActionRelease, tl.Action)

	require.Len(t, ex.Resources, 2)
	repo, dom := ex.Resources[0], ex.Resources[1]
	require.Equal(t, passtest.WorldRepo, repo.Resource)
	require.Equal(t, judge.KindExclusive, repo.Need)
	require.Len(t, repo.Holders, 1)
	require.True(t, repo.Holders[0].Own)
	require.False(t, repo.Holders[0].Blocks, "its own resource holding goes with its task lock")
	require.Equal(t, exTarget, repo.Holders[0].Task.ID)

	require.Equal(t, passtest.Domain, dom.Resource)
	require.Equal(t, judge.KindExclusive, dom.Need)
	require.Len(t, dom.Holders, 1)
	h := dom.Holders[0]
	require.Equal(t, judge.KindShared, h.Kind)
	require.Equal(t, "1@live", h.Owner)
	require.Equal(t, heartbeat.Alive, h.Liveness)
	require.Equal(t, reaper.Seconds(2*time.Second), *h.HeartbeatAge)
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
	live := w.Worker("1@live", 2*time.Second)
	older := w.older(judge.StateWaiting, live, passtest.WorldRepo)
	w.Hold("1@live", older, passtest.WorldRepo)
	w.Task(exTarget, judge.StateWaiting, "", passtest.WorldRepo)
	ex := w.explain()
	require.Len(t, ex.Ahead, 1)
	require.Equal(t, older, ex.Ahead[0].ID)
	require.Equal(t, []string{passtest.WorldRepo}, ex.Ahead[0].Conflicts)
	require.Equal(t, &Process{AppLockID: live, Name: "1@live", AppType: "worker", Liveness: heartbeat.Alive, HeartbeatAge: secondsPtr(2 * time.Second)}, ex.Ahead[0].Claim)
	require.Equal(t, StatusWaiting, ex.Status)
	require.Equal(t, fmt.Sprintf("waiting behind task %s (sync), claimed by live worker 1@live (heartbeat 2 s ago)", older), ex.Conclusion,
		"a task ahead already named as a lock holder is not named twice")

	// Without explain's own rows, the snapshot's row of a claimed task is used.
	in := &reaper.Inspection{Snapshot: w.Snap, Plan: judge.All(w.Snap, w.Policy), Policy: w.Policy}
	ex = Explain(in, older)
	require.NotNil(t, ex.Task)
	require.True(t, ex.Task.Created.IsZero())
	require.Equal(t, StatusStarting, ex.Status)
	require.Equal(t, "1@live", ex.Claim.Name)

	// A claim whose AppStatus row is gone.
	w2 := exNewWorld()
	w2.Task(exTarget, judge.StateRunning, "deadbeef-0000-4000-8000-000000000000")
	ex = w2.explain()
	require.Equal(t, StatusLost, ex.Status)
	require.Equal(t, heartbeat.Gone, ex.Claim.Liveness)
	require.Equal(t, "lost: claimed by a process whose AppStatus row deadbeef-0000-4000-8000-000000000000 is gone; the next pass cancels it", ex.Conclusion)
}

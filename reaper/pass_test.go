package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

const domain = passtest.Domain

func repo() string { return "prn:rpm.rpmrepository:" + sim.NewUUID() }

// TestPassVerdicts builds one fleet with a holding for each verdict of the
// task lock and resource tables and checks what one real pass does to each.
func TestPassVerdicts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	live := f.Worker("1@live", 2*time.Second)
	late := f.Worker("1@late", 45*time.Second) // past ttl 30s, within grace 30s
	f.Worker("1@dead", time.Hour)
	// A restarted worker reuses its dead predecessor's name.
	deadRow := f.Worker("1@reused", time.Hour)
	f.Worker("1@reused", time.Second)

	type held struct{ key, owner string }
	var keep, release, suspect []held
	withLocks := func(owner, task string, reserved []string, legacy bool) {
		f.Acquire(owner, task, reserved, legacy)
	}

	// healthy: running on a live worker.
	r1 := repo()
	healthy := f.Task("running", live, []string{r1, "shared:" + domain}, -1)
	withLocks("1@live", healthy, []string{r1, "shared:" + domain}, false)
	keep = append(keep, held{"task:" + healthy, "1@live"}, held{"pulp:resource_lock:" + r1, "1@live"}, held{"pulp:resource_lock:" + domain, "1@live"})

	// pending: late owner.
	r2 := repo()
	lateTask := f.Task("running", late, []string{r2}, -1)
	withLocks("1@late", lateTask, []string{r2}, false)
	keep = append(keep, held{"task:" + lateTask, "1@late"}, held{"pulp:resource_lock:" + r2, "1@late"})

	// pending: finished a moment ago, the worker is about to release.
	r3 := repo()
	justDone := f.Task("completed", live, []string{r3}, 5*time.Second)
	withLocks("1@live", justDone, []string{r3}, false)
	keep = append(keep, held{"task:" + justDone, "1@live"}, held{"pulp:resource_lock:" + r3, "1@live"})

	// task-finished: OOM-killed after writing the final state (leak path 2).
	r4 := repo()
	finished := f.Task("completed", live, []string{r4, "shared:" + domain}, 10*time.Minute)
	withLocks("1@live", finished, []string{r4}, false)
	release = append(release, held{"task:" + finished, "1@live"}, held{"pulp:resource_lock:" + r4, "1@live"})

	// owner-dead: a killed worker, registered and legacy locks.
	r5, r6 := repo(), repo()
	deadTask := f.Task("running", "", []string{r5, "shared:" + domain}, -1)
	withLocks("1@dead", deadTask, []string{r5, "shared:" + domain}, false)
	legacyTask := f.Task("completed", "", []string{r6}, -1)
	withLocks("1@dead", legacyTask, []string{r6}, true)
	release = append(release, held{"task:" + deadTask, "1@dead"}, held{"pulp:resource_lock:" + r5, "1@dead"},
		held{"pulp:resource_lock:" + domain, "1@dead"}, held{"task:" + legacyTask, "1@dead"}, held{"pulp:resource_lock:" + r6, "1@dead"})

	// owner-gone: an owner without any AppStatus row.
	r7 := repo()
	goneTask := f.Task("waiting", "", []string{r7}, -1)
	withLocks("7@vanished", goneTask, []string{r7}, false)
	release = append(release, held{"task:" + goneTask, "7@vanished"}, held{"pulp:resource_lock:" + r7, "7@vanished"})

	// task-lost: claimed by the dead row of a reused name.
	r8 := repo()
	lostTask := f.Task("running", deadRow, []string{r8}, -1)
	withLocks("1@reused", lostTask, []string{r8}, false)
	release = append(release, held{"task:" + lostTask, "1@reused"}, held{"pulp:resource_lock:" + r8, "1@reused"})

	// task-missing, unclaimed and no-task need confirmation.
	missing := sim.NewUUID()
	withLocks("1@live", missing, nil, false)
	r9 := repo()
	unclaimed := f.Task("waiting", "", []string{r9}, -1)
	withLocks("1@live", unclaimed, []string{r9}, false)
	r10 := repo()
	require.NoError(t, f.Redis.Client.Set(f.Ctx, "pulp:resource_lock:"+r10, "1@live", 0).Err())
	suspect = append(suspect, held{"task:" + missing, "1@live"}, held{"task:" + unclaimed, "1@live"},
		held{"pulp:resource_lock:" + r9, "1@live"}, held{"pulp:resource_lock:" + r10, "1@live"})

	r := f.reaper(nil)
	audit := f.pass(r, reaper.ModeAudit)
	require.Equal(t, exitcode.Findings, exitcode.Of(audit))
	for _, h := range release {
		fd := findingFor(audit, h.key, h.owner)
		require.NotNil(t, fd, h.key)
		require.Equal(t, reaper.ResultWouldRelease, fd.Result, h.key)
	}
	require.Equal(t, "1@dead", f.Get("task:"+legacyTask), "audit writes nothing")

	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	verdicts := map[string]judge.Verdict{}
	for _, fd := range rep.Findings {
		verdicts[fd.Key+" "+fd.Owner] = fd.Verdict
	}
	require.Equal(t, judge.VerdictTaskFinished, verdicts["task:"+finished+" 1@live"])
	require.Equal(t, judge.VerdictOwnerDead, verdicts["task:"+deadTask+" 1@dead"])
	require.Equal(t, judge.VerdictOwnerGone, verdicts["task:"+goneTask+" 7@vanished"])
	require.Equal(t, judge.VerdictTaskLost, verdicts["task:"+lostTask+" 1@reused"])
	require.Equal(t, judge.VerdictTaskLost, verdicts["pulp:resource_lock:"+r8+" 1@reused"], "resource inherits its task lock's verdict")
	require.Equal(t, judge.VerdictPending, verdicts["task:"+lateTask+" 1@late"])
	require.Equal(t, judge.VerdictTaskMissing, verdicts["task:"+missing+" 1@live"])
	require.Equal(t, judge.VerdictUnclaimed, verdicts["task:"+unclaimed+" 1@live"])
	require.Equal(t, judge.VerdictNoTask, verdicts["pulp:resource_lock:"+r10+" 1@live"])

	holds := func(h held) bool {
		if v := f.Get(h.key); v != "" {
			return v == h.owner
		}
		for _, m := range f.Members(h.key) {
			if m == h.owner {
				return true
			}
		}
		return false
	}
	for _, h := range keep {
		require.True(t, holds(h), "healthy holding released: %v", h)
	}
	for _, h := range suspect {
		require.True(t, holds(h), "suspect released before confirmation: %v", h)
	}
	for _, h := range release {
		require.False(t, holds(h), "stale holding kept: %v", h)
	}
	require.NotContains(t, f.Members(redislocks.ActiveOwnersKey), "1@dead", "a dead owner with an empty registry leaves active_owners")
	require.Empty(t, f.Members(redislocks.OwnerLocksPrefix+"1@dead"))
	require.Contains(t, f.Members(redislocks.ActiveOwnersKey), "1@live")

	// Confirmation: the same suspects seen again after confirm_after go.
	f.ageSuspects(3 * time.Minute)
	rep = f.pass(r, reaper.ModeOnce)
	for _, h := range suspect {
		require.False(t, holds(h), "confirmed suspect kept: %v %+v", h, findingFor(rep, h.key, h.owner))
	}
	for _, h := range keep {
		require.True(t, holds(h), "healthy holding released: %v", h)
	}

	// A running task with no claim has lost its worker: it was canceled.
	state, _, reason, fin := f.TaskRow(deadTask)
	require.Equal(t, "canceled", state)
	require.Equal(t, "Worker 1@dead has gone missing; lock reaper canceled.", *reason)
	require.NotNil(t, fin)
}

// TestPassLostTasks covers the lost task table: running and canceling tasks
// of dead workers are finished, waiting ones requeued, stuck claims requeued
// once confirmed, and running progress reports follow their task.
func TestPassLostTasks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dead := f.Worker("9@dead", time.Hour)
	live := f.Worker("9@live", time.Second)
	lateRow := f.Worker("9@late", 40*time.Second)

	rRun, rWait := repo(), repo()
	running := f.Task("running", dead, []string{rRun}, -1)
	f.Acquire("9@dead", running, []string{rRun}, false)
	runningReport := f.ProgressReport(running, "running")
	doneReport := f.ProgressReport(running, "completed")
	canceling := f.Task("canceling", dead, nil, -1)
	waiting := f.Task("waiting", dead, []string{rWait}, -1)
	f.Acquire("9@dead", waiting, []string{rWait}, true)
	unclaimedRunning := f.Task("running", "", nil, -1)
	stuck := f.Task("waiting", live, nil, -1)
	lateTask := f.Task("running", lateRow, nil, -1)
	healthy := f.Task("running", live, nil, -1)
	f.Acquire("9@live", healthy, nil, false)

	r := f.reaper(nil)
	rep := f.pass(r, reaper.ModeOnce)
	require.Empty(t, rep.Error)

	state, lock, reason, fin := f.TaskRow(running)
	require.Equal(t, "canceled", state)
	require.NotNil(t, lock)
	require.Equal(t, "Worker 9@dead has gone missing; lock reaper canceled.", *reason)
	require.NotNil(t, fin)
	var prState string
	require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, "SELECT state FROM core_progressreport WHERE pulp_id = $1", runningReport).Scan(&prState))
	require.Equal(t, "canceled", prState)
	require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, "SELECT state FROM core_progressreport WHERE pulp_id = $1", doneReport).Scan(&prState))
	require.Equal(t, "completed", prState)

	state, _, _, _ = f.TaskRow(canceling)
	require.Equal(t, "canceled", state)
	state, lock, _, _ = f.TaskRow(waiting)
	require.Equal(t, "waiting", state)
	require.Nil(t, lock, "orphaned claim requeued")
	require.Equal(t, "", f.Get("task:"+waiting), "its lock released first")
	state, _, reason, _ = f.TaskRow(unclaimedRunning)
	require.Equal(t, "canceled", state)
	require.Equal(t, "Worker (unknown) has gone missing; lock reaper canceled.", *reason)

	state, lock, _, _ = f.TaskRow(stuck)
	require.Equal(t, "waiting", state)
	require.NotNil(t, lock, "a stuck claim is only a suspect on first sight")
	require.Equal(t, reaper.ResultSuspected, taskFindingFor(rep, stuck).Result)
	state, _, _, _ = f.TaskRow(lateTask)
	require.Equal(t, "running", state, "a late worker keeps its task")
	state, _, _, _ = f.TaskRow(healthy)
	require.Equal(t, "running", state)

	f.ageSuspects(3 * time.Minute)
	rep = f.pass(r, reaper.ModeOnce)
	state, lock, _, _ = f.TaskRow(stuck)
	require.Equal(t, "waiting", state)
	require.Nil(t, lock, "a confirmed stuck claim is requeued")
	require.Equal(t, reaper.ResultUpdated, taskFindingFor(rep, stuck).Result)

	audit := f.pass(r, reaper.ModeAudit)
	require.Equal(t, exitcode.OK, exitcode.Of(audit), "nothing left to do: %+v %+v", audit.Findings, audit.Tasks)
}

// TestPassPolicies: lost running tasks may be failed, orphaned waiting ones canceled.
func TestPassPolicies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dead := f.Worker("3@dead", time.Hour)
	running := f.Task("running", dead, nil, -1)
	waiting := f.Task("waiting", dead, nil, -1)
	r := f.reaper(func(c *reaper.Config) { c.LostRunning = judge.StateFailed; c.OrphanedWaiting = judge.WaitingCancel })
	f.pass(r, reaper.ModeOnce)
	state, _, reason, _ := f.TaskRow(running)
	require.Equal(t, "failed", state)
	require.Equal(t, "Worker 3@dead has gone missing; lock reaper failed.", *reason)
	state, _, reason, fin := f.TaskRow(waiting)
	require.Equal(t, "canceled", state)
	require.NotNil(t, fin)
	require.Contains(t, *reason, "3@dead")
}

// TestPassRaces: a write that lost a race changes nothing and is counted.
func TestPassRaces(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Worker("4@dead", time.Hour)
	live := f.Worker("4@live", time.Second)
	f.Worker("4@live2", time.Second)
	f.Worker("4@live3", time.Second)
	task := f.Task("completed", "", nil, 5*time.Minute)
	f.Acquire("4@dead", task, nil, false)

	r := f.reaper(func(c *reaper.Config) {})
	snap, err := r.ReadSnapshot(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	plan := judge.All(snap, r.Policy())
	// Between the snapshot and the release, a live worker takes the key.
	require.NoError(t, f.Redis.Client.Set(f.Ctx, "task:"+task, "4@live", 0).Err())
	holdings, _, err := r.Act(f.Ctx, snap, &plan)
	require.NoError(t, err)
	require.Equal(t, []reaper.Result{reaper.ResultOwnerChanged}, holdings)
	require.Equal(t, "4@live", f.Get("task:"+task))

	// A task that changed state between the snapshot and the update is skipped.
	dead := f.Worker("5@dead", time.Hour)
	lost := f.Task("running", dead, nil, -1)
	snap, err = r.ReadSnapshot(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	plan = judge.All(snap, r.Policy())
	_, err = f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET state = 'completed', app_lock_id = $2 WHERE pulp_id = $1", lost, live)
	require.NoError(t, err)
	_, tasks, err := r.Act(f.Ctx, snap, &plan)
	require.NoError(t, err)
	require.Equal(t, []reaper.Result{reaper.ResultSkipped}, tasks)
	state, _, _, _ := f.TaskRow(lost)
	require.Equal(t, "completed", state)
}

// TestPassIgnoresForeignKeys: keys under the lock prefixes that are not Pulp
// locks are reported and never touched.
func TestPassIgnoresForeignKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rdb := f.Redis.Client
	require.NoError(t, rdb.Set(f.Ctx, "task:not-a-uuid", "cache", 0).Err())
	require.NoError(t, rdb.Set(f.Ctx, "task:"+sim.NewUUID(), "", 0).Err())
	require.NoError(t, rdb.HSet(f.Ctx, "task:"+sim.NewUUID(), "a", "b").Err())
	require.NoError(t, rdb.RPush(f.Ctx, "pulp:resource_lock:"+repo(), "x").Err())
	require.NoError(t, rdb.Set(f.Ctx, "pulp:resource_lock:"+repo(), "bad\x00owner", 0).Err())
	require.NoError(t, rdb.Set(f.Ctx, "unrelated", "x", 0).Err())
	before, err := rdb.DBSize(f.Ctx).Result()
	require.NoError(t, err)

	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Len(t, rep.Ignored, 5)
	require.Empty(t, rep.Findings)
	after, err := rdb.DBSize(f.Ctx).Result()
	require.NoError(t, err)
	// The first pass on a primary records that its cancel signals were
	// checked: the reaper's own key, no foreign one touched.
	require.Equal(t, int64(1), rdb.Exists(f.Ctx, redislocks.SignalsCheckedKey).Val())
	require.Equal(t, before, after-1)
}

// TestPassSkipsWhenLocked: a reaper that does not get the advisory locks
// skips the pass.
func TestPassSkipsWhenLocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Worker("6@dead", time.Hour)
	task := f.Task("running", "", nil, -1)
	f.Acquire("6@dead", task, nil, false)

	conn, err := f.DB.Pool.Acquire(f.Ctx)
	require.NoError(t, err)
	tx, err := conn.Begin(f.Ctx)
	require.NoError(t, err)
	_, err = tx.Exec(f.Ctx, "SELECT pg_advisory_xact_lock(0, 11)") // pulpcore's cleanup runs
	require.NoError(t, err)
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.NotEmpty(t, rep.Skipped)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.Equal(t, "6@dead", f.Get("task:"+task))

	rep = f.pass(f.reaper(func(c *reaper.Config) { c.CoordinateWithPulpcore = false }), reaper.ModeOnce)
	require.Empty(t, rep.Skipped)
	require.Equal(t, "", f.Get("task:"+task))
	require.NoError(t, tx.Rollback(f.Ctx))
	conn.Release()
}

// TestPassLeavesHoldingsOfANewTask: lock values are owner names, so a live
// worker that took a new task between the snapshot and the release may hold
// the same shared resource again, for the new task. The release leaves such
// an owner's resources alone (owner-changed) and the next pass, which sees the
// new task, releases only what is stale.
func TestPassLeavesHoldingsOfANewTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("8@w", time.Second)
	f.Worker("8@x", time.Second)
	f.Worker("8@y", time.Second)
	r1, r2 := repo(), repo()
	leaked := f.Task("completed", live, []string{r1, "shared:" + domain}, 10*time.Minute) // leak path 2
	f.Acquire("8@w", leaked, []string{r1, "shared:" + domain}, false)

	r := f.reaper(nil)
	snap, err := r.ReadSnapshot(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	plan := judge.All(snap, r.Policy())
	// Meanwhile the worker fetches its next task, sharing the domain.
	next := f.Task("running", live, []string{r2, "shared:" + domain}, -1)
	f.Acquire("8@w", next, []string{r2, "shared:" + domain}, false)

	_, _, err = r.Act(f.Ctx, snap, &plan)
	require.NoError(t, err)
	require.Contains(t, f.Members("pulp:resource_lock:"+domain), "8@w", "the new task's shared holding survives")
	require.Equal(t, "8@w", f.Get("pulp:resource_lock:"+r2))
	require.Equal(t, "", f.Get("task:"+leaked), "the stale task lock itself goes")

	// Its task lock gone, the stale exclusive lock is a no-task suspect of a
	// live owner: released once confirmed.
	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, judge.VerdictNoTask, findingFor(rep, "pulp:resource_lock:"+r1, "8@w").Verdict)
	f.ageSuspects(3 * time.Minute)
	f.pass(r, reaper.ModeOnce)
	require.Equal(t, "", f.Get("pulp:resource_lock:"+r1), "a later pass releases the stale exclusive lock")
	require.Contains(t, f.Members("pulp:resource_lock:"+domain), "8@w")
	require.Equal(t, "8@w", f.Get("task:"+next))
}

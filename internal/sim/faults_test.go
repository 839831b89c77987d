package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// oneTask submits one task exclusive on a fresh repository and returns it.
func oneTask(t *testing.T, f *sim.Fleet, b *bundle) string {
	t.Helper()
	ids, err := f.SubmitSpecs(b.ctx, sim.TaskSpec{Exclusive: []string{sim.RepositoryPRN(sim.NewUUID())}})
	require.NoError(t, err)
	return ids[0]
}

// waitFault waits for the first fault of kind and returns it.
func waitFault(t *testing.T, f *sim.Fleet, b *bundle, kind sim.FaultKind) sim.FaultEvent {
	t.Helper()
	ctx, cancel := contextWithTimeout(b, 10*time.Second)
	defer cancel()
	evs, err := f.WaitFaults(ctx, kind, 1)
	require.NoError(t, err)
	return evs[0]
}

// requireLeaked asserts that owner holds the task lock and both resource
// holdings of a oneTask task.
func requireLeaked(t *testing.T, b *bundle, owner, task string) {
	t.Helper()
	require.Equal(t, owner, b.rdb.Get(b.ctx, sim.TaskKey(task)).Val())
	kinds := map[sim.HoldingKind]int{}
	for _, h := range holdingsOf(t, b, owner) {
		kinds[h.Kind]++
	}
	require.Equal(t, map[sim.HoldingKind]int{sim.KindTask: 1, sim.KindExclusive: 1, sim.KindShared: 1}, kinds)
}

func TestFaultLeakBeforeClaimKeepsLocksOfAWaitingTask(t *testing.T) {
	t.Parallel()
	f, b := startFleet(t, testConfig())
	f.Inject(sim.FaultLeakBeforeClaim)
	id := oneTask(t, f, b)
	ev := waitFault(t, f, b, sim.FaultLeakBeforeClaim)
	require.Equal(t, id, ev.Task)

	require.Equal(t, taskInfo{state: sim.StateWaiting}, readTask(t, b, id))
	requireLeaked(t, b, ev.Process, id)
	// The fleet carries on around the leak.
	other := oneTask(t, f, b)
	waitState(t, b, other, sim.StateCompleted)
	require.Equal(t, sim.StateWaiting, readTask(t, b, id).state, "nobody can take a task whose lock is held")
	require.Empty(t, f.Violations())
}

func TestFaultFinalNoReleaseKeepsLocksOfACompletedTask(t *testing.T) {
	t.Parallel()
	f, b := startFleet(t, testConfig())
	f.Inject(sim.FaultFinalNoRelease)
	id := oneTask(t, f, b)
	ev := waitFault(t, f, b, sim.FaultFinalNoRelease)
	require.Equal(t, id, ev.Task)
	ti := readTask(t, b, id)
	require.Equal(t, sim.StateCompleted, ti.state)
	require.Equal(t, ev.Process, ti.appLockName)
	requireLeaked(t, b, ev.Process, id)
	problems, err := sim.CheckConverged(b.ctx, b.rdb, b.pool)
	require.NoError(t, err)
	require.Contains(t, problems, sim.TaskKey(id)+" held by "+ev.Process+": task is completed")

	// Releasing a leak is what a reaper is for: no violation.
	_, err = sim.Release(b.ctx, b.rdb, id, ev.Process, nil, nil)
	require.NoError(t, err)
	waitState(t, b, oneTask(t, f, b), sim.StateCompleted)
	require.Empty(t, f.Violations())
}

func TestFaultSupervisorErrorKeepsLocksOfAFailedTask(t *testing.T) {
	t.Parallel()
	f, b := startFleet(t, testConfig())
	f.Inject(sim.FaultSupervisorError)
	id := oneTask(t, f, b)
	ev := waitFault(t, f, b, sim.FaultSupervisorError)
	require.Equal(t, id, ev.Task)
	ti := readTask(t, b, id)
	require.Equal(t, sim.StateFailed, ti.state)
	require.True(t, ti.hasError)
	requireLeaked(t, b, ev.Process, id)
	require.EqualValues(t, 1, f.Stats().Faults[sim.FaultSupervisorError])
}

func TestFaultCancelPathErrorKeepsLocksOfACanceledTask(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 5*time.Second, 5*time.Second
	f, b := startFleet(t, cfg)
	f.Inject(sim.FaultCancelPathError)
	id := oneTask(t, f, b)
	waitState(t, b, id, sim.StateRunning)
	require.NoError(t, f.Cancel(b.ctx, id))
	ev := waitFault(t, f, b, sim.FaultCancelPathError)
	require.Equal(t, id, ev.Task)
	ti := readTask(t, b, id)
	require.Equal(t, sim.StateCanceled, ti.state)
	require.Equal(t, ev.Process, ti.appLockName)
	requireLeaked(t, b, ev.Process, id)
	require.Zero(t, b.rdb.Exists(b.ctx, sim.CancelKey(id)).Val(), "the worker cleared the request")
}

func TestCancelOfARunningTaskReleasesItsLocks(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 5*time.Second, 5*time.Second
	f, b := startFleet(t, cfg)
	id := oneTask(t, f, b)
	waitState(t, b, id, sim.StateRunning)
	require.NoError(t, f.Cancel(b.ctx, id))
	waitState(t, b, id, sim.StateCanceled)
	waitConverged(t, b)
	require.Empty(t, f.Violations())
	require.EqualValues(t, 1, f.Stats().TasksCanceled)
}

func TestFaultCancelRaceLeavesACanceledTaskLockedByTheWorker(t *testing.T) {
	t.Parallel()
	f, b := startFleet(t, testConfig())
	f.Inject(sim.FaultCancelRace)
	id := oneTask(t, f, b)
	ev := waitFault(t, f, b, sim.FaultCancelRace)
	require.Equal(t, id, ev.Task)
	ti := readTask(t, b, id)
	require.Equal(t, sim.StateCanceled, ti.state)
	require.Equal(t, f.APIs()[0], ti.appLockName, "the API claimed the task to cancel it")
	requireLeaked(t, b, ev.Process, id)
	require.Empty(t, f.SelfReleases(), "nobody released")
	require.Empty(t, f.Violations())
}

// A cancel that releases (the dispatcher's, an operator's) may win the race
// instead of the fault's own, non-releasing cancel: the worker still loses
// its claim to a cancel and records the fault, but the winning cancel took
// the locks, and SelfReleases says so.
func TestCancelRaceWonByAReleasingCancelIsASelfRelease(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 1
	f, b := startFleet(t, cfg)
	// Every statement waits a second, so the fault's cancel, which starts
	// right after the acquire, is still waiting when the test's own cancel,
	// without the wait, runs a little later.
	f.SetDBDelay(time.Second)
	f.Inject(sim.FaultCancelRace)
	id := oneTask(t, f, b)
	var owner string
	require.Eventually(t, func() bool {
		owner = b.rdb.Get(b.ctx, sim.TaskKey(id)).Val()
		return owner != ""
	}, 10*time.Second, time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	f.SetDBDelay(0)
	require.NoError(t, f.Cancel(b.ctx, id))

	ev := waitFault(t, f, b, sim.FaultCancelRace)
	require.Equal(t, id, ev.Task)
	require.Equal(t, owner, ev.Process)
	require.Zero(t, b.rdb.Exists(b.ctx, sim.TaskKey(id)).Val(), "the test's cancel released the task lock")
	rels := f.SelfReleases()
	require.Len(t, rels, 1)
	require.Equal(t, f.APIs()[0], rels[0].By)
	require.Equal(t, owner, rels[0].Owner)
	require.Equal(t, id, rels[0].Task)
	require.Contains(t, rels[0].Keys, sim.TaskKey(id))
	require.Len(t, rels[0].Keys, 3, "the task lock, the repository and the domain membership")
	require.Empty(t, f.Violations())
}

func TestFaultImmediateReleaseKeepsLocksUnderTheAPI(t *testing.T) {
	t.Parallel()
	f, b := startFleet(t, testConfig())
	f.Inject(sim.FaultImmediateRelease)
	id, ran, err := f.RunImmediate(b.ctx, sim.TaskSpec{Exclusive: []string{sim.RepositoryPRN(sim.NewUUID())}})
	require.NoError(t, err)
	require.True(t, ran)
	ev := waitFault(t, f, b, sim.FaultImmediateRelease)
	require.Equal(t, id, ev.Task)
	api := f.APIs()[0]
	require.Equal(t, api, ev.Process)
	ti := readTask(t, b, id)
	require.Equal(t, sim.StateCompleted, ti.state)
	require.True(t, ti.immediate)
	require.Equal(t, api, ti.appLockName)
	requireLeaked(t, b, api, id)
}

func TestImmediateTaskWaitsForAWorkerWhenBlocked(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 300*time.Millisecond, 300*time.Millisecond
	f, b := startFleet(t, cfg)
	repo := sim.RepositoryPRN(sim.NewUUID())
	ids, err := f.SubmitSpecs(b.ctx, sim.TaskSpec{Exclusive: []string{repo}})
	require.NoError(t, err)
	waitState(t, b, ids[0], sim.StateRunning)
	id, ran, err := f.RunImmediate(b.ctx, sim.TaskSpec{Exclusive: []string{repo}})
	require.NoError(t, err)
	require.False(t, ran)
	waitState(t, b, id, sim.StateCompleted)
	require.NotEqual(t, f.APIs()[0], readTask(t, b, id).appLockName, "a worker ran it")
	require.EqualValues(t, 1, f.Stats().ImmediateDeferred)
}

func TestFaultKillLeavesEverythingOfTheWorker(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 300*time.Millisecond, 300*time.Millisecond
	f, b := startFleet(t, cfg)
	f.Inject(sim.FaultKill)
	id := oneTask(t, f, b)
	ev := waitFault(t, f, b, sim.FaultKill)
	require.Equal(t, id, ev.Task)

	ti := readTask(t, b, id)
	switch ev.Detail {
	case "died after acquire":
		require.Equal(t, taskInfo{state: sim.StateWaiting}, ti)
	case "died after claim":
		require.Equal(t, sim.StateWaiting, ti.state)
		require.Equal(t, ev.Process, ti.appLockName)
	case "died while running":
		require.Equal(t, sim.StateRunning, ti.state)
		require.Equal(t, ev.Process, ti.appLockName)
	default:
		t.Fatalf("unexpected kill step %q", ev.Detail)
	}
	requireLeaked(t, b, ev.Process, id)
	requireNotOnline(t, b, ev.Process, cfg.WorkerTTL)
	require.Contains(t, processes(f), sim.ProcessInfo{Name: ev.Process, AppType: sim.AppTypeWorker, Alive: false, Incarnation: 1, AppStatusID: appStatusID(t, b, ev.Process)})
}

// requireNotOnline waits until the name's row is past its ttl and checks that
// it stays there: a killed process must never beat again.
func requireNotOnline(t *testing.T, b *bundle, name string, ttl time.Duration) {
	t.Helper()
	online := func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT count(*) FROM core_appstatus WHERE name = $1 AND last_heartbeat >= now() - ttl`, name).Scan(&n))
		return n > 0
	}
	require.Eventually(t, func() bool { return !online() }, ttl+2*time.Second, 50*time.Millisecond)
	time.Sleep(ttl / 2)
	require.False(t, online())
}

func appStatusID(t *testing.T, b *bundle, name string) string {
	t.Helper()
	var id string
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT pulp_id::text FROM core_appstatus WHERE name = $1 ORDER BY pulp_created DESC LIMIT 1`, name).Scan(&id))
	return id
}

func processes(f *sim.Fleet) []sim.ProcessInfo { return f.Processes() }

func TestKillAndRestartUnderTheSameName(t *testing.T) {
	t.Parallel()
	for _, releaseOwn := range []bool{false, true} {
		t.Run(map[bool]string{false: "reaper cleans up", true: "restart releases own locks"}[releaseOwn], func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.Workers = 1
			cfg.MinTaskDuration, cfg.MaxTaskDuration = 5*time.Second, 5*time.Second
			cfg.RestartReleasesOwnLocks = releaseOwn
			f, b := startFleet(t, cfg)
			id := oneTask(t, f, b)
			waitState(t, b, id, sim.StateRunning)
			worker := f.Workers()[0]
			oldRow := appStatusID(t, b, worker)
			require.NoError(t, f.Kill(worker))
			require.Error(t, f.Kill(worker), "a dead process cannot die again")

			require.NoError(t, f.Restart(b.ctx, worker))
			newRow := appStatusID(t, b, worker)
			require.NotEqual(t, oldRow, newRow)
			var rows int
			require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM core_appstatus WHERE name = $1`, worker).Scan(&rows))
			require.Equal(t, 2, rows, "the dead row stays beside the new one")
			ti := readTask(t, b, id)
			require.Equal(t, sim.StateRunning, ti.state, "the lost task stays running under the dead row")
			require.Equal(t, oldRow, ti.appLock)
			if releaseOwn {
				require.Empty(t, holdingsOf(t, b, worker))
			} else {
				requireLeaked(t, b, worker, id)
			}
			// The new incarnation works.
			next := oneTask(t, f, b)
			waitState(t, b, next, sim.StateRunning)
			require.Equal(t, newRow, readTask(t, b, next).appLock)
		})
	}
}

func TestHeartbeatDelayWithinGraceIsNotAViolationUntilSomeoneReleases(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 1
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 10*time.Second, 10*time.Second
	f, b := startFleet(t, cfg)
	id := oneTask(t, f, b)
	waitState(t, b, id, sim.StateRunning)
	worker := f.Workers()[0]
	require.NoError(t, f.DelayHeartbeat(worker, cfg.WorkerTTL+cfg.HeartbeatGrace/2))
	requireLate(t, b, worker)
	require.Empty(t, f.Violations())

	// A reaper that releases a late worker's locks is wrong.
	_, err := sim.Release(b.ctx, b.rdb, id, worker, nil, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(f.Violations()) > 0 }, 2*time.Second, 10*time.Millisecond)
	v := f.Violations()[0]
	require.Equal(t, worker, v.Worker)
	require.Equal(t, sim.TaskKey(id), v.Key)
	require.Equal(t, id, v.Task)
	require.Equal(t, "execute", v.Step)
	require.Len(t, f.Violations(), 1, "one loss is one finding")
}

func requireLate(t *testing.T, b *bundle, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var late bool
		require.NoError(t, b.pool.QueryRow(b.ctx,
			`SELECT bool_and(last_heartbeat < now() - ttl) FROM core_appstatus WHERE name = $1`, name).Scan(&late))
		return late
	}, 5*time.Second, 20*time.Millisecond)
}

func TestLosingLocksAfterTheGraceIsExcused(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 1
	cfg.WorkerTTL, cfg.HeartbeatGrace = time.Second, 500*time.Millisecond
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 10*time.Second, 10*time.Second
	f, b := startFleet(t, cfg)
	id := oneTask(t, f, b)
	waitState(t, b, id, sim.StateRunning)
	worker := f.Workers()[0]
	require.NoError(t, f.DelayHeartbeat(worker, time.Minute))
	// Dead by the reaper's rule: last heartbeat older than ttl + grace.
	time.Sleep(cfg.WorkerTTL + cfg.HeartbeatGrace + 200*time.Millisecond)
	_, err := sim.Release(b.ctx, b.rdb, id, worker, nil, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.Stats().Excused > 0 }, 2*time.Second, 10*time.Millisecond)
	require.Empty(t, f.Violations())
}

func TestSlowDatabaseSlowsButCompletes(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.DBDelay = 5 * time.Millisecond
	f, b := startFleet(t, cfg)
	f.SetDBDelay(20 * time.Millisecond)
	f.Inject(sim.FaultSlowDB)
	ids, err := f.Submit(b.ctx, 5)
	require.NoError(t, err)
	for _, id := range ids {
		waitState(t, b, id, sim.StateCompleted)
	}
	waitFault(t, f, b, sim.FaultSlowDB)
	require.Empty(t, f.Violations())
}

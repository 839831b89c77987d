package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

func TestSmallFleetRunsEveryTaskWithoutViolations(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Repositories = 4 // contention: tasks queue behind each other's locks
	cfg.SharedRepoFraction = 0.3
	cfg.DomainExclusiveFraction = 0.05
	f, b := startFleet(t, cfg)

	ids, err := f.Submit(b.ctx, 30)
	require.NoError(t, err)
	require.Len(t, ids, 30)

	states := waitAllFinal(t, b, 30)
	require.Equal(t, map[string]int{sim.StateCompleted: 30}, states)
	waitConverged(t, b)
	hs, err := sim.ScanHoldings(b.ctx, b.rdb)
	require.NoError(t, err)
	require.Empty(t, hs, "every lock is released")

	f.Stop()
	require.Empty(t, f.Violations())
	st := f.Stats()
	require.EqualValues(t, 30, st.TasksCreated)
	require.EqualValues(t, 30, st.TasksCompleted)
	require.EqualValues(t, 30, st.Released)
	require.Zero(t, st.Errors)
	require.Positive(t, st.Checks)
}

func TestFleetDispatchesImmediateTasksAndCancels(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ImmediateInTransaction = true
	cfg.Dispatch = sim.DispatchConfig{Rate: 200, ImmediateFraction: 0.3, CancelRate: 20}
	f, b := startFleet(t, cfg)

	require.Eventually(t, func() bool {
		st := f.Stats()
		return st.TasksCreated >= 60 && st.ImmediateRun >= 5 && st.TasksCanceled >= 3
	}, 15*time.Second, 20*time.Millisecond, "dispatcher too slow: %+v", f.Stats())
	require.NoError(t, f.SetDispatch(sim.DispatchConfig{}))
	created := f.Stats().TasksCreated
	// Immediate tasks still in flight may land after the rate went to zero.
	require.Eventually(t, func() bool {
		states, err := sim.TaskStates(b.ctx, b.pool)
		require.NoError(t, err)
		total, final := 0, 0
		for s, n := range states {
			total += n
			if sim.FinalState(s) {
				final += n
			}
		}
		return total >= int(created) && final == total
	}, 20*time.Second, 20*time.Millisecond)
	waitConverged(t, b)
	f.Stop()
	require.Empty(t, f.Violations())
	require.Zero(t, f.Stats().Errors)
}

func TestStopIsIdempotentAndEndsEveryGoroutine(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Dispatch.Rate = 100
	f, b := startFleet(t, cfg)
	time.Sleep(100 * time.Millisecond)
	f.Stop()
	f.Stop()
	// A statement the server received before Stop may still commit.
	time.Sleep(200 * time.Millisecond)

	// Nothing moves after Stop: no heartbeat, no task change.
	snapshot := func() (int, string) {
		var n int
		var beats string
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*), (SELECT string_agg(last_heartbeat::text, ',' ORDER BY pulp_id) FROM core_appstatus)
FROM core_task WHERE state = 'completed'`).Scan(&n, &beats))
		return n, beats
	}
	n1, b1 := snapshot()
	time.Sleep(cfg.WorkerTTL/3 + 200*time.Millisecond)
	n2, b2 := snapshot()
	require.Equal(t, n1, n2)
	require.Equal(t, b1, b2)
	require.Error(t, f.Restart(b.ctx, f.Workers()[0]))
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	for _, cfg := range []sim.Config{
		{Workers: -1},
		{MinTaskDuration: time.Second, MaxTaskDuration: time.Millisecond},
		{SharedRepoFraction: 0.8, DomainExclusiveFraction: 0.5},
		{DomainID: "default"},
		{Faults: sim.FaultRates{Kill: 1.5}},
		{Dispatch: sim.DispatchConfig{Rate: -1}},
	} {
		_, err := sim.New(b.rdb, b.pool, cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestLateWorkerStopsOnTheReapersCancelSignal: a worker whose heartbeat is
// late past ttl + grace but which is still running its task loses its locks
// and its task to a pass, as the contract says; the pass also sets pulpcore's
// cancel signal, which the worker finds on its next check and stops the task
// (clearing the signal), instead of running on beside the next holder.
func TestLateWorkerStopsOnTheReapersCancelSignal(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 1
	cfg.WorkerTTL, cfg.HeartbeatGrace = time.Second, 500*time.Millisecond
	cfg.MinTaskDuration, cfg.MaxTaskDuration = time.Minute, time.Minute
	f, b := startFleet(t, cfg)
	id := oneTask(t, f, b)
	waitState(t, b, id, sim.StateRunning)
	worker := f.Workers()[0]
	require.NoError(t, f.DelayHeartbeat(worker, time.Hour))
	time.Sleep(cfg.WorkerTTL + cfg.HeartbeatGrace + 300*time.Millisecond)

	rc := reaper.DefaultConfig()
	rc.HeartbeatRecheck = testenv.HeartbeatRecheck
	rc.HeartbeatGrace = cfg.HeartbeatGrace
	r, err := reaper.New(rc, b.rdb, b.pool, nil)
	require.NoError(t, err)
	rep, err := r.RunOnce(b.ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	// The signal is published before the task's update, so the worker may
	// stop the task and write it canceled first: the pass's conditional
	// update then loses the race, changes nothing and says so (skipped).
	require.Len(t, rep.Tasks, 1)
	require.Contains(t, []reaper.Result{reaper.ResultUpdated, reaper.ResultSkipped}, rep.Tasks[0].Result, "%+v", rep.Tasks)

	require.Eventually(t, func() bool { return f.Stats().StoppedOnSignal == 1 }, 5*time.Second, 10*time.Millisecond,
		"the late worker never stopped its task")
	require.Eventually(t, func() bool {
		err := b.rdb.Get(b.ctx, sim.CancelKey(id)).Err()
		return errors.Is(err, redis.Nil)
	}, 5*time.Second, 10*time.Millisecond, "the worker clears the signal it acted on")
	require.Equal(t, sim.StateCanceled, readTask(t, b, id).state)
	require.Empty(t, f.Violations())
}

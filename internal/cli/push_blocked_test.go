package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestOncePushesBlockedTasks: `once` pushes the waiting tasks its pass left
// blocked and the oldest blocked wait, as the status page's view of the pass
// counts them: with max_releases 1 the pass releases one holding and leaves
// the rest of the dead worker's locks in the queue's way. A pass that
// releases them all pushes 0, and a failed pass pushes neither, so that the
// Pushgateway keeps the numbers of the last completed one.
func TestOncePushesBlockedTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentOf20260724()
	spec.DeadTaskLocks, spec.DeadResourceLocks, spec.QueuedTasks = 40, 30, 12
	spec.DeadRunning, spec.DeadClaimed = 2, 1
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	stop := inc.KeepAliveInBackground(context.WithoutCancel(ctx), db.Pool)
	t.Cleanup(func() { _ = stop() })
	gw := newFakePushgateway(t)
	env := servicesEnv(r, db)
	env["REAPER_PUSHGATEWAY_URL"] = gw.url()

	limited := servicesEnv(r, db)
	limited["REAPER_PUSHGATEWAY_URL"] = gw.url()
	limited["REAPER_MAX_RELEASES"] = "1"
	_, _, stderr := run(t, limited, "once")
	pushes := gw.received()
	require.Len(t, pushes, 1, stderr)
	p := pushes[0].samples
	require.Equal(t, 1.0, p[`lock_reaper_passes_total{result="guarded"}`], "max-releases held work back")
	require.Positive(t, p["lock_reaper_blocked_tasks"], "the dead worker's locks still block the queue")
	require.Positive(t, p["lock_reaper_oldest_blocked_wait_seconds"])

	_, _, stderr = run(t, env, "once")
	pushes = gw.received()
	require.Len(t, pushes, 2, stderr)
	require.Equal(t, 0.0, pushes[1].samples["lock_reaper_blocked_tasks"], "the pass released every stale lock in the queue's way")
	require.Contains(t, pushes[1].samples, "lock_reaper_blocked_tasks")
	require.Equal(t, 0.0, pushes[1].samples["lock_reaper_oldest_blocked_wait_seconds"])
	require.Contains(t, pushes[1].samples, "lock_reaper_oldest_blocked_wait_seconds")

	failing := servicesEnv(r, db)
	failing["REAPER_PUSHGATEWAY_URL"] = gw.url()
	failing["REAPER_REDIS_URL"] = "redis://" + closedAddr(t) + "/0"
	failing["REAPER_REDIS_TIMEOUT"] = "1s"
	_, _, stderr = run(t, failing, "once")
	pushes = gw.received()
	require.Len(t, pushes, 3, stderr)
	require.NotContains(t, pushes[2].samples, "lock_reaper_blocked_tasks")
	require.NotContains(t, pushes[2].samples, "lock_reaper_oldest_blocked_wait_seconds")
}

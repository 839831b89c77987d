package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestCancelSignalForFinishedRunningTasks: a pass that cancels (or fails) a
// running or canceling task of a dead worker sets pulpcore's cancel signal
// for it (key, value and 24-hour expiry as publish_cancel_signal sets them);
// a waiting task it requeues, and a task whose update lost a race, get none.
func TestCancelSignalForFinishedRunningTasks(t *testing.T) {
	t.Parallel()
	require.Equal(t, sim.CancelKeyPrefix, redislocks.CancelSignalPrefix, "the simulator's workers poll the same key")
	for _, lost := range []string{judge.StateCanceled, judge.StateFailed} {
		t.Run(lost, func(t *testing.T) {
			f := newFixture(t)
			dead := f.Worker("1@dead", time.Hour)
			running := f.Task(judge.StateRunning, dead, []string{"repo-a"}, -1)
			canceling := f.Task(judge.StateCanceling, dead, []string{"repo-b"}, -1)
			waiting := f.Task(judge.StateWaiting, dead, []string{"repo-c"}, -1)
			raced := f.Task(judge.StateRunning, dead, []string{"repo-d"}, -1)
			for id, r := range map[string]string{running: "repo-a", canceling: "repo-b", waiting: "repo-c", raced: "repo-d"} {
				f.Acquire("1@dead", id, []string{r}, false)
			}
			rep, err := f.reaper(func(c *reaper.Config) { c.LostRunning = lost }).RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
				// The task finishes after the snapshot: the update is skipped.
				_, err := f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET state = 'completed' WHERE pulp_id = $1", raced)
				require.NoError(t, err)
			})
			require.NoError(t, err)
			require.Equal(t, reaper.ResultSkipped, taskFindingFor(rep, raced).Result)
			for _, id := range []string{running, canceling} {
				require.Equal(t, "cancel", f.Get(redislocks.CancelSignalPrefix+id), id)
				ttl := f.Redis.Client.TTL(f.Ctx, redislocks.CancelSignalPrefix+id).Val()
				require.InDelta(t, (24 * time.Hour).Seconds(), ttl.Seconds(), 60)
			}
			for _, id := range []string{waiting, raced} {
				require.Zero(t, f.Redis.Client.Exists(f.Ctx, redislocks.CancelSignalPrefix+id).Val(), id)
			}
		})
	}
}

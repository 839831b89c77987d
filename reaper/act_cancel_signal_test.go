package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestCancelSignalForFinishedRunningTasks: a pass that cancels (or fails) a
// running or canceling task of a dead worker sets pulpcore's cancel signal
// for it (key, value and 24-hour expiry as publish_cancel_signal sets them),
// before it updates the task; a waiting task it requeues gets none. A task
// whose update then lost a race (it ended meanwhile) got its signal too,
// which no worker reads and which expires.
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
			for _, id := range []string{running, canceling, raced} {
				require.Equal(t, "cancel", f.Get(redislocks.CancelSignalPrefix+id), id)
				ttl := f.Redis.Client.TTL(f.Ctx, redislocks.CancelSignalPrefix+id).Val()
				require.InDelta(t, (24 * time.Hour).Seconds(), ttl.Seconds(), 60)
			}
			for _, id := range []string{waiting} {
				require.Zero(t, f.Redis.Client.Exists(f.Ctx, redislocks.CancelSignalPrefix+id).Val(), id)
			}
		})
	}
}

// TestCancelSignalSurvivesAStopAtEachStep: the pass stops (a kill, a lost
// connection) at each step of a task batch: before its cancel signals,
// between the signals and the update, after the update. Whatever the step,
// once a later pass has run every canceled running task has its signal and
// no task is left running: a signal is never lost with the stop.
func TestCancelSignalSurvivesAStopAtEachStep(t *testing.T) {
	t.Parallel()
	errStop := errors.New("stopped")
	for _, step := range []string{"before the signals", "between the signals and the update", "after the update"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			dead := f.Worker("1@dead", time.Hour)
			var running []string
			for i := range 3 {
				r := fmt.Sprintf("repo-stop-%d", i)
				id := f.Task(judge.StateRunning, dead, []string{r}, -1)
				f.Acquire("1@dead", id, []string{r}, false)
				running = append(running, id)
			}
			proxy := f.postgresProxy()
			stopped := false
			hook := sfHook{before: func(cmd redis.Cmder) {
				if cmd.Name() != "setex" || stopped {
					return
				}
				switch step {
				case "before the signals":
					stopped = true
					cmd.SetErr(errStop)
				case "between the signals and the update":
					stopped = true
					proxy.Refuse()
					proxy.Cut()
				}
			}}
			rdb := f.redisClient("", stopHook{hook, errStop})
			r := f.reaperOn(rdb, f.reaperPool(proxy.Addr(), nil), nil)
			rep, _ := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
			for _, id := range running {
				state, _, _, _ := f.TaskRow(id)
				signal := f.Redis.Client.Exists(f.Ctx, redislocks.CancelSignalPrefix+id).Val() == 1
				require.True(t, state == judge.StateRunning || signal, "%s: canceled without a signal (%s)", id, rep.Error)
			}
			proxy.Admit()
			f.awaitPassLockFree()
			f.pass(f.reaper(nil), reaper.ModeOnce)
			for _, id := range running {
				state, _, _, _ := f.TaskRow(id)
				require.Equal(t, judge.StateCanceled, state, id)
				require.Equal(t, "cancel", f.Get(redislocks.CancelSignalPrefix+id), id)
			}
		})
	}
}

// stopHook fails a command whose before hook set errStop, without sending
// it: the pass stops there as a killed one would.
type stopHook struct {
	sfHook
	errStop error
}

func (h stopHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return h.sfHook.ProcessHook(func(ctx context.Context, cmd redis.Cmder) error {
		if errors.Is(cmd.Err(), h.errStop) {
			return h.errStop
		}
		return next(ctx, cmd)
	})
}

func (h stopHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return h.sfHook.ProcessPipelineHook(func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if errors.Is(c.Err(), h.errStop) {
				return h.errStop
			}
		}
		return next(ctx, cmds)
	})
}

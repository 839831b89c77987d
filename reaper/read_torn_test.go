package reaper_test

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/stretchr/testify/require"
)

// TestTornReadImmediateTaskStartsDuringAPass reproduces the race of an
// immediate task that pulpcore starts while a pass is between its Redis read
// and its database read: the task takes task:<T> as immediate-<T> (with its
// resource and registry entries), then its row goes running with
// app_lock_id NULL. The pass saw no lock and then sees a running task with no
// claim; it must not cancel it. Many times, each with a fresh task, beside a
// dead worker's lost task that must still be canceled.
func TestTornReadImmediateTaskStartsDuringAPass(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.reaper(nil)
	dead := f.Worker("1@dead", time.Hour)
	for i := range 25 {
		lost := f.Task(judge.StateRunning, dead, []string{"repo-lost"}, -1)
		immediate := f.Task(judge.StateWaiting, "", []string{"repo-imm"}, -1)
		owner := judge.ImmediateOwnerPrefix + immediate
		started := false
		rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce, Phase: func(phase string, _, _ int) {
			if phase != reaper.PhaseReadingDatabase || started {
				return
			}
			started = true
			f.Acquire(owner, immediate, []string{"repo-imm"}, false)
			_, err := f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET state = 'running' WHERE pulp_id = $1", immediate)
			require.NoError(t, err)
		}})
		require.NoError(t, err)
		require.True(t, started)
		state, _, _, _ := f.TaskRow(immediate)
		require.Equal(t, judge.StateRunning, state, "trial %d: the immediate task was %s while it ran", i, state)
		require.Equal(t, owner, f.Get(judge.TaskKeyPrefix+immediate), "trial %d: its task lock is kept", i)
		require.Nil(t, taskFindingFor(rep, immediate))
		state, _, _, _ = f.TaskRow(lost)
		require.Equal(t, judge.StateCanceled, state, "trial %d: the dead worker's task is still lost", i)

		// The immediate task ends as pulpcore ends it, before the next trial.
		_, err = f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET state = 'completed', finished_at = now() WHERE pulp_id = $1", immediate)
		require.NoError(t, err)
		require.NoError(t, f.Redis.Client.Del(f.Ctx, judge.TaskKeyPrefix+immediate, judge.ResourceKeyPrefix+"repo-imm", redislocks.OwnerLocksPrefix+owner).Err())
		require.NoError(t, f.Redis.Client.SRem(f.Ctx, redislocks.ActiveOwnersKey, owner).Err())
	}
}

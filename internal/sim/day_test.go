package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// An old worker claims a task that needs a newer plugin, releases its locks
// and keeps the claim (stranded); an API's cancel of it then leaves it
// canceling for good (stuck-canceling), as pulpcore's cancel_task does.
func TestTooOldWorkerStrandsTheTaskAndACancelSticks(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers, cfg.APIs = 1, 1
	cfg.WorkerVersions = sim.Versions{"core": "3.115.0", "file": "1.11.0"}
	f, b := startFleet(t, cfg)
	f.SetTaskVersions(sim.Versions{"core": "3.115.0", "file": "1.12.0"})
	ids, err := f.Submit(b.ctx, 1)
	require.NoError(t, err)
	evs, err := f.WaitFaults(b.ctx, sim.FaultStranded, 1)
	require.NoError(t, err)
	require.Equal(t, ids[0], evs[0].Task)
	ti := readTask(t, b, ids[0])
	require.Equal(t, sim.StateWaiting, ti.state)
	require.Equal(t, f.Workers()[0], ti.appLockName, "the claim stays")
	// Eventually: on a loaded machine the worker may restart under its name
	// (a heartbeat write that failed), and its new incarnation, which has
	// not ignored the task yet, takes the locks again before it strands it.
	require.Eventually(t, func() bool { return len(holdingsOf(t, b, f.Workers()[0])) == 0 }, 10*time.Second, cfg.PollInterval,
		"its locks are released")

	require.NoError(t, f.Cancel(b.ctx, ids[0]))
	canceled, err := f.WaitFaults(b.ctx, sim.FaultCancelClaimed, 1)
	require.NoError(t, err)
	require.Equal(t, ids[0], canceled[0].Task, "the cancel of a claimed task is recorded, for the time it became canceling")
	time.Sleep(10 * cfg.PollInterval) // the old worker never runs it
	require.Equal(t, sim.StateCanceling, readTask(t, b, ids[0]).state)

	// A new worker runs what an old one cannot (the old one goes first, so
	// that it cannot strand the next task too).
	killed, err := f.Terminate(f.Workers()[0], 10*time.Second)
	require.NoError(t, err)
	require.False(t, killed)
	newer, err := f.AddWorkerWithVersions(b.ctx, sim.Versions{"core": "3.116.0", "file": "1.12.0"})
	require.NoError(t, err)
	more, err := f.Submit(b.ctx, 1)
	require.NoError(t, err)
	waitState(t, b, more[0], sim.StateCompleted)
	require.Empty(t, holdingsOf(t, b, newer))
	require.Empty(t, f.Violations())
	require.Zero(t, f.Stats().Errors)
}

func TestCompatible(t *testing.T) {
	t.Parallel()
	have := sim.Versions{"core": "3.116.0", "file": "1.12"}
	require.True(t, sim.Compatible(have, nil))
	require.True(t, sim.Compatible(have, sim.Versions{"core": "3.116", "file": "1.12.0"}))
	require.False(t, sim.Compatible(have, sim.Versions{"file": "1.12.1"}))
	require.False(t, sim.Compatible(have, sim.Versions{"rpm": "1.0"}), "a missing label")
	require.False(t, sim.Compatible(sim.Versions{"core": "3.x"}, sim.Versions{"core": "3.0"}), "unparsable counts as too old")
}

// SIGTERM lets a short task finish and the row go; a task that outlives the
// grace period takes SIGKILL, and its row, claim and locks stay.
func TestTerminateWaitsForTheTaskThenKills(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 1
	cfg.MinTaskDuration, cfg.MaxTaskDuration = time.Minute, time.Minute
	f, b := startFleet(t, cfg)
	ids, err := f.Submit(b.ctx, 1)
	require.NoError(t, err)
	waitState(t, b, ids[0], sim.StateRunning)
	worker := f.Workers()[0]
	killed, err := f.Terminate(worker, 200*time.Millisecond)
	require.NoError(t, err)
	require.True(t, killed, "the task outlived the grace period")
	require.Equal(t, sim.StateRunning, readTask(t, b, ids[0]).state)
	require.NotEmpty(t, holdingsOf(t, b, worker))

	cfg.MinTaskDuration, cfg.MaxTaskDuration = 10*time.Millisecond, 10*time.Millisecond
	g, c := startFleet(t, cfg)
	idle := g.Workers()[0]
	killed, err = g.Terminate(idle, 10*time.Second)
	require.NoError(t, err)
	require.False(t, killed)
	var rows int
	require.NoError(t, c.pool.QueryRow(c.ctx, `SELECT count(*) FROM core_appstatus WHERE name = $1`, idle).Scan(&rows))
	require.Zero(t, rows, "a worker that shuts down deletes its row")
	require.Empty(t, f.Violations())
	require.Empty(t, g.Violations())
}

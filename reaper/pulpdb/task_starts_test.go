package pulpdb

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestReadTaskStarts: when each task asked of started, for those that
// have; none asked of reads nothing. (Without the optional grant:
// TestLeastPrivilegeRole.)
func TestReadTaskStarts(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 0)
	started := f.Task(judge.StateRunning, w, nil, -1)
	notStarted := f.Task(judge.StateWaiting, "", nil, -1)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET started_at = now() - interval '90 seconds' WHERE pulp_id = $1`, started)
	require.NoError(t, err)

	before := dbNow(t, f)
	starts, granted, err := ReadTaskStarts(f.Ctx, f.DB.Pool, testTimeout, []string{started, notStarted, sim.NewUUID()})
	require.NoError(t, err)
	require.True(t, granted)
	require.Len(t, starts, 1)
	require.InDelta(t, 90, before.Sub(starts[started]).Seconds(), 2)

	starts, granted, err = ReadTaskStarts(f.Ctx, f.DB.Pool, testTimeout, nil)
	require.NoError(t, err)
	require.True(t, granted)
	require.Nil(t, starts)
}

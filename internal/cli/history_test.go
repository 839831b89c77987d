package cli

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/history"
)

// TestPassesRecordedInHistory: `once` and `release` record each pass in the
// history of passes, newest first; an audit, `once --dry-run` and
// `release --dry-run` record nothing.
func TestPassesRecordedInHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, sim.IncidentSpec{DeadTaskLocks: 6, DeadResourceLocks: 4, DeadRunning: 2, LiveWorkers: 2})
	require.NoError(t, err)
	env := servicesEnv(r, db)
	passes := func() []history.Entry {
		t.Helper()
		got, err := history.Recent(ctx, r.Client, history.DefaultPrefix, time.Time{}, 0)
		require.NoError(t, err)
		return got
	}

	for _, args := range [][]string{{"audit"}, {"once", "--dry-run"}, {"release", "--owner", inc.DeadOwner, "--dry-run"}} {
		code, _, stderr := run(t, env, args...)
		require.NotEqual(t, exitcode.Failed, code, stderr)
	}
	require.Empty(t, passes(), "dry runs are not recorded")

	code, _, stderr := run(t, env, "once")
	require.Equal(t, exitcode.OK, code, stderr)
	got := passes()
	require.Len(t, got, 1)
	require.Equal(t, "once", got[0].Mode)
	require.Equal(t, len(inc.Stale), got[0].Released)
	require.Equal(t, len(inc.Stale), got[0].Stale)
	require.Equal(t, len(inc.Cancel)+len(inc.Requeue), got[0].Updated, "the dead worker's tasks")
	require.Empty(t, got[0].Guards)
	require.Empty(t, got[0].Error)
	require.False(t, got[0].At.IsZero())

	code, _, stderr = run(t, env, "release", "--owner", inc.DeadOwner, "--yes")
	require.NotEqual(t, exitcode.Failed, code, stderr)
	got = passes()
	require.Len(t, got, 2)
	require.Equal(t, "release", got[0].Mode, "newest first")
	require.Equal(t, "once", got[1].Mode)
	require.Zero(t, got[0].Released, "the once pass released everything already")
}

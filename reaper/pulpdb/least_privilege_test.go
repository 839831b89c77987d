package pulpdb

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestLeastPrivilegeRole: every read and write of this package works as a
// role granted exactly what the documentation grants (internal/privilege),
// and without the optional grants the reads that use them go on, knowing
// less: no task's start, no other session's transaction age. Roles belong
// to the whole server, so this runs on a server the test starts.
func TestLeastPrivilegeRole(t *testing.T) {
	t.Parallel()
	primary := pgcluster.StartPrimary(t)
	primary.Exec(t, "postgres", "CREATE DATABASE pulp")
	primary.Exec(t, "pulp", pulpschema.SQL)
	f := &passtest.Fixture{T: t, Ctx: context.Background(), DB: primaryDatabase(t, primary.URL("pulp"))}
	role := "lr_least_" + strings.ReplaceAll(sim.NewUUID()[:8], "-", "")
	primary.Exec(t, "pulp", privilege.PostgresSQLFor(role, "unused-with-trust"))
	u, err := url.Parse(primary.URL("pulp"))
	require.NoError(t, err)
	u.User = url.User(role)
	asRole := u.String()

	w := f.Worker("1@w", 10*time.Minute)
	f.Worker("2@w", 0)
	lostTask := f.Task(judge.StateRunning, w, []string{"repo-1", "shared:dom"}, -1)
	f.ProgressReport(lostTask, "running")
	orphaned := f.Task(judge.StateWaiting, w, []string{"shared:dom"}, -1)
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET started_at = now() WHERE pulp_id = $1`, lostTask)
	require.NoError(t, err)
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET versions = hstore('file', '1.12.0') WHERE pulp_id = $1`, orphaned)
	require.NoError(t, err)
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET versions = hstore('file', '1.11.0') WHERE pulp_id = $1`, w)
	require.NoError(t, err)

	t.Run("the grants", func(t *testing.T) {
		pool := poolOf(t, asRole, nil)
		snap, err := ReadSnapshot(f.Ctx, pool, testTimeout, TaskRefs{})
		require.NoError(t, err)
		require.Nil(t, snap.NotWritable)
		require.Len(t, snap.AppStatuses, 2)
		require.Contains(t, snap.Tasks, lostTask)
		require.True(t, snap.Versions, "the optional grant on core_task.versions")
		require.Equal(t, map[string]string{"file": "1.12.0"}, snap.Tasks[orphaned].Versions)
		for _, r := range snap.AppStatuses {
			if r.ID == w {
				require.Equal(t, map[string]string{"file": "1.11.0"}, r.Versions)
			}
		}
		_, err = ReadHeartbeats(f.Ctx, pool, testTimeout)
		require.NoError(t, err)

		l, got, err := AcquirePassLock(f.Ctx, pool, testTimeout, true)
		require.NoError(t, err)
		require.True(t, got)
		defer l.Release()
		require.NoError(t, CheckSecondConnection(f.Ctx, pool, testTimeout))
		_, err = ReadSharedCheck(f.Ctx, pool, testTimeout, []string{"dom"}, []string{"1@w"}, time.Second, nil,
			func([]judge.OpenWrite, time.Time) bool { return false })
		require.NoError(t, err)
		done, err := (&TaskUpdater{Pool: pool, Timeout: testTimeout, Log: passtest.Logger()}).UpdateBatch(f.Ctx, []judge.TaskJudgement{
			lost(lostTask, w, judge.StateRunning, judge.StateCanceled),
			{ID: orphaned, Verdict: judge.VerdictOrphanedClaim, AppLockID: w, StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, ClearClaim: true},
		})
		require.NoError(t, err)
		require.Equal(t, []bool{true, true}, done)

		_, err = ReadExplainedTask(f.Ctx, pool, testTimeout, orphaned)
		require.NoError(t, err)
		_, _, err = ReadWaitingTasks(f.Ctx, pool, testTimeout, 10)
		require.NoError(t, err)
		finished, _, _, err := ReadFinishedByReaper(f.Ctx, pool, testTimeout, "", 10)
		require.NoError(t, err)
		require.Equal(t, []string{lostTask}, finishedIDs(finished))
		starts, granted, err := ReadTaskStarts(f.Ctx, pool, testTimeout, []string{lostTask})
		require.NoError(t, err)
		require.True(t, granted)
		require.Len(t, starts, 1)

		_, end := openWrite(t, f.DB.Pool, orphaned)
		defer end()
		ws, _, err := ReadOpenTaskWrites(f.Ctx, pool, testTimeout)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.NotNil(t, ws[0].Age, "pg_read_all_stats shows another role's transaction")
	})

	t.Run("without the optional grants", func(t *testing.T) {
		primary.Exec(t, "pulp", "REVOKE SELECT (started_at, versions) ON core_task FROM "+pgx.Identifier{role}.Sanitize()+
			"; REVOKE pg_read_all_stats FROM "+pgx.Identifier{role}.Sanitize())
		pool := poolOf(t, asRole, nil)
		snap, err := ReadSnapshot(f.Ctx, pool, testTimeout, TaskRefs{})
		require.NoError(t, err, "the snapshot goes on without the versions")
		require.False(t, snap.Versions)
		starts, granted, err := ReadTaskStarts(f.Ctx, pool, testTimeout, []string{lostTask})
		require.NoError(t, err)
		require.False(t, granted)
		require.Nil(t, starts)

		pid, end := openWrite(t, f.DB.Pool, orphaned)
		defer end()
		ws, _, err := ReadOpenTaskWrites(f.Ctx, pool, testTimeout)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.Equal(t, pid, ws[0].PID, "pg_locks shows every session")
		require.Nil(t, ws[0].Age, "another role's transaction start is hidden")
	})
}

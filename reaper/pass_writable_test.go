package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// clusterFixture is a fixture whose database is pulpcore's schema in a
// throwaway primary started for the test.
func clusterFixture(t *testing.T) (*fixture, *pgcluster.Cluster) {
	t.Helper()
	primary := pgcluster.StartPrimary(t)
	primary.Exec(t, "postgres", "CREATE DATABASE pulp")
	primary.Exec(t, "pulp", pulpschema.SQL)
	db := &testenv.Database{URL: primary.URL("pulp"), Name: "pulp", Pool: openPool(t, primary.URL("pulp"))}
	return &fixture{&passtest.Fixture{T: t, Ctx: context.Background(), Redis: testenv.NewRedis(t), DB: db}}, primary
}

func openPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// deadWorkerFleet is what a pass on a writable primary acts on at once: a
// worker dead for ten minutes, its running task and its locks.
func deadWorkerFleet(f *fixture) (taskID string) {
	w := f.Worker("dead@host", 10*time.Minute)
	taskID = f.Task(judge.StateRunning, w, []string{"repo-1", "shared:domain"}, -1)
	f.Acquire("dead@host", taskID, []string{"repo-1", "shared:domain"}, false)
	return taskID
}

// requireNoWrites runs a pass against pool and checks that it fails with
// pulpdb.NotWritableError and wrote nothing, then that an audit reports the guard.
func requireNoWrites(t *testing.T, f *fixture, pool *pgxpool.Pool, taskID string, check func(*pulpdb.NotWritableError)) {
	t.Helper()
	before := f.redisState()
	r, err := reaper.New(passConfig(), f.Redis.Client, pool, passtest.Logger())
	require.NoError(t, err)
	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	var nw *pulpdb.NotWritableError
	require.True(t, errors.As(err, &nw), "want pulpdb.NotWritableError, got %v", err)
	check(nw)
	require.Contains(t, err.Error(), fmt.Sprintf("on 127.0.0.1:%d", pool.Config().ConnConfig.Port))
	require.Contains(t, err.Error(), `database "pulp"`)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	require.Equal(t, before, f.redisState(), "nothing written to Redis, not even suspects")
	state, _, _, _ := f.TaskRow(taskID)
	require.Equal(t, judge.StateRunning, state, "no task updated")

	audit, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeAudit})
	require.NoError(t, err)
	require.Len(t, audit.Guards, 1, "%+v", audit.Guards)
	require.Equal(t, reaper.GuardWritablePrimary, audit.Guards[0].Name)
	require.Equal(t, exitcode.Guarded, exitcode.Of(audit))
	require.Equal(t, before, f.redisState())
}

// TestWritablePrimaryOrNoWrites points passes at a real hot standby (made
// with pg_basebackup from a primary the test starts) and at a role whose
// transactions are read-only by default: each pass fails before its first
// write, naming host, database and fix, and an audit reports the guard. The
// same fleet on the primary, with a role that may write, is acted on.
func TestWritablePrimaryOrNoWrites(t *testing.T) {
	f, primary := clusterFixture(t)
	taskID := deadWorkerFleet(f)

	t.Run("hot standby", func(t *testing.T) {
		standby := primary.StartStandby(t)
		standby.WaitReplayed(t, primary)
		requireNoWrites(t, f, openPool(t, standby.URL("pulp")), taskID, func(nw *pulpdb.NotWritableError) {
			require.True(t, nw.Standby)
			require.Contains(t, nw.Error(), "hot standby")
			require.Contains(t, nw.Error(), "point database.url at the primary")
		})
	})

	t.Run("read-only role", func(t *testing.T) {
		role := "lr_readonly_" + strings.ReplaceAll(sim.NewUUID()[:8], "-", "")
		primary.Exec(t, "pulp", privilege.PostgresSQLFor(role, "unused-with-trust"))
		primary.Exec(t, "pulp", "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" SET default_transaction_read_only = on")
		u, err := url.Parse(primary.URL("pulp"))
		require.NoError(t, err)
		u.User = url.User(role)
		requireNoWrites(t, f, openPool(t, u.String()), taskID, func(nw *pulpdb.NotWritableError) {
			require.True(t, nw.ReadOnly)
			require.False(t, nw.Standby)
			require.Equal(t, role, nw.User)
			require.Contains(t, nw.Error(), "SET default_transaction_read_only = off")
		})
	})

	t.Run("writable primary", func(t *testing.T) {
		rep := f.pass(f.reaper(nil), reaper.ModeOnce)
		require.Empty(t, rep.Guards)
		require.Equal(t, "", f.Get(judge.TaskKeyPrefix+taskID), "the dead worker's task lock is released")
		state, _, _, _ := f.TaskRow(taskID)
		require.Equal(t, judge.StateCanceled, state)
	})
}

package reaper_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// An audit on a pool that holds no connection opens one while Redis is
// read, and reads the reaper's memory (the remembered suspects) beside the
// locks: the pass judges as it did when each was read in turn.
func TestAuditOpensTheDatabaseAndReadsItsMemoryBesideTheLocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deadRow := f.Worker("1@dead", time.Hour)
	f.Worker("1@live", time.Second)
	dead := f.Task("running", deadRow, nil, -1)
	f.Acquire("1@dead", dead, nil, false)
	// A task lock whose task has no row is a suspect: its first sighting is
	// remembered by a real pass, and read by the next.
	missing := "00000000-0000-4000-8000-000000000001"
	f.Acquire("1@live", missing, nil, false)

	pool, err := pgxpool.New(f.Ctx, f.DB.URL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.Zero(t, pool.Stat().TotalConns(), "the pool starts without a connection")
	r, err := reaper.New(passConfig(), f.Redis.Client, pool, passtest.Logger())
	require.NoError(t, err)

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeAudit})
	require.NoError(t, err)
	require.NotNil(t, findingFor(rep, "task:"+dead, "1@dead"), "the dead worker's lock is found")
	require.Equal(t, reaper.ResultWouldRelease, findingFor(rep, "task:"+dead, "1@dead").Result)
	require.Positive(t, pool.Stat().TotalConns(), "the connection opened beside the Redis read is kept for the next statement")

	// A real pass remembers the suspect; the next audit reads it beside the
	// locks and still finds it a suspect, first seen then.
	f.pass(f.reaper(nil), reaper.ModeOnce)
	stored, err := redislocks.ReadSuspects(f.Ctx, f.Redis.Client, time.Second)
	require.NoError(t, err)
	require.NotEmpty(t, stored, "the real pass remembered the suspect")
	rep, err = r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeAudit})
	require.NoError(t, err)
	got := findingFor(rep, "task:"+missing, "1@live")
	require.NotNil(t, got)
	require.Equal(t, judge.VerdictTaskMissing, got.Verdict)
	require.Equal(t, reaper.ResultSuspected, got.Result)
}

// An audit whose database does not answer the connection opened beside
// the Redis read fails on that one timeout: the snapshot does not dial
// again and wait a second database.timeout.
func TestAuditOnAStalledDatabaseConnectsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deadRow := f.Worker("1@dead", time.Hour)
	f.Acquire("1@dead", f.Task("running", deadRow, nil, -1), nil, false)
	proxy := f.postgresProxy()
	proxy.Stall(0)
	t.Cleanup(proxy.Resume)
	r := f.reaperOn(f.redisClient(""), f.reaperPool(proxy.Addr(), nil), func(c *reaper.Config) { c.DatabaseTimeout = 300 * time.Millisecond })

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeAudit})
	require.ErrorIs(t, err, reaper.ErrNoSnapshot)
	require.ErrorContains(t, err, "database.timeout")
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	require.Equal(t, 1, proxy.Accepted(), "one connection tried, not a second after the first timed out")
}

package reaper_test

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// TestPgBouncerTransactionPooling runs eight reapers at once, three passes
// each, through a real pgbouncer in transaction pooling with fewer server
// connections than reapers: with pgx's exec mode "exec" (what
// database.exec_mode=exec sets; config's tests check that), and with pgx's own
// default_query_exec_mode=simple_protocol in the URL. No two reapers act at
// once, each stale holding of the dead owner is released exactly once, every
// lost task updated once, and no advisory lock outlives its pass.
func TestPgBouncerTransactionPooling(t *testing.T) {
	u, err := url.Parse(testenv.DatabaseURL())
	require.NoError(t, err)
	upstream := u.Host
	if u.Port() == "" {
		upstream = net.JoinHostPort(u.Hostname(), "5432")
	}
	user := u.User.Username()
	if user == "" {
		user = "postgres"
	}
	bouncer := pgcluster.StartPgBouncer(t, upstream, "transaction", 3, user)

	for _, tc := range []struct{ name, execMode, query string }{
		{name: "database.exec_mode=exec", execMode: "exec"},
		{name: "default_query_exec_mode=simple_protocol", query: "default_query_exec_mode=simple_protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			dsn, err := url.Parse(bouncer.URL(t, f.DB.URL))
			require.NoError(t, err)
			if tc.query != "" {
				q := dsn.Query()
				k, v, _ := strings.Cut(tc.query, "=")
				q.Set(k, v)
				dsn.RawQuery = q.Encode()
			}
			newPool := func() *pgxpool.Pool {
				pc, err := pgxpool.ParseConfig(dsn.String())
				require.NoError(t, err)
				if tc.execMode == "exec" {
					pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
				}
				pool, err := pgxpool.NewWithConfig(f.Ctx, pc)
				require.NoError(t, err)
				t.Cleanup(pool.Close)
				return pool
			}
			f.actOneAtATime(true, newPool)

			var held int
			require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
				WHERE l.locktype = 'advisory' AND d.datname = $1`, f.DB.Name).Scan(&held))
			require.Zero(t, held, "an advisory lock outlived its pass\n%s", bouncer.Log())
			rep := f.pass(f.reaperOn(f.Redis.Client, newPool(), nil), reaper.ModeOnce)
			require.Empty(t, rep.Skipped, "a pass after the others is not skipped")
		})
	}
}

// TestPgBouncerSingleServerConnection: through PgBouncer in transaction
// pooling with pool_size = 1, a pass that writes cannot get the second
// server connection it needs while its lock holds the first. It stops at
// start with pulpdb.SecondConnectionError, naming the fix, having read and written
// nothing; an audit, which takes no lock, works; and a client pool of one
// connection fails at once with its own fix.
func TestPgBouncerSingleServerConnection(t *testing.T) {
	u, err := url.Parse(testenv.DatabaseURL())
	require.NoError(t, err)
	upstream := u.Host
	if u.Port() == "" {
		upstream = net.JoinHostPort(u.Hostname(), "5432")
	}
	user := u.User.Username()
	if user == "" {
		user = "postgres"
	}
	bouncer := pgcluster.StartPgBouncer(t, upstream, "transaction", 1, user)
	f := newFixture(t)
	fl := f.buildFleet(6)
	newPool := func(maxConns int32) *pgxpool.Pool {
		pc, err := pgxpool.ParseConfig(bouncer.URL(t, f.DB.URL))
		require.NoError(t, err)
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		if maxConns > 0 {
			pc.MaxConns = maxConns
		}
		pool, err := pgxpool.NewWithConfig(f.Ctx, pc)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return pool
	}
	short := func(c *reaper.Config) { c.DatabaseTimeout = time.Second }

	start := time.Now()
	rep, err := f.reaperOn(f.Redis.Client, newPool(0), short).RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	var sce *pulpdb.SecondConnectionError
	require.ErrorAs(t, err, &sce, "%v\n%s", err, bouncer.Log())
	require.Less(t, time.Since(start), 5*time.Second, "the pass fails at start, within its database timeout")
	require.Contains(t, err.Error(), "pool_size")
	require.Contains(t, rep.Error, "two connections at once")
	require.Zero(t, rep.Scanned.Keys, "nothing was read")
	for _, h := range fl.stale {
		require.True(t, f.holds(h), "nothing was released: %s", h.key)
	}
	for _, id := range fl.lost {
		state, _, _, _ := f.TaskRow(id)
		require.NotEqual(t, judge.StateFailed, state, "no task was updated")
		require.NotEqual(t, judge.StateCanceled, state, "no task was updated")
	}

	_, err = f.reaperOn(f.Redis.Client, newPool(1), short).RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.ErrorAs(t, err, &sce)
	require.Contains(t, err.Error(), "pool_max_conns")

	audit := f.pass(f.reaperOn(f.Redis.Client, newPool(0), short), reaper.ModeAudit)
	require.NotZero(t, audit.Scanned.Keys, "an audit needs one connection only")
}

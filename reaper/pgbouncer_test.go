package reaper

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/testenv"
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
			dsn, err := url.Parse(bouncer.URL(t, f.db.URL))
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
				pool, err := pgxpool.NewWithConfig(f.ctx, pc)
				require.NoError(t, err)
				t.Cleanup(pool.Close)
				return pool
			}
			ccActOneAtATime(f, true, newPool)

			var held int
			require.NoError(t, f.db.Pool.QueryRow(f.ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
				WHERE l.locktype = 'advisory' AND d.datname = $1`, f.db.Name).Scan(&held))
			require.Zero(t, held, "an advisory lock outlived its pass\n%s", bouncer.Log())
			rep := f.pass(sfReaper(f, f.redis.Client, newPool(), nil), ModeOnce)
			require.Empty(t, rep.Skipped, "a pass after the others is not skipped")
		})
	}
}

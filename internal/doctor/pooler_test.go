package doctor

import (
	"context"
	"net"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// startPgbouncer starts PgBouncer in transaction mode in front of the test
// PostgreSQL server (internal/pgcluster) and returns a database URL through
// it for db, in pgx's simple protocol, which a transaction pooler passes on.
// It skips the test when pgbouncer is not installed.
func startPgbouncer(t *testing.T, db *testenv.Database) string {
	t.Helper()
	return startPgbouncerSized(t, db, 4)
}

// startPgbouncerSized is startPgbouncer with poolSize server connections.
func startPgbouncerSized(t *testing.T, db *testenv.Database, poolSize int) string {
	t.Helper()
	server, err := url.Parse(testenv.DatabaseURL())
	require.NoError(t, err)
	upstream := server.Host
	if server.Port() == "" {
		upstream = net.JoinHostPort(server.Hostname(), "5432")
	}
	user := server.User.Username()
	if user == "" {
		user = "postgres"
	}
	bouncer := pgcluster.StartPgBouncer(t, upstream, "transaction", poolSize, user)
	through, err := url.Parse(bouncer.URL(t, db.URL))
	require.NoError(t, err)
	q := through.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	through.RawQuery = q.Encode()
	return through.String()
}

// TestTransactionPooler: behind PgBouncer in transaction mode, session
// state does not stay with the session. With an exec mode that caches no
// statements (simple_protocol here) a pass works through it and the check is
// ok; with pgx's default statement cache it fails and names the fix.
func TestTransactionPooler(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	through := startPgbouncer(t, db)
	pool, err := pgxpool.New(context.Background(), through)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	r := runCheck(t, checkPostgresPooler, Target{Postgres: pool})
	require.Equal(t, OK, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "transaction pooler")

	cfg, err := pgxpool.ParseConfig(through)
	require.NoError(t, err)
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	cached, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(cached.Close)
	r = runCheck(t, checkPostgresPooler, Target{Postgres: cached})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Fix, "database.exec_mode: exec")

	// Everything else still reads through it.
	r = runCheck(t, checkPostgresPrimary, Target{Postgres: pool})
	require.Equal(t, OK, r.Status, r.Evidence)
}

// TestTransactionPoolerOfOneServerConnection: behind PgBouncer with
// pool_size = 1, a pass that writes would stop at start for want of a second
// server connection (pulpdb.SecondConnectionError); the check fails and says
// so, and so does a client pool of one connection.
func TestTransactionPoolerOfOneServerConnection(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	through := startPgbouncerSized(t, db, 1)
	pool, err := pgxpool.New(context.Background(), through)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	r := runCheck(t, checkPostgresPooler, Target{Postgres: pool})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "single server connection")
	require.Contains(t, r.Evidence, "two connections at once")
	require.Contains(t, r.Fix, "pool_size")

	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(one.Close)
	r = runCheck(t, checkPostgresPooler, Target{Postgres: one})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Fix, "pool_max_conns")
}

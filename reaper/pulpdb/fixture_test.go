package pulpdb

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// The tests of this package need PostgreSQL only: each gets a database of
// its own holding pulpcore's tables, and claims no Redis database.

// dbFixture is a passtest fixture with a fresh database and no Redis.
func dbFixture(t *testing.T) *passtest.Fixture {
	t.Helper()
	return &passtest.Fixture{T: t, Ctx: context.Background(), DB: testenv.NewDatabase(t)}
}

// testTimeout is the deadline the tests give each read and write.
const testTimeout = 5 * time.Second

// poolOf opens a pool on the fixture's database, configured by edit, and
// closes it at cleanup.
func poolOf(t *testing.T, url string, edit func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	if edit != nil {
		edit(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// readOnlyPool makes the fixture's own database give read-only
// transactions by default, as a role or database setting does in
// production, and opens a pool whose sessions start after the change.
func readOnlyPool(t *testing.T, f *passtest.Fixture) *pgxpool.Pool {
	t.Helper()
	_, err := f.DB.Pool.Exec(f.Ctx, "ALTER DATABASE "+pgx.Identifier{f.DB.Name}.Sanitize()+" SET default_transaction_read_only = on")
	require.NoError(t, err)
	return poolOf(t, f.DB.URL, nil)
}

// dbNow is the database clock, outside any transaction of the code under test.
func dbNow(t *testing.T, f *passtest.Fixture) time.Time {
	t.Helper()
	var now time.Time
	require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, "SELECT clock_timestamp()").Scan(&now))
	return now
}

// openWrite begins a transaction on a connection of its own that updates
// the task's row and leaves it uncommitted, as a worker's dispatch does
// while it runs; end commits it. The pid is the session's.
func openWrite(t *testing.T, pool *pgxpool.Pool, taskID string) (pid int32, end func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "UPDATE core_task SET name = name WHERE pulp_id = $1", taskID)
	require.NoError(t, err)
	pid = int32(conn.Conn().PgConn().PID())
	var once sync.Once
	end = func() {
		once.Do(func() {
			_ = tx.Commit(ctx)
			conn.Release()
		})
	}
	t.Cleanup(end)
	return pid, end
}

// statementLog records the statements a pool's connections run, with the
// server process of each, so that a test can see which transaction and
// which connection a read used.
type statementLog struct {
	mu   sync.Mutex
	pids []uint32
	sqls []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pids = append(l.pids, conn.PgConn().PID())
	l.sqls = append(l.sqls, strings.Join(strings.Fields(strings.ToLower(d.SQL)), " "))
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A batch's statements are logged as one entry, "batch:" and theirs joined
// by " | ", so that a test sees what went in one batch.
func (l *statementLog) TraceBatchStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, strings.Join(strings.Fields(strings.ToLower(q.SQL)), " "))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pids = append(l.pids, conn.PgConn().PID())
	l.sqls = append(l.sqls, "batch: "+strings.Join(sqls, " | "))
	return ctx
}

func (l *statementLog) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns what was recorded since the last take.
func (l *statementLog) take() (pids []uint32, sqls []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pids, sqls = l.pids, l.sqls
	l.pids, l.sqls = nil, nil
	return pids, sqls
}

// tracedPool opens a pool on the fixture's database whose statements log records.
func tracedPool(t *testing.T, f *passtest.Fixture) (*pgxpool.Pool, *statementLog) {
	t.Helper()
	log := &statementLog{}
	return poolOf(t, f.DB.URL, func(c *pgxpool.Config) { c.ConnConfig.Tracer = log }), log
}

// requireOneTransaction checks that the statements ran on one connection,
// in one transaction begun with begin and ended by rollback.
func requireOneTransaction(t *testing.T, pids []uint32, sqls []string, begin string) {
	t.Helper()
	require.NotEmpty(t, sqls)
	require.Equal(t, begin, sqls[0], "%q", sqls)
	require.Equal(t, "rollback", sqls[len(sqls)-1], "%q", sqls)
	for i, pid := range pids {
		require.Equal(t, pids[0], pid, "statement %q on another connection", sqls[i])
	}
}

// primaryDatabase is a database of a server the test started, for a
// fixture's helpers.
func primaryDatabase(t *testing.T, url string) *testenv.Database {
	t.Helper()
	pool := poolOf(t, url, nil)
	return &testenv.Database{Pool: pool, URL: url, Name: pool.Config().ConnConfig.Database}
}

package pulpdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestAcquirePassLock: one reaper at a time holds the pass lock; the
// second is told no, without an error, and gets it once the first releases.
func TestAcquirePassLock(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	first, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
	require.NoError(t, err)
	require.True(t, got)

	second, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
	require.NoError(t, err)
	require.False(t, got)
	require.Nil(t, second)
	require.Equal(t, int32(1), f.DB.Pool.Stat().AcquiredConns(), "the refused try gave its connection back")

	first.Release()
	third, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
	require.NoError(t, err)
	require.True(t, got)
	third.Release()
	require.Zero(t, f.DB.Pool.Stat().AcquiredConns())
}

// TestAcquirePassLockCoordinates: when coordinating, a pass also takes
// pulpcore's worker cleanup lock (0, 11): it is refused while pulpcore's
// cleanup holds it, and pulpcore's cleanup is refused while the pass does.
// Without coordinating, pulpcore's lock does not matter.
func TestAcquirePassLockCoordinates(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	cleanup, err := f.DB.Pool.Acquire(f.Ctx)
	require.NoError(t, err)
	defer cleanup.Release()
	_, err = cleanup.Exec(f.Ctx, "SELECT pg_advisory_lock(0, 11)")
	require.NoError(t, err)

	l, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, true)
	require.NoError(t, err)
	require.False(t, got, "pulpcore's cleanup holds its lock")
	require.Nil(t, l)
	l, got, err = AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
	require.NoError(t, err)
	require.True(t, got, "not coordinating")
	l.Release()

	_, err = cleanup.Exec(f.Ctx, "SELECT pg_advisory_unlock(0, 11)")
	require.NoError(t, err)
	l, got, err = AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, true)
	require.NoError(t, err)
	require.True(t, got)
	var cleanupGot bool
	require.NoError(t, cleanup.QueryRow(f.Ctx, "SELECT pg_try_advisory_xact_lock(0, 11)").Scan(&cleanupGot))
	require.False(t, cleanupGot, "pulpcore's cleanup waits for the pass")
	l.Release()
	require.NoError(t, cleanup.QueryRow(f.Ctx, "SELECT pg_try_advisory_xact_lock(0, 11)").Scan(&cleanupGot))
	require.True(t, cleanupGot)
}

// TestPassLockIsATransactionLock: the locks are transaction-level, held by
// the pass's open transaction (so a pooler cannot hand them to another
// client after it), under lock-reaper's own single-bigint key.
func TestPassLockIsATransactionLock(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	l, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, true)
	require.NoError(t, err)
	require.True(t, got)
	defer l.Release()

	pid := l.conn.Conn().PgConn().PID()
	rows, err := f.DB.Pool.Query(f.Ctx, `SELECT classid::int8, objid::int8, objsubid FROM pg_locks
		WHERE locktype = 'advisory' AND pid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY objsubid, objid`, pid)
	require.NoError(t, err)
	type key struct{ ClassID, ObjID, ObjSubID int64 }
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[key])
	require.NoError(t, err)
	// A bigint key is (high 32 bits, low 32 bits, 1); a two-int key is (a, b, 2).
	require.Equal(t, []key{{PassLockKey >> 32, PassLockKey & 0xffffffff, 1}, {pulpcoreLockGroup, pulpcoreCleanupLock, 2}}, keys)
	var inTransaction bool
	require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, `SELECT state = 'idle in transaction' FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&inTransaction))
	require.True(t, inTransaction)
}

// TestPassLockReleaseBrokenConnection: a pass whose connection broke gives
// the connection up rather than back to the pool, and the server, which
// ended the session, has freed the lock for the next pass.
func TestPassLockReleaseBrokenConnection(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	l, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
	require.NoError(t, err)
	require.True(t, got)
	pid := l.conn.Conn().PgConn().PID()
	_, err = f.DB.Pool.Exec(f.Ctx, "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var gone bool
		_ = f.DB.Pool.QueryRow(f.Ctx, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&gone)
		return gone
	}, testTimeout, 10*time.Millisecond, "the session ends")

	l.Release()
	require.Zero(t, f.DB.Pool.Stat().AcquiredConns())
	next, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
	require.NoError(t, err)
	require.True(t, got)
	require.NotEqual(t, pid, next.conn.Conn().PgConn().PID(), "the broken connection is not reused")
	next.Release()
}

// TestAcquirePassLockNotWritable: a pass on a database that takes no writes
// stops before it takes any lock, with the check's NotWritableError inside
// a WritableCheckError, and holds no connection.
func TestAcquirePassLockNotWritable(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	pool := readOnlyPool(t, f)
	l, got, err := AcquirePassLock(f.Ctx, pool, testTimeout, true)
	require.False(t, got)
	require.Nil(t, l)
	var wc *WritableCheckError
	require.ErrorAs(t, err, &wc)
	var nw *NotWritableError
	require.ErrorAs(t, err, &nw)
	require.True(t, nw.ReadOnly)
	require.Equal(t, nw.Error(), err.Error(), "the check's own message")
	require.Zero(t, pool.Stat().AcquiredConns())
}

// TestAcquirePassLockTimeout: a pass that cannot get a connection in time
// fails saying so, rather than waiting on.
func TestAcquirePassLockTimeout(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	pool := poolOf(t, f.DB.URL, func(c *pgxpool.Config) { c.MaxConns = 1 })
	held, err := pool.Acquire(f.Ctx)
	require.NoError(t, err)
	defer held.Release()
	_, got, err := AcquirePassLock(f.Ctx, pool, 200*time.Millisecond, false)
	require.False(t, got)
	require.ErrorContains(t, err, "connect for the pass lock")
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

// TestBeginWithTimeout: the statement timeout holds for the transaction
// alone (SET LOCAL), so that nothing stays behind on a pooled server
// connection, and stops a statement that runs past it.
func TestBeginWithTimeout(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	conn, err := f.DB.Pool.Acquire(f.Ctx)
	require.NoError(t, err)
	defer conn.Release()
	var session string
	require.NoError(t, conn.QueryRow(f.Ctx, "SHOW statement_timeout").Scan(&session))

	tx, err := beginWithTimeout(f.Ctx, conn, pgx.TxOptions{}, 250*time.Millisecond)
	require.NoError(t, err)
	var inTx string
	require.NoError(t, tx.QueryRow(f.Ctx, "SHOW statement_timeout").Scan(&inTx))
	require.Equal(t, "250ms", inTx)
	_, err = tx.Exec(f.Ctx, "SELECT pg_sleep(2)")
	require.ErrorContains(t, err, "statement timeout")
	require.NoError(t, tx.Rollback(f.Ctx))

	var after string
	require.NoError(t, conn.QueryRow(f.Ctx, "SHOW statement_timeout").Scan(&after))
	require.Equal(t, session, after)
}

// TestStatementTimeoutMS: milliseconds rounded up, so that a timeout under
// a millisecond never becomes 0, which would be none at all.
func TestStatementTimeoutMS(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                                  "0",
		time.Nanosecond:                    "1",
		999 * time.Microsecond:             "1",
		1500 * time.Millisecond:            "1500",
		time.Millisecond + time.Nanosecond: "2",
		30 * time.Second:                   "30000",
	} {
		require.Equal(t, want, statementTimeoutMS(d), "%v", d)
	}
}

package pulpdb

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PassLockKey is the PostgreSQL advisory lock lock-reaper holds for a pass,
// so that one reaper acts at a time. It is the single-bigint form (the ASCII
// of "lockreap"), which cannot collide with pulpcore's two-int locks in
// group 0.
const PassLockKey int64 = 0x6c6f636b72656170

// Pulpcore's worker cleanup lock: pg_try_advisory_xact_lock(0, 11).
const (
	pulpcoreLockGroup   = 0
	pulpcoreCleanupLock = 11
)

// PassLock is the transaction that spans a pass: it holds the pass's
// advisory locks as transaction-level locks, so that they end with the
// transaction whatever happens to the session. A transaction pooler such as
// PgBouncer keeps one server connection for a transaction and hands it to
// other clients afterwards, so a session lock would outlive the pass on a
// pooled connection, and two reapers could both get it; a transaction lock
// cannot.
type PassLock struct {
	conn    *pgxpool.Conn
	tx      pgx.Tx
	timeout time.Duration
}

// WritableCheckError is the pass lock's check that the database takes
// writes failing: a *NotWritableError, or the check's own error. Its text
// is the wrapped error's.
type WritableCheckError struct{ Err error }

func (e *WritableCheckError) Error() string { return e.Err.Error() }

func (e *WritableCheckError) Unwrap() error { return e.Err }

// AcquirePassLock begins the pass's transaction on a connection of its own,
// checks that the database takes writes (see checkWritable), and takes
// lock-reaper's lock and, when coordinating, pulpcore's cleanup lock. got is
// false when another reaper or pulpcore's cleanup holds one of them.
func AcquirePassLock(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, coordinate bool) (*PassLock, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pool.Acquire(cctx)
	if err != nil {
		return nil, false, fmt.Errorf("connect for the pass lock: %w", err)
	}
	l := &PassLock{conn: conn, timeout: timeout}
	if l.tx, err = beginWithTimeout(cctx, conn, pgx.TxOptions{}, timeout); err != nil {
		l.Release()
		return nil, false, fmt.Errorf("begin the pass transaction: %w", err)
	}
	if err := checkWritable(cctx, l.tx, pool.Config().ConnConfig); err != nil {
		l.Release()
		return nil, false, &WritableCheckError{Err: err}
	}
	var got bool
	if err := l.tx.QueryRow(cctx, "SELECT pg_try_advisory_xact_lock($1::int8)", PassLockKey).Scan(&got); err != nil {
		l.Release()
		return nil, false, fmt.Errorf("take the pass lock: %w", err)
	}
	if got && coordinate {
		if err := l.tx.QueryRow(cctx, "SELECT pg_try_advisory_xact_lock($1::int4, $2::int4)", pulpcoreLockGroup, pulpcoreCleanupLock).Scan(&got); err != nil {
			l.Release()
			return nil, false, fmt.Errorf("take pulpcore's cleanup lock: %w", err)
		}
	}
	if !got {
		l.Release()
		return nil, false, nil
	}
	return l, true, nil
}

// Release ends the transaction, which gives both locks back. If the
// connection is broken the server ends the transaction when it notices the
// session is gone, so the connection is then destroyed rather than reused.
func (l *PassLock) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	if l.tx != nil && l.tx.Rollback(ctx) != nil {
		_ = l.conn.Hijack().Close(ctx)
		return
	}
	l.conn.Release()
}

// beginner is what beginWithTimeout needs of a pool or a connection.
type beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// beginWithTimeout begins a transaction whose statements the server stops
// after timeout. SET LOCAL rather than a startup parameter: PgBouncer refuses
// a statement_timeout startup parameter, and a session setting would stay
// behind on a pooled server connection.
func beginWithTimeout(ctx context.Context, db beginner, opts pgx.TxOptions, timeout time.Duration) (pgx.Tx, error) {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, setStatementTimeoutSQL, statementTimeoutMS(timeout)); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("set statement_timeout: %w", err)
	}
	return tx, nil
}

// statementTimeoutMS renders d in milliseconds, PostgreSQL's unit for
// statement_timeout, rounded up: 0 would mean no timeout at all.
func statementTimeoutMS(d time.Duration) string {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(ms, 10)
}

package reaper

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PassLockKey is the PostgreSQL session advisory lock lock-reaper holds for a
// pass, so that one reaper acts at a time. It is the single-bigint form
// (the ASCII of "lockreap"), which cannot collide with pulpcore's two-int
// locks in group 0.
const PassLockKey int64 = 0x6c6f636b72656170

// Pulpcore's worker cleanup lock: pg_try_advisory_xact_lock(0, 11).
const (
	pulpcoreLockGroup   = 0
	pulpcoreCleanupLock = 11
)

// passLock holds the advisory locks of one pass on a dedicated connection.
type passLock struct {
	conn    *pgxpool.Conn
	tx      pgx.Tx
	timeout time.Duration
}

// acquirePassLock takes lock-reaper's session lock and, when coordinating,
// pulpcore's cleanup lock in a transaction kept open for the pass. got is
// false when another reaper or pulpcore's cleanup holds one of them.
func acquirePassLock(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, coordinate bool) (*passLock, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pool.Acquire(cctx)
	if err != nil {
		return nil, false, fmt.Errorf("connect for the pass lock: %w", err)
	}
	l := &passLock{conn: conn, timeout: timeout}
	var got bool
	if err := conn.QueryRow(cctx, "SELECT pg_try_advisory_lock($1)", PassLockKey).Scan(&got); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("take the pass lock: %w", err)
	}
	if !got {
		conn.Release()
		return nil, false, nil
	}
	if coordinate {
		if l.tx, err = conn.Begin(cctx); err != nil {
			l.release()
			return nil, false, fmt.Errorf("take pulpcore's cleanup lock: %w", err)
		}
		if err := l.tx.QueryRow(cctx, "SELECT pg_try_advisory_xact_lock($1::int4, $2::int4)", pulpcoreLockGroup, pulpcoreCleanupLock).Scan(&got); err != nil {
			l.release()
			return nil, false, fmt.Errorf("take pulpcore's cleanup lock: %w", err)
		}
		if !got {
			l.release()
			return nil, false, nil
		}
	}
	return l, true, nil
}

// release gives both locks back. If the connection is broken the server
// frees them when it notices the session is gone, so the connection is then
// destroyed rather than reused.
func (l *passLock) release() {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	ok := true
	if l.tx != nil {
		ok = l.tx.Rollback(ctx) == nil
	}
	if ok {
		_, err := l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", PassLockKey)
		ok = err == nil
	}
	if !ok {
		_ = l.conn.Hijack().Close(ctx)
		return
	}
	l.conn.Release()
}

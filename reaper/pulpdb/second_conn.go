package pulpdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SecondConnectionError says a pass that writes could not get the second
// server connection it needs while it holds its lock. A pass holds its
// advisory locks in one transaction from start to end (see PassLock), and
// reads its snapshot (REPEATABLE READ) and writes its task updates (each
// batch a READ COMMITTED transaction committed before the next) in others:
// transactions of different isolation that cannot share one server
// connection. Through a transaction pooler with one server connection
// (PgBouncer pool_size = 1) the second never comes, so a pass asks for it at
// start, before it reads or writes anything, and stops with the fix.
type SecondConnectionError struct {
	Host string
	// MaxConns is the client pool's size when it is what allows only one.
	MaxConns int32
	Wait     time.Duration
	Err      error
}

func (e *SecondConnectionError) Error() string {
	need := "a pass that writes holds its lock in one transaction and reads its snapshot and updates tasks in a second, so it needs two connections at once"
	if e.MaxConns > 0 {
		return fmt.Sprintf("check for a second database connection on %s: the connection pool allows %d (pool_max_conns): %s; "+
			"set pool_max_conns to at least 2 in database.url", e.Host, e.MaxConns, need)
	}
	return fmt.Sprintf("check for a second database connection on %s: none answered within %v while the pass held its lock (%v): %s; "+
		"behind PgBouncer in transaction pooling, give lock-reaper's database and user a pool of at least 2 server connections "+
		"(pool_size, or default_pool_size) plus 2 for each other reaper that may run at once, or connect directly; "+
		"an audit needs only one", e.Host, e.Wait, e.Err, need)
}

func (e *SecondConnectionError) Unwrap() error { return e.Err }

// CheckSecondConnection runs one statement on a second connection while the
// pass lock holds the first, and fails with SecondConnectionError when the
// pool or the pooler behind it cannot give one within timeout.
func CheckSecondConnection(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	host := serverAddr(pool.Config().ConnConfig)
	if n := pool.Config().MaxConns; n < 2 {
		return &SecondConnectionError{Host: host, MaxConns: n}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := pool.Exec(cctx, "SELECT 1")
	if err == nil {
		return nil
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return &SecondConnectionError{Host: host, Wait: timeout, Err: err}
	}
	return fmt.Errorf("check for a second database connection on %s: %w", host, err)
}

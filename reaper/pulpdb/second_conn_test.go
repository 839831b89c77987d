package pulpdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestCheckSecondConnection: a pass that holds its lock gets a second
// connection from a pool of two or more; a pool of one is refused at once,
// naming pool_max_conns; a pool (or a pooler) that gives none in time is
// refused after the wait, naming PgBouncer's pool size.
func TestCheckSecondConnection(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	host := func(pool *pgxpool.Pool) string {
		cc := pool.Config().ConnConfig
		return fmt.Sprintf("%s:%d", cc.Host, cc.Port)
	}

	t.Run("a second connection", func(t *testing.T) {
		l, got, err := AcquirePassLock(f.Ctx, f.DB.Pool, testTimeout, false)
		require.NoError(t, err)
		require.True(t, got)
		defer l.Release()
		require.NoError(t, CheckSecondConnection(f.Ctx, f.DB.Pool, testTimeout))
	})

	t.Run("a pool of one", func(t *testing.T) {
		pool := poolOf(t, f.DB.URL, func(c *pgxpool.Config) { c.MaxConns = 1 })
		err := CheckSecondConnection(f.Ctx, pool, testTimeout)
		var sc *SecondConnectionError
		require.ErrorAs(t, err, &sc)
		require.Equal(t, &SecondConnectionError{Host: host(pool), MaxConns: 1}, sc)
		require.Contains(t, err.Error(), "set pool_max_conns to at least 2 in database.url")
	})

	t.Run("none in time", func(t *testing.T) {
		pool := poolOf(t, f.DB.URL, func(c *pgxpool.Config) { c.MaxConns = 2 })
		for range 2 {
			conn, err := pool.Acquire(f.Ctx)
			require.NoError(t, err)
			defer conn.Release()
		}
		start := time.Now()
		err := CheckSecondConnection(f.Ctx, pool, 200*time.Millisecond)
		require.Less(t, time.Since(start), 2*time.Second)
		var sc *SecondConnectionError
		require.ErrorAs(t, err, &sc)
		require.Equal(t, host(pool), sc.Host)
		require.Zero(t, sc.MaxConns)
		require.Equal(t, 200*time.Millisecond, sc.Wait)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "pool_size")
		require.Contains(t, err.Error(), "none answered within 200ms")
	})

	t.Run("the pass itself canceled", func(t *testing.T) {
		pool := poolOf(t, f.DB.URL, func(c *pgxpool.Config) { c.MaxConns = 2 })
		ctx, cancel := context.WithCancel(f.Ctx)
		cancel()
		err := CheckSecondConnection(ctx, pool, testTimeout)
		require.ErrorIs(t, err, context.Canceled)
		var sc *SecondConnectionError
		require.NotErrorAs(t, err, &sc, "not the pooler's fault")
	})
}

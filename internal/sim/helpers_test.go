package sim_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// bundle is what a fleet test works with besides the fleet.
type bundle struct {
	ctx  context.Context
	rdb  *redis.Client
	pool *pgxpool.Pool
}

// testConfig is a small, fast fleet: short TTL and grace, short tasks.
func testConfig() sim.Config {
	return sim.Config{
		Workers:         3,
		WorkerTTL:       2 * time.Second,
		APITTL:          3 * time.Second,
		HeartbeatGrace:  2 * time.Second,
		MinTaskDuration: 10 * time.Millisecond,
		MaxTaskDuration: 40 * time.Millisecond,
		PollInterval:    10 * time.Millisecond,
		Seed:            7,
	}
}

// startFleet starts a fleet on its own Redis and PostgreSQL databases; it is
// stopped before they are dropped.
func startFleet(t *testing.T, cfg sim.Config) (*sim.Fleet, *bundle) {
	t.Helper()
	b := newBundle(t)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	f, err := sim.New(b.rdb, b.pool, cfg)
	require.NoError(t, err)
	require.NoError(t, f.Start(b.ctx))
	t.Cleanup(f.Stop)
	return f, b
}

func newBundle(t *testing.T) *bundle {
	t.Helper()
	return &bundle{ctx: t.Context(), rdb: testenv.NewRedis(t).Client, pool: testenv.NewDatabase(t).Pool}
}

type taskInfo struct {
	state, appLock, appLockName string
	immediate                   bool
	hasError                    bool
}

func readTask(t *testing.T, b *bundle, id string) taskInfo {
	t.Helper()
	var ti taskInfo
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT t.state, coalesce(t.app_lock_id::text, ''), coalesce(a.name, ''),
  coalesce(t.immediate, false), t.error IS NOT NULL
FROM core_task t LEFT JOIN core_appstatus a ON a.pulp_id = t.app_lock_id WHERE t.pulp_id = $1`, id).
		Scan(&ti.state, &ti.appLock, &ti.appLockName, &ti.immediate, &ti.hasError))
	return ti
}

func waitState(t *testing.T, b *bundle, id, state string) {
	t.Helper()
	require.Eventually(t, func() bool { return readTask(t, b, id).state == state },
		10*time.Second, 10*time.Millisecond, "task %s never became %s", id, state)
}

// holdingsOf lists the lock keys of a task held by owner.
func holdingsOf(t *testing.T, b *bundle, owner string) []sim.Holding {
	t.Helper()
	hs, err := sim.ScanHoldings(b.ctx, b.rdb)
	require.NoError(t, err)
	var out []sim.Holding
	for _, h := range hs {
		if h.Owner == owner {
			out = append(out, h)
		}
	}
	return out
}

func waitAllFinal(t *testing.T, b *bundle, total int) map[string]int {
	t.Helper()
	var states map[string]int
	require.Eventually(t, func() bool {
		var err error
		states, err = sim.TaskStates(b.ctx, b.pool)
		require.NoError(t, err)
		final := 0
		for s, n := range states {
			if sim.FinalState(s) {
				final += n
			}
		}
		return final == total
	}, 20*time.Second, 20*time.Millisecond, "tasks never all final: %v", states)
	return states
}

// waitConverged polls CheckConverged, since a running fleet passes through
// states it flags for milliseconds.
func waitConverged(t *testing.T, b *bundle) {
	t.Helper()
	var problems []string
	require.Eventually(t, func() bool {
		var err error
		problems, err = sim.CheckConverged(b.ctx, b.rdb, b.pool)
		require.NoError(t, err)
		return len(problems) == 0
	}, 10*time.Second, 20*time.Millisecond, "not converged: %v", &problems)
}

func contextWithTimeout(b *bundle, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, d)
}

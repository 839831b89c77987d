package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// fleet is a small incident in real Redis and PostgreSQL: one dead worker's
// locks (some legacy, so only a full scan finds them) beside live workers
// that stay alive for the test.
type fleet struct {
	redis *testenv.Redis
	db    *testenv.Database
	inc   *sim.Incident
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, sim.IncidentSpec{
		DeadTaskLocks: 12, DeadResourceLocks: 6, DeadRunning: 2, DeadClaimed: 2,
		LegacyFraction: 0.25, LiveWorkers: 3, QueuedTasks: 4,
	})
	require.NoError(t, err)
	stop := inc.KeepAliveInBackground(ctx, db.Pool)
	t.Cleanup(func() { require.NoError(t, stop()) })
	return &fleet{redis: r, db: db, inc: inc}
}

// reaper returns a reaper of the fleet talking to Redis through rdb.
func (f *fleet) reaper(t *testing.T, rdb redis.UniversalClient) *reaper.Reaper {
	t.Helper()
	if rdb == nil {
		rdb = f.redis.Client
	}
	r, err := reaper.New(passConfig(), rdb, f.db.Pool, testLogger(t))
	require.NoError(t, err)
	return r
}

func (f *fleet) holdings(t *testing.T) []sim.Holding {
	t.Helper()
	hs, err := sim.ScanHoldings(context.Background(), f.redis.Client)
	require.NoError(t, err)
	return hs
}

// TestDaemonReapsAnIncident runs the daemon against a dead worker's locks:
// unready and alive before its first pass, which scans the keyspace and
// releases every stale holding; ready after it, with the releases in
// /metrics; then registry-only passes until the full scan is due again.
// Each pass waits for the test's go, so no pass completes while it looks.
func TestDaemonReapsAnIncident(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	gated := newGatedRunner(f.reaper(t, nil))
	_, b := start(t, context.Background(), gated, Config{Schedule: "@every 1s", FullScanInterval: 3 * time.Second, Version: "1.2.3"})

	<-gated.entered
	code, body := b.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "no pass has completed yet\n", body)
	code, _ = b.get(t, "/livez")
	require.Equal(t, http.StatusOK, code)
	gated.let(t)

	first := b.waitPass(t)
	require.NoError(t, first.Err)
	require.Equal(t, metrics.OutcomeSuccess, first.Outcome)
	require.True(t, first.FullScan, "the first pass scans the keyspace")
	require.True(t, first.Report.Scanned.FullScan)
	require.Equal(t, len(f.inc.Stale), first.Report.Summary.Released)
	require.ElementsMatch(t, f.inc.Healthy, f.holdings(t), "exactly the healthy holdings remain")

	code, body = b.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	m := b.scrape(t)
	require.Equal(t, 1.0, m[`lock_reaper_build_info{goversion="`+goVersion()+`",version="1.2.3"}`])
	require.Equal(t, 1.0, m[`lock_reaper_passes_total{result="success"}`])
	released := 0.0
	for _, kind := range []string{"task", "exclusive", "shared"} {
		released += m[fmt.Sprintf(`lock_reaper_holdings_released_total{kind=%q,verdict="owner-dead"}`, kind)] +
			m[fmt.Sprintf(`lock_reaper_holdings_released_total{kind=%q,verdict="task-finished"}`, kind)]
	}
	require.Equal(t, float64(len(f.inc.Stale)), released)
	require.Equal(t, float64(len(f.inc.Cancel)), m[`lock_reaper_tasks_updated_total{verdict="lost"}`])
	require.Equal(t, 1.0, m[`lock_reaper_scans_total{scope="full"}`])
	require.Equal(t, 1.0, m[`lock_reaper_pass_duration_seconds_count`])
	require.NotZero(t, m[`lock_reaper_last_success_timestamp_seconds`])
	require.Contains(t, m, "go_goroutines", "the Go collector is registered")

	// A legacy lock of the dead worker appears: registry-only passes do not
	// see it; the next full scan releases it.
	legacyTask := sim.NewUUID()
	blocked, err := sim.AcquireLegacy(context.Background(), f.redis.Client, legacyTask, f.inc.DeadOwner, nil, nil)
	require.NoError(t, err)
	require.Empty(t, blocked)
	registryOnly := 0
	for {
		gated.let(t)
		r := b.waitPass(t)
		require.Equal(t, metrics.OutcomeSuccess, r.Outcome, r.Report.Error)
		require.Equal(t, r.FullScan, r.Report.Scanned.FullScan)
		if !r.FullScan {
			registryOnly++
			require.Zero(t, r.Report.Summary.Released, "a registry-only pass does not see legacy locks")
			continue
		}
		require.Positive(t, registryOnly, "registry-only passes run between full scans")
		require.Equal(t, 1, r.Report.Summary.Released)
		require.Equal(t, sim.TaskKey(legacyTask), r.Report.Findings[0].Key)
		break
	}
	m = b.scrape(t)
	require.Equal(t, float64(registryOnly), m[`lock_reaper_scans_total{scope="registry"}`])
	require.Equal(t, 2.0, m[`lock_reaper_scans_total{scope="full"}`])
}

// TestDaemonKeepsRunningThroughFailures cuts Redis off: passes fail and are
// counted, the daemon stays alive and unready, then recovers as soon as a
// pass completes, and goes unready again after three failures in a row.
func TestDaemonKeepsRunningThroughFailures(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	proxy := newFlakyProxy(t, f.redis.Client.Options().Addr)
	opts := *f.redis.Client.Options()
	opts.Addr = proxy.addr()
	opts.MaxRetries = -1
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })
	gated := newGatedRunner(f.reaper(t, rdb))
	_, b := start(t, context.Background(), gated, Config{Schedule: "@every 1s", MaxRetryDelay: 5 * time.Second})

	proxy.setDown(true)
	gated.let(t)
	failed := b.waitPass(t)
	require.Equal(t, metrics.OutcomeFailed, failed.Outcome)
	require.Error(t, failed.Err)
	require.Equal(t, 1, failed.Failures)
	require.Zero(t, failed.Next.BackedOff, "the first retry is on the next tick")
	require.True(t, failed.FullScan)
	code, body := b.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "no pass has completed yet\n", body)
	code, _ = b.get(t, "/livez")
	require.Equal(t, http.StatusOK, code, "a failed pass does not make the daemon unhealthy")
	m := b.scrape(t)
	require.Equal(t, 1.0, m[`lock_reaper_passes_total{result="failed"}`])
	require.NotContains(t, m, "lock_reaper_last_success_timestamp_seconds")

	proxy.setDown(false)
	gated.let(t)
	ok := b.waitPass(t)
	require.Equal(t, metrics.OutcomeSuccess, ok.Outcome, ok.Report.Error)
	require.True(t, ok.FullScan, "the full scan that failed is still due")
	require.Equal(t, 0, ok.Failures, "a success resets the backoff")
	require.Equal(t, len(f.inc.Stale), ok.Report.Summary.Released)
	code, _ = b.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code)

	proxy.setDown(true)
	for i := 1; i <= UnreadyAfterFailuresDefault; i++ {
		gated.let(t)
		r := b.waitPass(t)
		require.Equal(t, metrics.OutcomeFailed, r.Outcome)
		require.Equal(t, i, r.Failures)
		require.Equal(t, 1<<(i-1)-1, r.Next.BackedOff, "failure %d", i)
		code, _ = b.get(t, "/readyz")
		if i < UnreadyAfterFailuresDefault {
			require.Equal(t, http.StatusOK, code, "%d failures in a row are tolerated", i)
		}
	}
	code, body = b.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "the last 3 passes failed\n", body)
	m = b.scrape(t)
	require.Equal(t, 4.0, m[`lock_reaper_passes_total{result="failed"}`])
	require.Equal(t, 4.0, m[`lock_reaper_ticks_skipped_total{reason="backoff"}`], "1 tick after the 2nd failure, 3 after the 3rd")
	code, _ = b.get(t, "/livez")
	require.Equal(t, http.StatusOK, code)

	proxy.setDown(false)
	gated.let(t)
	r := b.waitPass(t)
	require.Equal(t, metrics.OutcomeSuccess, r.Outcome, r.Report.Error)
	require.False(t, r.FullScan, "the recovery pass reads the registry; the full scan is not due")
	code, _ = b.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code)
}

// TestCancelFinishesThePassUnderWay cancels the daemon's context while a
// pass is under way: the pass completes its releases, then the daemon stops.
func TestCancelFinishesThePassUnderWay(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	gated := newGatedRunner(f.reaper(t, nil))
	ctx, cancel := context.WithCancel(context.Background())
	d, b := start(t, ctx, gated, Config{Schedule: "@every 1s"})

	<-gated.entered
	cancel()
	close(gated.gate)
	<-d.Done()
	require.NoError(t, d.Err())

	r := b.waitPass(t)
	require.Equal(t, metrics.OutcomeSuccess, r.Outcome, r.Report.Error)
	require.Equal(t, len(f.inc.Stale), r.Report.Summary.Released)
	require.ElementsMatch(t, f.inc.Healthy, f.holdings(t))
	require.Empty(t, b.passes, "no pass starts after the cancel")
	_, err := http.Get(b.base + "/livez")
	require.Error(t, err, "the listener is closed")
}

// TestShutdownGraceCutsAHungPassShort: a pass that does not end by itself is
// cancelled ShutdownGrace after the stop.
func TestShutdownGraceCutsAHungPassShort(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 1)
	hung := runnerFunc(func(ctx context.Context, _ reaper.Options) (*reaper.Report, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return &reaper.Report{Error: ctx.Err().Error()}, ctx.Err()
	})
	d, b := start(t, context.Background(), hung, Config{ShutdownGrace: time.Millisecond})
	<-entered
	d.Stop()
	r := b.waitPass(t)
	require.Equal(t, metrics.OutcomeFailed, r.Outcome)
	require.ErrorIs(t, r.Err, context.Canceled)
}

// TestSlowPassSkipsTicks: a pass longer than the schedule's interval makes
// the ticks it covered pass without a pass; they are counted.
func TestSlowPassSkipsTicks(t *testing.T) {
	t.Parallel()
	slow := runnerFunc(func(ctx context.Context, _ reaper.Options) (*reaper.Report, error) {
		// Wait until at least two whole ticks of @every 1s have gone by.
		ctxwait.Sleep(ctx, 2500*time.Millisecond)
		return &reaper.Report{StartedAt: time.Now()}, nil
	})
	_, b := start(t, context.Background(), slow, Config{Schedule: "@every 1s"})
	r := b.waitPass(t)
	require.Equal(t, metrics.OutcomeSuccess, r.Outcome)
	require.GreaterOrEqual(t, r.Next.Overlapped, 2)
	require.Equal(t, float64(r.Next.Overlapped), b.scrape(t)[`lock_reaper_ticks_skipped_total{reason="overlap"}`])
}

func TestStartAndStopAreIdempotent(t *testing.T) {
	t.Parallel()
	quick := runnerFunc(func(context.Context, reaper.Options) (*reaper.Report, error) {
		return &reaper.Report{StartedAt: time.Now()}, nil
	})
	d, err := New(quick, Config{Listen: "127.0.0.1:0", Logger: testLogger(t)})
	require.NoError(t, err)
	d.Stop() // never started: nothing to do

	require.NoError(t, d.Start(context.Background()))
	addr := d.Addr()
	require.NoError(t, d.Start(context.Background()), "starting a running daemon does nothing")
	require.Equal(t, addr, d.Addr())

	busy, err := New(quick, Config{Listen: addr.String(), Logger: testLogger(t)})
	require.NoError(t, err)
	require.ErrorContains(t, busy.Start(context.Background()), "listen on "+addr.String())
	busy.Stop()

	d.Stop()
	d.Stop()
	require.NoError(t, d.Err())
	require.Error(t, d.Start(context.Background()), "a stopped daemon does not start again")
	select {
	case <-d.Done():
	default:
		t.Fatal("Done is closed after Stop")
	}
}

func TestNilRunner(t *testing.T) {
	t.Parallel()
	_, err := New(nil, Config{})
	require.True(t, err != nil && !errors.Is(err, context.Canceled))
}

// passConfig is the default configuration with the tests' heartbeat_recheck.
func passConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	return cfg
}

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/daemon"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Durations shared by the fleet and the reaper, short so that a run is quick.
const (
	workerTTL      = 2 * time.Second
	apiTTL         = 3 * time.Second
	heartbeatGrace = 2 * time.Second
	finishedGrace  = 2 * time.Second
	confirmAfter   = 3 * time.Second

	// The pass loop waits a random gap in [minPassGap, maxPassGap] between
	// passes; the daemon runs one a second and a full scan every few.
	minPassGap     = 500 * time.Millisecond
	maxPassGap     = time.Second
	daemonSchedule = "@every 1s"
	daemonFullScan = 3 * time.Second
)

// reapers says which reapers run beside the fleet.
type reapers int

const (
	withPassLoop reapers = 1 << iota // RunOnce in a loop, as a CronJob would
	withDaemon                       // `lock-reaper run`'s daemon
)

// scenario is the shape of one chaos run.
type scenario struct {
	workers int
	// tasks: fault and dispatch until this many tasks were created; soak:
	// for this long instead.
	tasks   int
	soak    time.Duration
	reapers reapers
	// dispatchRate is how many tasks a second the fleet creates.
	dispatchRate     float64
	minTask, maxTask time.Duration
}

// chaosFaults injects every kind of fault the simulator knows, at rates that
// leave some tens of leaks, a handful of kills and many late heartbeats in a
// run of 2,000 tasks. Heartbeat delays stay below ttl + grace by design, so a
// late process must be left alone.
func chaosFaults() sim.FaultRates {
	return sim.FaultRates{
		LeakBeforeClaim: 0.01, FinalNoRelease: 0.01, CancelPathError: 0.2, SupervisorError: 0.01,
		CancelRace: 0.01, ImmediateRelease: 0.03, Kill: 0.005, RestartAfter: 5 * time.Second,
		HeartbeatDelay: 0.02, SlowDB: 0.002, SlowDBDelay: 30 * time.Millisecond,
	}
}

func fleetConfig(sc scenario, seed uint64, logger *slog.Logger) sim.Config {
	return sim.Config{
		Workers: sc.workers, APIs: 2, Hostname: "e2e",
		WorkerTTL: workerTTL, APITTL: apiTTL, HeartbeatGrace: heartbeatGrace,
		MinTaskDuration: sc.minTask, MaxTaskDuration: sc.maxTask, ImmediateDuration: 10 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, FetchLimit: 40, Repositories: 128,
		SharedRepoFraction: 0.3, DomainExclusiveFraction: 0.002,
		ImmediateInTransaction: true,
		Seed:                   seed,
		Dispatch:               sim.DispatchConfig{Rate: sc.dispatchRate, ImmediateFraction: 0.1, CancelRate: 3},
		Faults:                 chaosFaults(),
		Logger:                 logger,
	}
}

func reaperConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	cfg.HeartbeatGrace = heartbeatGrace
	cfg.FinishedGrace = finishedGrace
	cfg.ConfirmAfter = confirmAfter
	// The simulator never deletes a killed incarnation's row (pulpcore's own
	// cleanup would), so dead worker rows pile up over a run, and the
	// mass-death guard, which counts rows, would hold every owner-dead
	// release back for good once they outnumber the live ones. The guard has
	// tests of its own; here it must not stop the reaping.
	cfg.MaxDeadFraction = 1
	return cfg
}

// run is one chaos run: a fleet, the reapers beside it, and what they
// recorded.
type run struct {
	t     *testing.T
	sc    scenario
	seed  uint64
	ctx   context.Context
	rdb   *redis.Client // the fleet's
	pool  *pgxpool.Pool // the fleet's
	fleet *sim.Fleet
	wire  *wireLog
	rec   *passRecorder
	// stopReapers stops every reaper and returns once they are gone.
	stopReapers func()
	started     time.Time
}

// startRun starts a fleet with random faults on its own Redis and PostgreSQL
// databases, and the scenario's reapers beside it. Everything stops at the
// test's cleanup, reapers first.
func startRun(t *testing.T, sc scenario) *run {
	t.Helper()
	seed := testSeed(t)
	t.Logf("seed %d: repeat with go test ./e2e -run '^%s$' -seed %d", seed, t.Name(), seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: repeat with go test ./e2e -run '^%s$' -seed %d", seed, t.Name(), seed)
		}
	})

	rd, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	r := &run{t: t, sc: sc, seed: seed, ctx: t.Context(), wire: newWireLog(), started: time.Now()}
	// The fleet gets pools of its own, large enough that twenty workers
	// never wait for a connection (a heartbeat stuck behind the pool would
	// make a live worker look late); the reaper gets the production default.
	r.rdb = newRedisClient(t, rd.URL, 64, nil)
	r.pool = newPool(t, db.URL, 40)
	reaperRDB := newRedisClient(t, rd.URL, 10, r.wire)
	reaperPool := newPool(t, db.URL, 4)

	f, err := sim.New(r.rdb, r.pool, fleetConfig(sc, seed, testLogger(t, slog.LevelWarn)))
	require.NoError(t, err)
	r.fleet = f
	require.NoError(t, f.Start(r.ctx))
	t.Cleanup(f.Stop)

	rp, err := reaper.New(reaperConfig(), reaperRDB, reaperPool, testLogger(t, slog.LevelError))
	require.NoError(t, err)
	r.rec = newPassRecorder(f, rp)
	var stops []func()
	if sc.reapers&withPassLoop != 0 {
		stops = append(stops, startPassLoop(t, r.rec, seed))
	}
	if sc.reapers&withDaemon != 0 {
		stops = append(stops, startDaemon(t, r.rec))
	}
	r.stopReapers = sync.OnceFunc(func() {
		for _, stop := range stops {
			stop()
		}
	})
	t.Cleanup(r.stopReapers)
	return r
}

// msg prefixes a failure message with the seed that repeats the run.
func (r *run) msg(format string, args ...any) string {
	return fmt.Sprintf("seed %d: ", r.seed) + fmt.Sprintf(format, args...)
}

// startPassLoop runs one real pass after another, a random gap apart, until
// the returned function stops it; it returns once the loop is gone.
func startPassLoop(t *testing.T, rec *passRecorder, seed uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, _ = rec.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce}) // recorded by rec
			gap := minPassGap + time.Duration(rng.Int64N(int64(maxPassGap-minPassGap)+1))
			select {
			case <-ctx.Done():
			case <-time.After(gap):
			}
		}
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(stop)
	return stop
}

// startDaemon runs `lock-reaper run`'s daemon with rec as its runner.
func startDaemon(t *testing.T, rec *passRecorder) (stop func()) {
	t.Helper()
	d, err := daemon.New(rec, daemon.Config{
		Schedule: daemonSchedule, FullScanInterval: daemonFullScan, Listen: "127.0.0.1:0",
		ShutdownGrace: 10 * time.Second, Logger: testLogger(t, slog.LevelWarn),
	})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(d.Stop)
	return d.Stop
}

func newRedisClient(t *testing.T, url string, poolSize int, hook redis.Hook) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	opts.PoolSize = poolSize
	c := redis.NewClient(opts)
	if hook != nil {
		c.AddHook(hook)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newPool(t *testing.T, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// testLogger writes records at level and above to the test's output.
func testLogger(t *testing.T, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

package e2e

import (
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

var soakDayFlag = flag.Duration("soak-day", 0, "run TestSoakDay's compressed days for this long (skipped when zero)")

// An ordinary day of a Pulp installation, compressed: production's worker
// ttl of 30 s is 2 s here, so every duration of the day is scaled by 1/15
// (a 90 s window lasts 6 s).
const (
	dayScale      = 15
	dayWindow     = 90 * time.Second / dayScale
	upgradeGrace  = 2 * time.Second // SIGTERM's grace in a rolling upgrade: longer than any task
	scaleGrace    = 100 * time.Millisecond
	redisDown     = 1500 * time.Millisecond // longer than a heartbeat period: every worker PINGs into it
	dayHangFor    = 8 * time.Second
	dayWorkers    = 6
	dayMaxTask    = time.Second
	dayRecovery   = 2 * time.Second // after a window, before its errors stop being expected
	dayPassTime   = time.Second     // a pass's own duration, at most, on a loaded machine
	dayDeadFrac   = 0.9
	dayCheckEvery = 100 * time.Millisecond
)

// The bounds the day holds the reaper to (e2e/doc.go, SOAK.md), each counted
// from the moment the case arose, or from the end of an outage window it
// arose in:
//
//   - a dead worker's locks are free within ttl + grace (the contract's
//     moment of death) + a heartbeat period and heartbeat_recheck (the second
//     read) + two gaps between passes and a pass;
//   - a stranded task is requeued within confirm_after of a compatible
//     worker being online + three gaps between passes and a pass (the first
//     sighting, the confirmation, the write);
//   - a stuck-canceling task (a stranded task a user canceled) is canceled
//     within confirm_after + three gaps between passes and a pass of becoming
//     stuck (the later of the cancel and the stranding);
//   - a claimed-never-started task is reported within confirm_after + three
//     gaps between passes and a pass.
func deadWorkerBound() time.Duration {
	return workerTTL + heartbeatGrace + workerTTL/3 + testenv.HeartbeatRecheck + 2*maxPassGap + dayPassTime
}

func strandedBound() time.Duration       { return confirmAfter + 3*maxPassGap + dayPassTime }
func stuckCancelingBound() time.Duration { return confirmAfter + 3*maxPassGap + dayPassTime }
func notStartedBound() time.Duration     { return confirmAfter + 3*maxPassGap + dayPassTime }
func version(minor int) sim.Versions {
	return sim.Versions{"core": fmt.Sprintf("3.%d.0", minor), "file": fmt.Sprintf("1.%d.0", minor-100)}
}
func (d *day) sleep(dur time.Duration) { ctxwait.Sleep(d.ctx, dur) }

// dayPlan is the pace of a day: CI's short form packs the events closer and
// replaces workers faster than the soak, with every event kind kept.
type dayPlan struct {
	gap         time.Duration // between events
	upgradeStep time.Duration // between the replacements of a rolling upgrade
	rate        float64       // tasks dispatched a second, below what the workers run
}

var (
	ciDayPlan   = dayPlan{gap: 2 * time.Second, upgradeStep: time.Second, rate: 10}
	soakDayPlan = dayPlan{gap: 5 * time.Second, upgradeStep: 2 * time.Second, rate: 10}
)

// TestDay runs one compressed day in CI.
func TestDay(t *testing.T) {
	t.Parallel()
	dayRun(t, 0)
}

// TestSoakDay runs compressed days, one after another, for -soak-day.
//
//	go test ./e2e -run SoakDay -soak-day 6m -timeout 30m -v
func TestSoakDay(t *testing.T) {
	if *soakDayFlag <= 0 {
		t.Skip("runs only with -soak-day DURATION, e.g. go test ./e2e -run SoakDay -soak-day 6m -timeout 30m -v")
	}
	dayRun(t, *soakDayFlag)
}

// day is the state of a day run.
type day struct {
	*run
	redis  *redisserver.Server
	ro     *readOnlySwitch
	plan   dayPlan
	minor  int // the workers' release: version(minor)
	mu     sync.Mutex
	events []dayEvent
	// upgrades: when each rolling upgrade began, and when its first new
	// worker was online (a stranded task's clock starts then).
	upgrades []upgrade
}

type dayEvent struct {
	name       string
	start, end time.Time
	outage     bool
}

type upgrade struct{ began, compatible time.Time }

func (d *day) event(name string, outage bool, fn func()) {
	start := time.Now()
	fn()
	d.mu.Lock()
	d.events = append(d.events, dayEvent{name: name, start: start, end: time.Now(), outage: outage})
	d.mu.Unlock()
	d.t.Logf("%v: %s (%v)", start.Sub(d.started).Round(time.Millisecond), name, time.Since(start).Round(time.Millisecond))
}

// outages returns the outage windows so far, each extended by dayRecovery.
func (d *day) outages() []dayEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []dayEvent
	for _, e := range d.events {
		if e.outage {
			e.end = e.end.Add(dayRecovery)
			out = append(out, e)
		}
	}
	return out
}

// clockStart moves a case's start past the outage windows that overlap
// [at, at+bound]: the reaper cannot write, or is held, during them.
func clockStart(at time.Time, bound time.Duration, outages []dayEvent) (time.Time, bool) {
	moved := false
	for _, o := range outages {
		if o.start.Before(at.Add(bound)) && o.end.After(at) {
			at, moved = o.end, true
		}
	}
	return at, moved
}

func dayRun(t *testing.T, soak time.Duration) {
	seed := testSeed(t)
	t.Logf("seed %d: repeat with go test ./e2e -run '^%s$' -seed %d", seed, t.Name(), seed)
	srv := redisserver.Start(t)
	db := testenv.NewDatabase(t)
	d := &day{ro: &readOnlySwitch{}, redis: srv, minor: 115, plan: ciDayPlan}
	if soak > 0 {
		d.plan = soakDayPlan
	}
	d.run = &run{t: t, seed: seed, ctx: t.Context(), wire: newWireLog(), started: time.Now(), sc: scenario{workers: dayWorkers}}
	var err error
	// redis-py's PING fails at once when Redis is down; go-redis would
	// retry until the restarted server answers.
	opts, err := redis.ParseURL(srv.URL(0))
	require.NoError(t, err)
	opts.PoolSize, opts.MaxRetries, opts.DialerRetries = 64, -1, 1
	d.rdb = redis.NewClient(opts)
	t.Cleanup(func() { _ = d.rdb.Close() })
	d.pool, err = d.ro.pool(d.ctx, db.URL, 40)
	require.NoError(t, err)
	t.Cleanup(d.pool.Close)
	reaperRDB := newRedisClient(t, srv.URL(0), 10, d.wire)
	reaperPool, err := d.ro.pool(d.ctx, db.URL, 4)
	require.NoError(t, err)
	t.Cleanup(reaperPool.Close)

	f, err := sim.New(d.rdb, d.pool, sim.Config{
		Workers: dayWorkers, APIs: 2, Hostname: "day",
		WorkerTTL: workerTTL, APITTL: apiTTL, HeartbeatGrace: heartbeatGrace,
		MinTaskDuration: 20 * time.Millisecond, MaxTaskDuration: dayMaxTask, ImmediateDuration: 10 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, FetchLimit: 40, Repositories: 64, SharedRepoFraction: 0.3,
		ImmediateInTransaction: true, RestartReleasesOwnLocks: true, RestartAfterShutdown: 500 * time.Millisecond,
		WorkerVersions: version(d.minor), Seed: seed,
		Dispatch: sim.DispatchConfig{Rate: d.plan.rate, ImmediateFraction: 0.1, CancelRate: 1},
		Faults:   sim.FaultRates{HangBeforeStart: 0.003, HangFor: dayHangFor},
		Logger:   testLogger(t, slog.LevelWarn),
	})
	require.NoError(t, err)
	f.SetTaskVersions(version(d.minor))
	d.fleet = f
	require.NoError(t, f.Start(d.ctx))
	t.Cleanup(f.Stop)

	cfg := reaperConfig()
	// The mass-death guard stays on, as in production: it is what holds the
	// reaper during a stall of every heartbeat. The simulator's dead rows
	// pile up (pulpcore's cleanup would delete them; nightCleanup does,
	// between days), so the guard trips only when 90 % of the rows are dead.
	cfg.MaxDeadFraction = dayDeadFrac
	rp, err := reaper.New(cfg, reaperRDB, reaperPool, testLogger(t, slog.LevelError))
	require.NoError(t, err)
	d.rec = newPassRecorder(f, rp)
	stops := []func(){startPassLoop(t, d.rec, seed), startDaemon(t, d.rec)}
	d.stopReapers = sync.OnceFunc(func() {
		for _, stop := range stops {
			stop()
		}
	})
	t.Cleanup(d.stopReapers)
	deaths := d.watchDeaths()

	days := 0
	for {
		days++
		d.oneDay(days)
		if soak == 0 || time.Since(d.started) >= soak {
			break
		}
		d.nightCleanup()
	}
	quietAt := d.quietDay()
	d.converge(quietAt)
	d.drain()
	deathFigures := deaths()
	d.stop()
	d.checkDay(days, deathFigures)
}

// oneDay is the day's script.
func (d *day) oneDay(n int) {
	f := d.fleet
	d.t.Logf("day %d", n)
	d.event("morning", false, func() {
		// One task process hangs before set_running every day, besides
		// the random ones: claimed-not-started.
		f.Inject(sim.FaultHangBeforeStart)
		d.sleep(d.plan.gap)
	})
	d.event("rolling upgrade", false, func() {
		// The new API processes come first and dispatch tasks that need
		// the new plugins, which the old workers claim and strand. A user
		// cancels one of those: it stays canceling (stuck-canceling).
		d.minor++
		f.SetTaskVersions(version(d.minor))
		up := upgrade{began: time.Now()}
		d.sleep(d.plan.gap / 2)
		d.cancelAStranded(up.began)
		for _, old := range d.liveWorkers() {
			_, err := f.AddWorkerWithVersions(d.ctx, version(d.minor))
			require.NoError(d.t, err)
			if up.compatible.IsZero() {
				up.compatible = time.Now()
				d.mu.Lock()
				d.upgrades = append(d.upgrades, up)
				d.mu.Unlock()
			}
			if _, err := f.Terminate(old, upgradeGrace); err != nil {
				d.t.Logf("rolling upgrade: %v", err) // it shut down on its own meanwhile
			}
			d.sleep(d.plan.upgradeStep)
		}
	})
	d.event("scale-up", false, func() {
		for range 3 {
			_, err := f.AddWorkerWithVersions(d.ctx, version(d.minor))
			require.NoError(d.t, err)
		}
		d.sleep(d.plan.gap)
	})
	d.event("scale-down", false, func() {
		// Two busy workers whose task outlives the grace period get
		// SIGKILL; one more gets a grace period long enough.
		busy := d.busyWorkers()
		for i, name := range busy[:min(2, len(busy))] {
			killed, err := f.Terminate(name, scaleGrace)
			d.t.Logf("scale-down %d: %s SIGKILL %v %v", i, name, killed, err)
		}
		if live := d.liveWorkers(); len(live) > 3 {
			_, _ = f.Terminate(live[0], upgradeGrace)
		}
		d.sleep(d.plan.gap)
	})
	d.event("database read-only", true, func() {
		f.ExpectErrors(true)
		d.ro.set(true)
		d.sleep(dayWindow)
		d.ro.set(false)
	})
	d.recover()
	d.event("heartbeat stall", true, func() {
		f.ExpectErrors(true)
		d.stallHeartbeats(dayWindow)
	})
	d.recover()
	d.event("Redis restart", true, func() {
		f.ExpectErrors(true)
		d.redis.Restart(d.t, redisDown)
		f.LocksLost(time.Now())
	})
	d.recover()
	d.event("same-name restart", false, func() {
		live := d.liveWorkers()
		require.NotEmpty(d.t, live)
		name := live[len(live)/2]
		require.NoError(d.t, f.Kill(name))
		d.sleep(500 * time.Millisecond)
		require.NoError(d.t, f.Restart(d.ctx, name))
		d.sleep(d.plan.gap)
	})
}

// recover waits for the fleet to come back from an outage, then stops
// expecting errors.
func (d *day) recover() {
	d.sleep(dayRecovery)
	d.fleet.ExpectErrors(false)
	d.sleep(d.plan.gap)
}

// stallHeartbeats holds a SHARE lock on core_appstatus for dur: every
// heartbeat write waits (and lands when it ends, with the time it was made),
// none fails, as under a migration's lock or a paused pooler.
func (d *day) stallHeartbeats(dur time.Duration) {
	conn, err := d.pool.Acquire(d.ctx)
	require.NoError(d.t, err)
	defer conn.Release()
	err = pgx.BeginFunc(d.ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(d.ctx, `LOCK TABLE core_appstatus IN SHARE MODE`); err != nil {
			return err
		}
		d.sleep(dur)
		return nil
	})
	require.NoError(d.t, err)
}

// cancelAStranded cancels a task stranded since the upgrade began, as a
// user would cancel a task that never starts.
func (d *day) cancelAStranded(since time.Time) {
	for _, ev := range d.fleet.Faults() {
		if ev.Kind == sim.FaultStranded && !ev.At.Before(since) {
			if err := d.fleet.Cancel(d.ctx, ev.Task); err != nil {
				d.t.Logf("cancel of stranded task %s: %v", ev.Task, err)
			}
			return
		}
	}
	d.t.Logf("no task stranded yet to cancel")
}

func (d *day) liveWorkers() []string {
	var out []string
	for _, p := range d.fleet.Processes() {
		if p.AppType == sim.AppTypeWorker && p.Alive && !p.Removed {
			out = append(out, p.Name)
		}
	}
	return out
}

func (d *day) busyWorkers() []string {
	live := d.liveWorkers()
	var out []string
	for _, h := range d.fleet.ActiveHoldings() {
		if h.Kind == sim.KindTask && slices.Contains(live, h.Owner) && !slices.Contains(out, h.Owner) {
			out = append(out, h.Owner)
		}
	}
	return out
}

// nightCleanup deletes the rows of workers dead for long whose tasks are all
// final, as pulpcore's own maintenance deletes missing workers' rows, so
// that a multi-day run's dead rows do not pile up.
func (d *day) nightCleanup() {
	err := pgx.BeginFunc(d.ctx, d.pool, func(tx pgx.Tx) error {
		const dead = `SELECT pulp_id FROM core_appstatus a WHERE app_type = 'worker'
  AND last_heartbeat < now() - ttl - interval '10 seconds'
  AND NOT EXISTS (SELECT 1 FROM core_task t WHERE t.app_lock_id = a.pulp_id AND t.state IN ('waiting', 'running', 'canceling'))`
		if _, err := tx.Exec(d.ctx, `UPDATE core_task SET app_lock_id = NULL WHERE app_lock_id IN (`+dead+`)`); err != nil {
			return err
		}
		tag, err := tx.Exec(d.ctx, `DELETE FROM core_appstatus WHERE pulp_id IN (`+dead+`)`)
		d.t.Logf("night: deleted %d dead worker rows", tag.RowsAffected())
		return err
	})
	require.NoError(d.t, err)
}

// quietDay stops dispatch and faults; the hung tasks run out.
func (d *day) quietDay() time.Time {
	require.NoError(d.t, d.fleet.SetFaultRates(sim.FaultRates{}))
	require.NoError(d.t, d.fleet.SetDispatch(sim.DispatchConfig{}))
	at := time.Now()
	d.rec.markQuiet(at)
	d.t.Logf("quiet after %v; stats %+v", at.Sub(d.started).Round(time.Millisecond), d.fleet.Stats())
	return at
}

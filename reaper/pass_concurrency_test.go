package reaper_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// ccActing counts the reapers between deciding what to do (the Adjust hook,
// right after judging) and the last write of their pass (the suspects, which
// a real pass always writes last), and remembers the most at once.
type ccActing struct {
	now, most atomic.Int32
}

func (a *ccActing) enter() {
	n := a.now.Add(1)
	for {
		m := a.most.Load()
		if n <= m || a.most.CompareAndSwap(m, n) {
			return
		}
	}
}

// leaveHook ends a reaper's acting once its suspects write came back.
func (a *ccActing) leaveHook() redis.Hook {
	return sfHook{after: func(cmd redis.Cmder) {
		if args := cmd.Args(); cmd.Name() == "del" && len(args) == 2 && args[1] == redislocks.SuspectsKey {
			a.now.Add(-1)
		}
	}}
}

// TestConcurrentReapersActOneAtATime starts eight reapers, each with its own
// Redis client and database pool, at the same moment on the same fleet, three
// passes each. The first to get the pass lock holds it until every other
// reaper's first pass is over, so that all of them contend for it. Every
// stale holding must be released exactly once in total, every lost task
// updated exactly once, and no two reapers may ever be acting at once.
//
// Either advisory lock alone must keep them apart, so the test runs with
// lock-reaper's own lock alone, and with pulpcore's cleanup lock as well.
func TestConcurrentReapersActOneAtATime(t *testing.T) {
	t.Parallel()
	for _, coordinate := range []bool{false, true} {
		t.Run(fmt.Sprintf("coordinate_with_pulpcore=%v", coordinate), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.actOneAtATime(coordinate, func() *pgxpool.Pool { return f.reaperPool("", nil) })
		})
	}
}

// actOneAtATime runs the reapers of TestConcurrentReapersActOneAtATime,
// each on a pool from newPool.
func (f *fixture) actOneAtATime(coordinate bool, newPool func() *pgxpool.Pool) {
	t := f.T
	fl := f.buildFleet(30) // 61 stale holdings, 30 lost tasks
	const reapers, passes = 8, 3
	ctx, cancel := context.WithTimeout(f.Ctx, ftOuterDeadline)
	defer cancel()

	var acting ccActing
	var firstActor atomic.Bool
	var firstPassesDone atomic.Int32
	othersDone := make(chan struct{})
	adjust := func(*judge.Plan) {
		acting.enter()
		if firstActor.CompareAndSwap(false, true) {
			select {
			case <-othersDone:
			case <-ctx.Done():
				t.Error("the other reapers' first passes did not end while the lock was held")
			}
		}
	}

	start := make(chan struct{})
	reports := make(chan *reaper.Report, reapers*passes)
	var wg sync.WaitGroup
	for range reapers {
		rdb := f.redisClient("", acting.leaveHook())
		pool := newPool()
		// Connected before the start, so that they race for the lock itself.
		require.NoError(t, rdb.Ping(ctx).Err())
		require.NoError(t, pool.Ping(ctx))
		r := f.reaperOn(rdb, pool, func(c *reaper.Config) { c.CoordinateWithPulpcore = coordinate })
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for round := range passes {
				rep, err := r.RunOnceAdjusted(ctx, reaper.Options{Mode: reaper.ModeOnce}, adjust)
				if err != nil {
					t.Errorf("pass failed: %v", err)
				}
				reports <- rep
				if round == 0 && firstPassesDone.Add(1) == reapers-1 {
					close(othersDone)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(reports)

	require.EqualValues(t, 1, acting.most.Load(), "two reapers acted at once")
	released, updated, skipped := 0, 0, 0
	for rep := range reports {
		if rep.Skipped != "" {
			skipped++
			require.Empty(t, rep.Findings, "a skipped pass reads nothing")
			continue
		}
		holdings, tasks := sfResults(rep)
		for res := range holdings {
			require.Equal(t, reaper.ResultReleased, res, "a reaper raced another")
		}
		for res := range tasks {
			require.Equal(t, reaper.ResultUpdated, res, "a reaper raced another")
		}
		released += rep.Summary.Released
		updated += rep.Summary.TasksUpdated
	}
	require.GreaterOrEqual(t, skipped, reapers-1, "every first pass but one skipped")
	require.Equal(t, len(fl.stale), released, "each stale holding released exactly once")
	require.Equal(t, len(fl.lost), updated, "each lost task updated exactly once")
	f.requireConverged(fl)
}

// TestConcurrentReaperSkipsWhileLocked: a reaper skips its pass, changing
// nothing, while another lock-reaper holds the pass lock (whatever
// coordinate_with_pulpcore says) or while pulpcore's worker cleanup holds
// its lock (0, 11); with coordinate_with_pulpcore off it then acts. An audit
// writes nothing and never waits for either lock.
func TestConcurrentReaperSkipsWhileLocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(3)
	before := f.redisState()

	// holdLock takes an advisory lock the way another process would, on a
	// connection given back even when the test fails first.
	holdLock := func(sql string, args ...any) func() {
		conn, err := f.DB.Pool.Acquire(f.Ctx)
		require.NoError(t, err)
		var tx pgx.Tx
		var once sync.Once
		unlock := func() {
			once.Do(func() {
				defer conn.Release()
				if tx != nil {
					_ = tx.Rollback(f.Ctx)
				}
				_, _ = conn.Exec(f.Ctx, "SELECT pg_advisory_unlock_all()")
			})
		}
		t.Cleanup(unlock)
		tx, err = conn.Begin(f.Ctx)
		require.NoError(t, err)
		_, err = tx.Exec(f.Ctx, sql, args...)
		require.NoError(t, err)
		return unlock
	}
	coordinated := f.reaper(nil)
	uncoordinated := f.reaper(func(c *reaper.Config) { c.CoordinateWithPulpcore = false })

	unlock := holdLock("SELECT pg_advisory_lock($1)", pulpdb.PassLockKey) // another lock-reaper's pass
	for _, r := range []*reaper.Reaper{coordinated, uncoordinated} {
		rep := f.pass(r, reaper.ModeOnce)
		require.NotEmpty(t, rep.Skipped)
		require.Equal(t, exitcode.OK, exitcode.Of(rep), "a skipped pass is not an error")
	}
	audit := f.pass(coordinated, reaper.ModeAudit)
	require.Empty(t, audit.Skipped, "an audit does not need the lock")
	require.Equal(t, exitcode.Findings, exitcode.Of(audit))
	unlock()
	require.Equal(t, before, f.redisState())

	unlock = holdLock("SELECT pg_advisory_xact_lock(0, 11)") // pulpcore's cleanup runs
	rep := f.pass(coordinated, reaper.ModeOnce)
	require.NotEmpty(t, rep.Skipped)
	require.Equal(t, before, f.redisState())
	rep = f.pass(uncoordinated, reaper.ModeOnce)
	require.Empty(t, rep.Skipped)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	f.requireConverged(fl)
	unlock()
}

// TestConcurrentPulpcoreCleanupWaitsForReaper: while a coordinating reaper
// acts, pulpcore's worker cleanup cannot take its lock (0, 11).
func TestConcurrentPulpcoreCleanupWaitsForReaper(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.buildFleet(2)
	tryCleanupLock := func() bool {
		tx, err := f.DB.Pool.Begin(f.Ctx)
		require.NoError(t, err)
		defer tx.Rollback(f.Ctx) // error dropped: read-only probe
		var got bool
		require.NoError(t, tx.QueryRow(f.Ctx, "SELECT pg_try_advisory_xact_lock(0, 11)").Scan(&got))
		return got
	}
	var duringPass bool
	rep, err := f.reaper(nil).RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) { duringPass = tryCleanupLock() })
	require.NoError(t, err)
	require.Empty(t, rep.Skipped)
	require.False(t, duringPass, "pulpcore's cleanup got its lock during a pass")
	require.True(t, tryCleanupLock(), "the lock is free again after the pass")
}

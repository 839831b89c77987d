package reaper_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/faultproxy"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// The fault tests put a fault-injecting TCP proxy between the reaper and the
// real Redis or PostgreSQL and break the network at chosen points of a pass.
// Each checks that no healthy holding was released, that what the report
// calls failed was left untouched, and that the next clean pass completes
// the work.

// ftOuterDeadline bounds a pass that is expected to fail on its own
// per-call timeouts; reaching it means a timeout did not fire.
const ftOuterDeadline = 30 * time.Second

// redisProxy starts a proxy in front of the test's Redis server.
func (f *fixture) redisProxy() *faultproxy.Proxy {
	f.T.Helper()
	p, err := faultproxy.Start(f.Redis.Client.Options().Addr)
	require.NoError(f.T, err)
	f.T.Cleanup(p.Close)
	return p
}

// postgresProxy starts a proxy in front of the test's PostgreSQL server.
func (f *fixture) postgresProxy() *faultproxy.Proxy {
	f.T.Helper()
	cc, err := pgx.ParseConfig(f.DB.URL)
	require.NoError(f.T, err)
	p, err := faultproxy.Start(net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))))
	require.NoError(f.T, err)
	f.T.Cleanup(p.Close)
	return p
}

// requireFailedUntouched checks a failed pass: every finding it meant to
// release is released or failed, and a failed one is still held.
func (f *fixture) requireFailedUntouched(rep *reaper.Report) {
	f.T.Helper()
	for _, fd := range rep.Findings {
		require.Contains(f.T, []reaper.Result{reaper.ResultReleased, reaper.ResultFailed}, fd.Result, fd.Key)
		require.Equal(f.T, fd.Result == reaper.ResultFailed, f.holds(heldKey{fd.Key, fd.Owner}), "%s %s", fd.Key, fd.Result)
	}
}

// finish runs a clean pass and checks it completes the work: only healthy
// holdings (and suspects still waiting for confirmation) are left.
func (f *fixture) finish(fl *builtFleet) {
	f.T.Helper()
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(f.T, exitcode.OK, exitcode.Of(rep), rep.Error)
	require.Empty(f.T, rep.Skipped)
	f.requireConverged(fl)
	audit := f.pass(f.reaper(nil), reaper.ModeAudit)
	for _, fd := range audit.Findings {
		require.NotEqual(f.T, judge.ActionRelease, fd.Action, "left to release: %+v", fd)
	}
	for _, tf := range audit.Tasks {
		require.NotEqual(f.T, judge.ActionUpdate, tf.Action, "left to update: %+v", tf)
	}
}

// awaitPassLockFree waits until the server has let go of the pass lock of
// a session whose connection broke: PostgreSQL frees a session's advisory
// locks only once it notices the session is gone, and until then the next
// reaper rightly skips.
func (f *fixture) awaitPassLockFree() {
	f.T.Helper()
	deadline := time.Now().Add(ftOuterDeadline)
	for {
		var got bool
		// A session lock, taken and given back on the same connection.
		err := f.DB.Pool.AcquireFunc(f.Ctx, func(conn *pgxpool.Conn) error {
			if err := conn.QueryRow(f.Ctx, "SELECT pg_try_advisory_lock($1)", pulpdb.PassLockKey).Scan(&got); err != nil || !got {
				return err
			}
			_, err := conn.Exec(f.Ctx, "SELECT pg_advisory_unlock($1)", pulpdb.PassLockKey)
			return err
		})
		require.NoError(f.T, err)
		if got {
			return
		}
		require.True(f.T, time.Now().Before(deadline), "the server kept the broken session's pass lock")
		time.Sleep(10 * time.Millisecond)
	}
}

// ftOuterContext is the context of a pass expected to end on its own
// per-call timeouts. Should it reach ftOuterDeadline instead, the stall ends
// too, so that the test fails on that rather than hanging.
func ftOuterContext(t *testing.T, stalled *faultproxy.Proxy) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ftOuterDeadline)
	t.Cleanup(cancel)
	stop := context.AfterFunc(ctx, stalled.Resume)
	t.Cleanup(func() { stop() })
	return ctx
}

// TestFaultRedisUnreachableAtStart: a pass that cannot reach Redis fails,
// changes nothing, and the first pass after Redis is back does the work.
func TestFaultRedisUnreachableAtStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4)
	proxy := f.redisProxy()
	proxy.Refuse()
	r := f.reaperOn(f.redisClient(proxy.Addr()), f.DB.Pool, nil)
	redisBefore, dbBefore := f.redisState(), f.dbState()

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.Error(t, err)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	require.Equal(t, redisBefore, f.redisState())
	require.Equal(t, dbBefore, f.dbState())

	proxy.Admit()
	rep, err = r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	f.requireConverged(fl)
}

// TestFaultRedisCutBetweenReleaseBatches: Redis goes away (connections cut,
// new ones refused) right after the first release batch. That batch stands,
// the rest fails untouched, no task is updated, and the next pass finishes.
func TestFaultRedisCutBetweenReleaseBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(8) // 17 stale holdings, 5 batches of 4
	proxy := f.redisProxy()
	var batches atomic.Int32
	cutAfterFirst := sfHook{after: func(cmd redis.Cmder) {
		if sfIsRelease(cmd) && batches.Add(1) == 1 {
			proxy.Refuse()
			proxy.Cut()
		}
	}}
	r := f.reaperOn(f.redisClient(proxy.Addr(), cutAfterFirst), f.DB.Pool, nil)
	dbBefore := f.dbState()

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.Error(t, err)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	holdings, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: 4, reaper.ResultFailed: len(fl.stale) - 4}, holdings)
	f.requireFailedUntouched(rep)
	f.requireHealthy(fl)
	require.Equal(t, map[reaper.Result]int{reaper.ResultFailed: len(fl.lost)}, tasks)
	require.Equal(t, dbBefore, f.dbState(), "no task updated after a failed release")

	proxy.Admit()
	f.finish(fl)
}

// TestFaultRedisStall: Redis stops answering (a stalled network, a blocked
// server) past redis.timeout. The pass fails on its own per-call timeout
// rather than hanging, and nothing is released that the report does not say.
func TestFaultRedisStall(t *testing.T) {
	t.Parallel()

	t.Run("while reading", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		fl := f.buildFleet(4)
		proxy := f.redisProxy()
		r := f.reaperOn(f.redisClient(proxy.Addr()), f.DB.Pool, func(c *reaper.Config) { c.RedisTimeout = 300 * time.Millisecond })
		redisBefore := f.redisState()
		proxy.Stall(0)

		ctx := ftOuterContext(t, proxy)
		rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "the per-call timeout, not the outer deadline, ended the pass")
		require.Equal(t, exitcode.Failed, exitcode.Of(rep))
		require.Empty(t, rep.Findings)
		proxy.Resume()
		require.Equal(t, redisBefore, f.redisState(), "nothing released")
		f.finish(fl)
	})

	t.Run("between release batches", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		fl := f.buildFleet(8)
		proxy := f.redisProxy()
		var batches atomic.Int32
		stallAfterFirst := sfHook{after: func(cmd redis.Cmder) {
			if sfIsRelease(cmd) && batches.Add(1) == 1 {
				proxy.Stall(0)
			}
		}}
		r := f.reaperOn(f.redisClient(proxy.Addr(), stallAfterFirst), f.DB.Pool, func(c *reaper.Config) { c.RedisTimeout = 300 * time.Millisecond })

		ctx := ftOuterContext(t, proxy)
		rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "the per-call timeout, not the outer deadline, ended the pass")
		holdings, _ := sfResults(rep)
		require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: 4, reaper.ResultFailed: len(fl.stale) - 4}, holdings)
		// The stalled request was abandoned with its connection: it must not
		// reach Redis when the network comes back.
		proxy.Resume()
		f.requireFailedUntouched(rep)
		f.requireHealthy(fl)
		f.finish(fl)
	})
}

// TestFaultPostgresUnreachable: no database, no pass: nothing is written.
func TestFaultPostgresUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4)
	proxy := f.postgresProxy()
	proxy.Refuse()
	r := f.reaperOn(f.redisClient(""), f.reaperPool(proxy.Addr(), nil), nil)
	redisBefore, dbBefore := f.redisState(), f.dbState()

	for _, mode := range []string{reaper.ModeAudit, reaper.ModeOnce} {
		rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: mode})
		require.Error(t, err, mode)
		require.Equal(t, exitcode.Failed, exitcode.Of(rep), mode)
	}
	require.Equal(t, redisBefore, f.redisState())
	require.Equal(t, dbBefore, f.dbState())

	proxy.Admit()
	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	f.requireConverged(fl)
}

// TestFaultPostgresStall: the database stops answering once the pass has its
// lock and has read Redis. The snapshot fails on database.timeout and the
// pass writes nothing.
func TestFaultPostgresStall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4)
	f.noTaskSuspect()
	proxy := f.postgresProxy()
	pool := f.reaperPool(proxy.Addr(), nil)
	r := f.reaperOn(f.redisClient(""), pool, func(c *reaper.Config) { c.DatabaseTimeout = 500 * time.Millisecond })
	redisBefore := f.redisState()
	// Two connections open before the stall (the pass lock's and the
	// snapshot's), so that the snapshot waits on a statement, not on a dial.
	var conns []*pgxpool.Conn
	for range 2 {
		c, err := pool.Acquire(f.Ctx)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}

	ctx := ftOuterContext(t, proxy)
	// The pass lock is taken before Redis is read; the first progress report
	// comes after Redis answered, before the database snapshot.
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce, Progress: func(int) { proxy.Stall(0) }})
	require.ErrorIs(t, err, reaper.ErrNoSnapshot)
	require.NoError(t, ctx.Err(), "the per-call timeout, not the outer deadline, ended the pass")
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	proxy.Resume()
	require.Equal(t, redisBefore, f.redisState(), "nothing written without a snapshot")
	f.awaitPassLockFree()

	rep, err = r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.Empty(t, rep.Skipped)
	f.requireConverged(fl)
}

// TestFaultPostgresStatementBlocked: another transaction holds core_task
// locked, so the snapshot's query waits on the server. database.timeout ends
// it; the pass writes nothing.
func TestFaultPostgresStatementBlocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4)
	f.noTaskSuspect()
	redisBefore := f.redisState()
	locker, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(t, err)
	defer locker.Rollback(f.Ctx) // error dropped: rolled back below; this is for a failing test
	_, err = locker.Exec(f.Ctx, "LOCK TABLE core_task IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	r := f.reaper(func(c *reaper.Config) { c.DatabaseTimeout = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(f.Ctx, ftOuterDeadline)
	defer cancel()
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.ErrorIs(t, err, reaper.ErrNoSnapshot)
	require.NoError(t, ctx.Err(), "the per-call timeout, not the outer deadline, ended the pass")
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	require.Equal(t, redisBefore, f.redisState())

	require.NoError(t, locker.Rollback(f.Ctx))
	f.finish(fl)
}

// TestFaultPostgresDropsBeforeTaskUpdates: the database connection drops
// between the snapshot and the task updates. The releases conditional on
// Redis alone stand; the dead owner's shared membership, whose release first
// reads the database (a reborn name may have taken a task reserving it),
// fails and is left; no task is half-updated; the next pass finishes.
func TestFaultPostgresDropsBeforeTaskUpdates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4)
	proxy := f.postgresProxy()
	r := f.reaperOn(f.redisClient(""), f.reaperPool(proxy.Addr(), nil), nil)
	dbBefore := f.dbState()

	rep, err := r.RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		proxy.Refuse()
		proxy.Cut()
	})
	require.Error(t, err)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	holdings, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: len(fl.stale) - 1, reaper.ResultFailed: 1}, holdings)
	require.Equal(t, reaper.ResultFailed, findingFor(rep, judge.ResourceKeyPrefix+domain, fl.deadOwner).Result)
	require.Equal(t, map[reaper.Result]int{reaper.ResultFailed: len(fl.lost)}, tasks)
	require.Equal(t, dbBefore, f.dbState())
	f.requireHealthy(fl)

	proxy.Admit()
	f.awaitPassLockFree()
	f.finish(fl)
}

// TestFaultLockChangesOwner: between the snapshot and the release, stale
// locks change hands. The compare-and-release leaves each alone and says so.
func TestFaultLockChangesOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4)
	live := fl.liveOwners[0]
	rdb := f.Redis.Client
	var taskKey, resourceKey string
	for _, h := range fl.stale {
		if taskKey == "" && strings.HasPrefix(h.key, judge.TaskKeyPrefix) {
			taskKey = h.key
		}
		if resourceKey == "" && strings.HasPrefix(h.key, judge.ResourceKeyPrefix) && h.key != judge.ResourceKeyPrefix+domain {
			resourceKey = h.key
		}
	}

	rep, err := f.reaper(nil).RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		// A live worker takes the task key, and an exclusive lock becomes a
		// shared one that the dead owner is still a member of.
		require.NoError(t, rdb.Set(f.Ctx, taskKey, live, 0).Err())
		require.NoError(t, rdb.Del(f.Ctx, resourceKey).Err())
		require.NoError(t, rdb.SAdd(f.Ctx, resourceKey, fl.deadOwner, live).Err())
	})
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, taskKey, fl.deadOwner).Result)
	require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, resourceKey, fl.deadOwner).Result)
	require.Equal(t, live, f.Get(taskKey), "untouched")
	require.ElementsMatch(t, []string{fl.deadOwner, live}, f.Members(resourceKey), "untouched")
	holdings, _ := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: len(fl.stale) - 2, reaper.ResultOwnerChanged: 2}, holdings)
	f.requireHealthy(fl)
}

// TestFaultTaskChangesState: between the snapshot and the update, lost tasks
// move on. The conditional update skips them and changes nothing.
func TestFaultTaskChangesState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(4) // lost[0] running, lost[1] waiting
	liveRow := f.Worker("1@live-worker-new", time.Second)

	rep, err := f.reaper(nil).RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		_, err := f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET state = 'completed', finished_at = now() WHERE pulp_id = $1", fl.lost[0])
		require.NoError(t, err)
		_, err = f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET app_lock_id = $2 WHERE pulp_id = $1", fl.lost[1], liveRow)
		require.NoError(t, err)
	})
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.Equal(t, reaper.ResultSkipped, taskFindingFor(rep, fl.lost[0]).Result)
	require.Equal(t, reaper.ResultSkipped, taskFindingFor(rep, fl.lost[1]).Result)
	state, _, reason, _ := f.TaskRow(fl.lost[0])
	require.Equal(t, judge.StateCompleted, state, "untouched")
	require.Nil(t, reason)
	state, lock, _, _ := f.TaskRow(fl.lost[1])
	require.Equal(t, judge.StateWaiting, state)
	require.Equal(t, liveRow, *lock, "the new claim stands")
	_, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultUpdated: len(fl.lost) - 2, reaper.ResultSkipped: 2}, tasks)
	f.requireHealthy(fl)
}

// TestFaultPostgresCommitReplyLost: the connection breaks after PostgreSQL
// received a batch's COMMIT and before its reply. The commit's outcome is
// unknown, so the batch's rows are read back: the report and the cancel
// signals match what the database holds (the tasks updated, the one that
// lost a race skipped), and the pass goes on with the next batches.
func TestFaultPostgresCommitReplyLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(10)
	proxy := f.postgresProxy()
	r := f.reaperOn(f.redisClient(""), f.reaperPool(proxy.Addr(), nil), nil)
	fired := proxy.DropReplyAfter([]byte("WITH input AS"), []byte("commit"))

	var raced string
	rep, err := r.RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(p *judge.Plan) {
		// The first task of the first batch finishes after the snapshot.
		raced = p.Tasks[0].ID
		_, err := f.DB.Pool.Exec(f.Ctx, "UPDATE core_task SET state = 'completed' WHERE pulp_id = $1", raced)
		require.NoError(t, err)
	})
	select {
	case <-fired:
	default:
		t.Fatal("no commit reply was dropped")
	}
	require.NoError(t, err)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	_, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultUpdated: len(fl.lost) - 1, reaper.ResultSkipped: 1}, tasks)
	require.Equal(t, len(fl.lost)-1, rep.Summary.TasksUpdated)
	for _, tf := range rep.Tasks {
		state, _, _, _ := f.TaskRow(tf.ID)
		if tf.ID == raced {
			require.Equal(t, reaper.ResultSkipped, tf.Result)
			require.Equal(t, judge.StateCompleted, state)
			continue
		}
		require.Equal(t, reaper.ResultUpdated, tf.Result, tf.ID)
		require.Equal(t, tf.StateAfter, state, "the report says what the database holds: %s", tf.ID)
		signalled := f.Redis.Client.Exists(f.Ctx, redislocks.CancelSignalPrefix+tf.ID).Val() == 1
		require.Equal(t, tf.StateBefore == judge.StateRunning, signalled, "the cancel signal of %s (%s)", tf.ID, tf.StateBefore)
	}
}

package reaper_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The safety tests check the promises of docs/safety.md against real Redis and
// PostgreSQL: the guards, "no database snapshot, no writes", and a pass that
// is stopped finishing its batch and leaving nothing half-done. Helpers shared
// by pass_safety_test.go, pass_faults_test.go, read_badinput_test.go and pass_concurrency_test.go
// carry the sf prefix.

// heldKey is one holding: a lock key and the owner that holds it.
type heldKey struct{ key, owner string }

// builtFleet is four live workers each running one healthy task, and one dead
// worker that left stale locks and lost tasks behind.
type builtFleet struct {
	liveOwners []string
	deadOwner  string
	deadRow    string
	// healthy holdings must survive every pass; stale ones a pass releases.
	healthy []heldKey
	stale   []heldKey
	// lost tasks a pass cancels (running) or requeues (waiting).
	lost []string
}

// buildFleet writes the fleet; the dead worker has n tasks, alternately running
// and waiting-claimed, each holding its task lock and a repository (every
// third one as a legacy lock, without registry entries), and it is a member
// of the domain's shared set once.
func (f *fixture) buildFleet(n int) *builtFleet {
	f.T.Helper()
	fl := &builtFleet{deadOwner: "1@dead-worker"}
	for i := range 4 {
		name := fmt.Sprintf("1@live-worker-%d", i)
		row := f.Worker(name, time.Second)
		r := repo()
		task := f.Task(judge.StateRunning, row, []string{r, "shared:" + domain}, -1)
		f.Acquire(name, task, []string{r, "shared:" + domain}, false)
		fl.liveOwners = append(fl.liveOwners, name)
		fl.healthy = append(fl.healthy, heldKey{judge.TaskKeyPrefix + task, name}, heldKey{judge.ResourceKeyPrefix + r, name}, heldKey{judge.ResourceKeyPrefix + domain, name})
	}
	fl.deadRow = f.Worker(fl.deadOwner, time.Hour)
	for i := range n {
		state := judge.StateRunning
		if i%2 == 1 {
			state = judge.StateWaiting
		}
		r := repo()
		task := f.Task(state, fl.deadRow, []string{r, "shared:" + domain}, -1)
		f.Acquire(fl.deadOwner, task, []string{r, "shared:" + domain}, i%3 == 2)
		fl.stale = append(fl.stale, heldKey{judge.TaskKeyPrefix + task, fl.deadOwner}, heldKey{judge.ResourceKeyPrefix + r, fl.deadOwner})
		fl.lost = append(fl.lost, task)
	}
	if n > 0 {
		fl.stale = append(fl.stale, heldKey{judge.ResourceKeyPrefix + domain, fl.deadOwner})
	}
	return fl
}

// holds reports whether the owner still holds the key.
func (f *fixture) holds(h heldKey) bool {
	f.T.Helper()
	typ, err := f.Redis.Client.Type(f.Ctx, h.key).Result()
	require.NoError(f.T, err)
	switch typ {
	case "string":
		return f.Get(h.key) == h.owner
	case "set":
		ok, err := f.Redis.Client.SIsMember(f.Ctx, h.key, h.owner).Result()
		require.NoError(f.T, err)
		return ok
	}
	return false
}

// requireHealthy fails the test if any healthy holding is gone.
func (f *fixture) requireHealthy(fl *builtFleet) {
	f.T.Helper()
	for _, h := range fl.healthy {
		require.True(f.T, f.holds(h), "healthy holding released: %v", h)
	}
}

// requireConverged checks the state a correct reaper ends in: only the
// healthy holdings are left and every lost task was finished or requeued.
func (f *fixture) requireConverged(fl *builtFleet) {
	f.T.Helper()
	f.requireHealthy(fl)
	for _, h := range fl.stale {
		require.False(f.T, f.holds(h), "stale holding kept: %v", h)
	}
	for _, id := range fl.lost {
		state, lock, _, _ := f.TaskRow(id)
		if state == judge.StateWaiting {
			require.Nil(f.T, lock, "orphaned claim of %s requeued", id)
		} else {
			require.Equal(f.T, judge.StateCanceled, state, id)
		}
	}
}

// redisState renders every key of the test's Redis database with its type,
// value and whether it expires, so that two states compare as strings.
func (f *fixture) redisState() string {
	f.T.Helper()
	ctx, rdb := f.Ctx, f.Redis.Client
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(f.T, err)
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, err := rdb.Type(ctx, k).Result()
		require.NoError(f.T, err)
		ttl, err := rdb.PTTL(ctx, k).Result()
		require.NoError(f.T, err)
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "set":
			var ms []string
			ms, err = rdb.SMembers(ctx, k).Result()
			sort.Strings(ms)
			v = ms
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "stream":
			v, err = rdb.XRange(ctx, k, "-", "+").Result()
		}
		require.NoError(f.T, err)
		fmt.Fprintf(&b, "%q %s expires=%v %v\n", k, typ, ttl > 0, v)
	}
	return b.String()
}

// dbState renders every task and progress report row a pass may change.
func (f *fixture) dbState() string {
	f.T.Helper()
	var b strings.Builder
	rows, err := f.DB.Pool.Query(f.Ctx, `SELECT pulp_id::text, state, coalesce(app_lock_id::text, '-'),
		coalesce(finished_at::text, '-'), coalesce(error::text, '-') FROM core_task ORDER BY pulp_id`)
	require.NoError(f.T, err)
	for rows.Next() {
		var id, state, lock, fin, e string
		require.NoError(f.T, rows.Scan(&id, &state, &lock, &fin, &e))
		fmt.Fprintln(&b, id, state, lock, fin, e)
	}
	require.NoError(f.T, rows.Err())
	rows, err = f.DB.Pool.Query(f.Ctx, `SELECT pulp_id::text, state FROM core_progressreport ORDER BY pulp_id`)
	require.NoError(f.T, err)
	for rows.Next() {
		var id, state string
		require.NoError(f.T, rows.Scan(&id, &state))
		fmt.Fprintln(&b, "report", id, state)
	}
	require.NoError(f.T, rows.Err())
	return b.String()
}

// redisClient is a Redis client of the test's database for the reaper
// alone, with the production client's behaviour (context deadlines honoured)
// but no socket timeout of its own, so that only the reaper's per-call
// timeouts can end a stalled call; a hook on it sees only the reaper's calls.
// addr, when set, replaces the server's address (a fault proxy).
func (f *fixture) redisClient(addr string, hooks ...redis.Hook) *redis.Client {
	f.T.Helper()
	if addr == "" {
		addr = f.Redis.Client.Options().Addr
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, DB: f.Redis.DB, ContextTimeoutEnabled: true,
		ReadTimeout: -1, WriteTimeout: -1, DialTimeout: 2 * time.Second,
	})
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	f.T.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// reaperPool is a pool on the test's database for the reaper alone; hostPort, when
// set, replaces the server's address (a fault proxy), and tracer sees every
// statement.
func (f *fixture) reaperPool(hostPort string, tracer pgx.QueryTracer) *pgxpool.Pool {
	f.T.Helper()
	pc, err := pgxpool.ParseConfig(f.DB.URL)
	require.NoError(f.T, err)
	if hostPort != "" {
		host, port, err := net.SplitHostPort(hostPort)
		require.NoError(f.T, err)
		pc.ConnConfig.Host = host
		_, err = fmt.Sscan(port, &pc.ConnConfig.Port)
		require.NoError(f.T, err)
		// A URL without sslmode (prefer) parses with fallbacks to the
		// original host: they would reach the real database. And the proxy
		// reads the protocol in the clear: a server with ssl on would
		// otherwise be spoken to in TLS through it.
		pc.ConnConfig.Fallbacks = nil
		pc.ConnConfig.TLSConfig = nil
	}
	pc.ConnConfig.Tracer = tracer
	pc.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(f.Ctx, pc)
	require.NoError(f.T, err)
	f.T.Cleanup(pool.Close)
	return pool
}

// reaperOn is a reaper on its own clients.
func (f *fixture) reaperOn(rdb *redis.Client, pool *pgxpool.Pool, mutate func(*reaper.Config)) *reaper.Reaper {
	f.T.Helper()
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	cfg.BatchSize = 4
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := reaper.New(cfg, rdb, pool, passtest.Logger())
	require.NoError(f.T, err)
	return r
}

// sfHook runs before on each command the reaper sends, and after on each
// command it got an answer to; pipelines count as their commands.
type sfHook struct {
	before func(cmd redis.Cmder)
	after  func(cmd redis.Cmder)
}

func (h sfHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h sfHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.before != nil {
			h.before(cmd)
		}
		err := next(ctx, cmd)
		if err != nil && cmd.Err() == nil {
			// go-redis sets a command's error once the hooks have
			// returned: after sees it as the caller will.
			cmd.SetErr(err)
		}
		if h.after != nil {
			h.after(cmd)
		}
		return err
	}
}

func (h sfHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if h.before != nil {
				h.before(c)
			}
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			if h.after != nil {
				h.after(c)
			}
		}
		return err
	}
}

// sfIsRelease tells the release script's call from every other command. An
// EVALSHA the server answered NOSCRIPT ran nothing: go-redis sends the
// script again with EVAL, and that is the call. (The first test of a run to
// release meets an empty script cache; counted, it made a hook that acts on
// the first call act before anything was released.)
// sfIsRelease says cmd calls the release script (not one of the read-only
// scripts a pass reads shared sets or the history with), and was not
// answered NOSCRIPT.
func sfIsRelease(cmd redis.Cmder) bool {
	return passtest.IsReleaseCall(cmd) && !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT")
}

// sfResults counts the findings and tasks of a report by result.
func sfResults(rep *reaper.Report) (holdings, tasks map[reaper.Result]int) {
	holdings, tasks = map[reaper.Result]int{}, map[reaper.Result]int{}
	for _, fd := range rep.Findings {
		holdings[fd.Result]++
	}
	for _, tf := range rep.Tasks {
		tasks[tf.Result]++
	}
	return holdings, tasks
}

// noTaskSuspect gives a live worker a resource lock without a task, so that
// a pass that went on would write a suspect.
func (f *fixture) noTaskSuspect() {
	f.T.Helper()
	require.NoError(f.T, f.Redis.Client.Set(f.Ctx, judge.ResourceKeyPrefix+repo(), "1@live-worker-0", 0).Err())
}

// TestGuardMassDeath: with most worker rows dead at once, a pass releases
// nothing on dead grounds (owner-dead, task-lost) and updates no task, says
// why, and exits 4; what does not rest on a stopped heartbeat still goes.
// --force overrides.
func TestGuardMassDeath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("2@live", time.Second)
	f.Worker("2@reused", time.Second) // restarted under the old name
	reusedDead := f.Worker("2@reused", time.Hour)
	// Dead a minute: recent deaths, which the guard counts.
	deadRows := []string{f.Worker("2@dead-a", 2*time.Minute), f.Worker("2@dead-b", 2*time.Minute), f.Worker("2@dead-c", 2*time.Minute)}
	// 3 of 5 worker rows are dead (the restarted name's old row does not count): more than max_dead_fraction 0.5.

	r1 := repo()
	healthy := f.Task(judge.StateRunning, live, []string{r1}, -1)
	f.Acquire("2@live", healthy, []string{r1}, false)
	keep := []heldKey{{judge.TaskKeyPrefix + healthy, "2@live"}, {judge.ResourceKeyPrefix + r1, "2@live"}}

	var deadGrounds []heldKey
	var lost []string
	for i, row := range deadRows {
		owner := fmt.Sprintf("2@dead-%c", 'a'+i)
		r := repo()
		task := f.Task(judge.StateRunning, row, []string{r}, -1)
		f.Acquire(owner, task, []string{r}, false)
		deadGrounds = append(deadGrounds, heldKey{judge.TaskKeyPrefix + task, owner}, heldKey{judge.ResourceKeyPrefix + r, owner})
		lost = append(lost, task)
	}
	lostTask := f.Task(judge.StateRunning, reusedDead, nil, -1)
	f.Acquire("2@reused", lostTask, nil, false)
	deadGrounds = append(deadGrounds, heldKey{judge.TaskKeyPrefix + lostTask, "2@reused"})
	lost = append(lost, lostTask)

	// Neither a finished task's lock nor an owner without any row rests on a
	// heartbeat: the guard lets them go.
	finished := f.Task(judge.StateCompleted, live, nil, 10*time.Minute)
	f.Acquire("2@live", finished, nil, false)
	gone := f.Task(judge.StateWaiting, "", nil, -1)
	f.Acquire("9@never-registered", gone, nil, false)
	notGuarded := []heldKey{{judge.TaskKeyPrefix + finished, "2@live"}, {judge.TaskKeyPrefix + gone, "9@never-registered"}}

	audit := f.pass(f.reaper(nil), reaper.ModeAudit)
	require.Equal(t, exitcode.Guarded, exitcode.Of(audit), "an audit reports the guard too")

	dbBefore := f.dbState()
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	require.Len(t, rep.Guards, 1)
	require.Equal(t, "mass-death", rep.Guards[0].Name)
	require.Contains(t, rep.Guards[0].Reason, "3 of 5 worker rows are dead")
	require.Contains(t, rep.Guards[0].Reason, "--force")
	for _, h := range deadGrounds {
		fd := findingFor(rep, h.key, h.owner)
		require.NotNil(t, fd, h.key)
		require.Contains(t, []judge.Verdict{judge.VerdictOwnerDead, judge.VerdictTaskLost}, fd.Verdict)
		require.Equal(t, reaper.ResultDeferred, fd.Result, h.key)
		require.Equal(t, "mass-death guard", fd.Deferred)
		require.True(t, f.holds(h), "held back: %v", h)
	}
	for _, h := range notGuarded {
		require.Equal(t, reaper.ResultReleased, findingFor(rep, h.key, h.owner).Result, h.key)
		require.False(t, f.holds(h))
	}
	for _, h := range keep {
		require.True(t, f.holds(h))
	}
	require.Len(t, rep.Tasks, len(lost))
	for _, tf := range rep.Tasks {
		require.Equal(t, reaper.ResultDeferred, tf.Result, tf.ID)
		require.Equal(t, "mass-death guard", tf.Deferred)
	}
	require.Equal(t, dbBefore, f.dbState(), "no task updated")

	forced := f.pass(f.reaper(func(c *reaper.Config) { c.Force = true }), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(forced), forced.Error)
	require.Empty(t, forced.Guards)
	require.Equal(t, len(deadGrounds), forced.Summary.Released)
	require.Equal(t, len(lost), forced.Summary.TasksUpdated)
	for _, h := range deadGrounds {
		require.False(t, f.holds(h), "forced: %v", h)
	}
	for _, h := range keep {
		require.True(t, f.holds(h))
	}
	for _, id := range lost {
		state, _, _, _ := f.TaskRow(id)
		require.Equal(t, judge.StateCanceled, state)
	}
}

// TestGuardMaxReleases: a pass releases at most max_releases holdings; the
// rest is reported deferred, the pass exits 4, and the next passes continue
// until the work is done.
func TestGuardMaxReleases(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(6) // 13 stale holdings
	const limit = 5
	// A lost running task is canceled in the pass that defers its lock; the
	// next pass then sees a task that finished moments ago and leaves its
	// lock for finished_grace, as it would for a live worker. No grace here,
	// so that each pass continues where the last one stopped.
	r := f.reaper(func(c *reaper.Config) { c.MaxReleases = limit; c.FinishedGrace = 0 })

	released := 0
	for round := 1; ; round++ {
		require.LessOrEqual(t, round, 3, "13 holdings at 5 a pass take 3 passes")
		rep := f.pass(r, reaper.ModeOnce)
		require.LessOrEqual(t, rep.Summary.Released, limit)
		released += rep.Summary.Released
		f.requireHealthy(fl)
		if exitcode.Of(rep) == exitcode.OK {
			break
		}
		require.Equal(t, exitcode.Guarded, exitcode.Of(rep), rep.Error)
		require.Equal(t, "max-releases", rep.Guards[0].Name)
		holdings, _ := sfResults(rep)
		require.Equal(t, len(fl.stale)-released, holdings[reaper.ResultDeferred])
		for _, fd := range rep.Findings {
			if fd.Result == reaper.ResultDeferred {
				require.Equal(t, "max_releases", fd.Deferred)
				require.True(t, f.holds(heldKey{fd.Key, fd.Owner}), "deferred but released: %s", fd.Key)
			}
		}
	}
	require.Equal(t, len(fl.stale), released, "each stale holding released exactly once")
	f.requireConverged(fl)
}

// TestGuardMaxTaskUpdates: a pass updates at most max_task_updates tasks; the
// rest is deferred, exit 4, and the next passes continue.
func TestGuardMaxTaskUpdates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dead := f.Worker("3@dead", time.Hour)
	for i := range 3 {
		f.Worker(fmt.Sprintf("3@live-%d", i), time.Second)
	}
	var lost []string
	for range 5 {
		lost = append(lost, f.Task(judge.StateRunning, dead, nil, -1))
	}
	r := f.reaper(func(c *reaper.Config) { c.MaxTaskUpdates = 2 })

	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	require.Equal(t, "max-task-updates", rep.Guards[0].Name)
	_, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultUpdated: 2, reaper.ResultDeferred: 3}, tasks)
	for _, tf := range rep.Tasks {
		state, _, _, _ := f.TaskRow(tf.ID)
		if tf.Result == reaper.ResultDeferred {
			require.Equal(t, "max_task_updates", tf.Deferred)
			require.Equal(t, judge.StateRunning, state, "deferred task untouched")
		} else {
			require.Equal(t, judge.StateCanceled, state)
		}
	}

	updated := rep.Summary.TasksUpdated
	rep = f.pass(r, reaper.ModeOnce)
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	updated += rep.Summary.TasksUpdated
	rep = f.pass(r, reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	updated += rep.Summary.TasksUpdated
	require.Equal(t, len(lost), updated)
	for _, id := range lost {
		state, _, _, _ := f.TaskRow(id)
		require.Equal(t, judge.StateCanceled, state)
	}
}

// TestNoSnapshotNoWrites: a pass that cannot read the database writes
// nothing at all to Redis (no release, not even its suspects) and exits 1. An
// empty fleet read would make every owner look gone, so this guard is what
// keeps a database outage from becoming a mass release.
func TestNoSnapshotNoWrites(t *testing.T) {
	t.Parallel()

	// The snapshot fails after the pass lock was taken and Redis was read:
	// the guard in the pass itself, not a failed connection, holds the writes.
	t.Run("snapshot query fails", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.buildFleet(3)
		f.noTaskSuspect()
		_, err := f.DB.Pool.Exec(f.Ctx, "ALTER TABLE core_task RENAME TO core_task_moved")
		require.NoError(t, err)
		before := f.redisState()

		rep, err := f.reaper(nil).RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
		require.Error(t, err)
		require.ErrorIs(t, err, reaper.ErrNoSnapshot)
		require.Equal(t, exitcode.Failed, exitcode.Of(rep))
		require.Contains(t, rep.Error, "no database snapshot, no writes")
		require.Empty(t, rep.Findings)
		require.Equal(t, before, f.redisState(), "nothing in Redis changed")
	})

	t.Run("database unreachable", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.buildFleet(3)
		f.noTaskSuspect()
		before := f.redisState()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		closedPort := ln.Addr().String()
		require.NoError(t, ln.Close())

		for _, mode := range []string{reaper.ModeAudit, reaper.ModeOnce} {
			r := f.reaperOn(f.redisClient(""), f.reaperPool(closedPort, nil), nil)
			rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: mode})
			require.Error(t, err, mode)
			require.Equal(t, exitcode.Failed, exitcode.Of(rep), mode)
			require.Equal(t, before, f.redisState(), "%s: nothing in Redis changed", mode)
		}
	})

	t.Run("database dropped", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.buildFleet(3)
		before := f.redisState()
		pool := f.reaperPool("", nil)
		r := f.reaperOn(f.redisClient(""), pool, nil)
		f.DB.Pool.Close()
		testenv.DropDatabase(f.DB.Name)

		rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
		require.Error(t, err)
		require.Equal(t, exitcode.Failed, exitcode.Of(rep))
		require.Equal(t, before, f.redisState(), "nothing in Redis changed")
	})
}

// TestShutdownFinishesTheReleaseBatch: a pass stopped (SIGINT/SIGTERM cancel
// its context) while it releases finishes the batch in flight, starts no
// other, and reports every holding as released or failed; a failed one is
// untouched. The next pass does the rest.
func TestShutdownFinishesTheReleaseBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(10) // 21 stale holdings, 6 batches of 4
	ctx, cancel := context.WithCancel(f.Ctx)
	defer cancel()
	var calls atomic.Int32
	stopOnFirstRelease := sfHook{before: func(cmd redis.Cmder) {
		if sfIsRelease(cmd) && calls.Add(1) == 1 {
			cancel() // the signal arrives while the first batch is on its way
		}
	}}
	r := f.reaperOn(f.redisClient("", stopOnFirstRelease), f.DB.Pool, nil)
	dbBefore := f.dbState()

	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	holdings, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: 4, reaper.ResultFailed: len(fl.stale) - 4}, holdings,
		"the batch in flight finished, no other started")
	for _, fd := range rep.Findings {
		require.Equal(t, fd.Result == reaper.ResultFailed, f.holds(heldKey{fd.Key, fd.Owner}), "%s %s", fd.Key, fd.Result)
	}
	f.requireHealthy(fl)
	require.Equal(t, map[reaper.Result]int{reaper.ResultFailed: len(fl.lost)}, tasks)
	require.Equal(t, dbBefore, f.dbState(), "no task updated after the stop")

	rep = f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	require.Equal(t, len(fl.stale)-4, rep.Summary.Released)
	f.requireConverged(fl)
}

// sfStopTracer cancels a pass when its first task update starts.
type sfStopTracer struct {
	cancel  context.CancelFunc
	updates atomic.Int32
}

func (tr *sfStopTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "UPDATE core_task") && tr.updates.Add(1) == 1 {
		tr.cancel()
	}
	return ctx
}

func (tr *sfStopTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestShutdownFinishesTheUpdateBatch: the same for task updates.
func TestShutdownFinishesTheUpdateBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dead := f.Worker("4@dead", time.Hour)
	for i := range 3 {
		f.Worker(fmt.Sprintf("4@live-%d", i), time.Second)
	}
	var lost []string
	for range 8 {
		lost = append(lost, f.Task(judge.StateRunning, dead, nil, -1))
	}
	ctx, cancel := context.WithCancel(f.Ctx)
	defer cancel()
	tracer := &sfStopTracer{cancel: cancel}
	r := f.reaperOn(f.redisClient(""), f.reaperPool("", tracer), func(c *reaper.Config) { c.BatchSize = 3 })

	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	require.EqualValues(t, 1, tracer.updates.Load(), "no batch started after the stop")
	_, tasks := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultUpdated: 3, reaper.ResultFailed: 5}, tasks)
	for _, tf := range rep.Tasks {
		state, _, _, fin := f.TaskRow(tf.ID)
		if tf.Result == reaper.ResultUpdated {
			require.Equal(t, judge.StateCanceled, state)
		} else {
			require.Equal(t, judge.StateRunning, state, "failed means untouched")
			require.Nil(t, fin)
		}
	}

	rep = f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep), rep.Error)
	require.Equal(t, 5, rep.Summary.TasksUpdated)
	for _, id := range lost {
		state, _, _, _ := f.TaskRow(id)
		require.Equal(t, judge.StateCanceled, state)
	}
}

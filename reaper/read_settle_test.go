package reaper_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The end of a heartbeat stall, driven against real PostgreSQL with
// pulpcore's timing (redis_worker.py): a worker writes last_heartbeat from
// its own clock every period (ttl/3); a write that stalls (here behind a
// SHARE lock on core_appstatus, as a migration's lock would hold it) lands
// with the time it was made when the stall ends; then an idle worker, whose
// loop calls beat() every few milliseconds, writes again at once, while a
// busy one, which waits for its task process in select() with the period as
// timeout, writes again only a period later. In between, the idle workers
// are back and the busy ones, which hold the locks, look dead.

const (
	// stTTL is the rows' ttl: a period of 1 s keeps the test short; the
	// pass reads the heartbeats again its period and 2 s after its snapshot.
	stTTL    = 3 * time.Second
	stPeriod = stTTL / 3
	stGrace  = time.Second
)

// stWorker writes one row's heartbeats as a pulpcore worker does, with a
// clock that may be behind the database's.
type stWorker struct {
	id     string
	busy   bool
	behind time.Duration
}

// stFleet runs the workers' heartbeat loops until stop is called.
func stFleet(t *testing.T, f *fixture, workers []stWorker) (stop func()) {
	t.Helper()
	// A pool of their own, a connection each: a stalled write holds its
	// connection, and the pass's pool must not run dry.
	cfg, err := pgxpool.ParseConfig(f.DB.URL)
	require.NoError(t, err)
	cfg.MaxConns = int32(len(workers))
	pool, err := pgxpool.NewWithConfig(f.Ctx, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(f.Ctx)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			last := time.Time{}
			for ctx.Err() == nil {
				now := time.Now().Add(-w.behind)
				if w.busy || now.Sub(last) >= stPeriod {
					// The value is the worker's clock when it writes, not
					// when the write lands.
					if _, err := pool.Exec(ctx, `UPDATE core_appstatus SET last_heartbeat = $1 WHERE pulp_id = $2`, now, w.id); err != nil {
						return
					}
					last = now
				}
				wait := 5 * time.Millisecond
				if w.busy {
					wait = stPeriod
				}
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		})
	}
	return func() { cancel(); wg.Wait(); pool.Close() }
}

// recheckReaper is a reaper with the rows' short grace and the product's own
// second read: the row's period and the margin.
func (f *fixture) recheckReaper() *reaper.Reaper {
	return f.reaper(func(c *reaper.Config) {
		c.HeartbeatGrace = stGrace
		c.HeartbeatRecheck = 0
	})
}

// TestStallEndDoesNotReleaseLiveWork: ten workers, four of them busy with a
// task whose locks they hold; every heartbeat write stalls for longer than
// ttl + grace; the mass-death guard holds during the stall; a pass right
// after the stall ends sees the six idle workers back and the four busy
// ones dead, fewer than half. It reads the rows again a period later, finds
// them written, and releases nothing, cancels nothing.
func TestStallEndDoesNotReleaseLiveWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var workers []stWorker
	var held []heldKey
	var running []string
	for i := range 10 {
		name := fmt.Sprintf("1@pulp-worker-%d", i)
		w := stWorker{id: f.AppStatus(name, "worker", stTTL, 0), busy: i < 4}
		if w.busy {
			r := repo()
			task := f.Task(judge.StateRunning, w.id, []string{r, "shared:domain"}, -1)
			f.Acquire(name, task, []string{r, "shared:domain"}, false)
			held = append(held, heldKey{judge.TaskKeyPrefix + task, name}, heldKey{judge.ResourceKeyPrefix + r, name})
			running = append(running, task)
		}
		workers = append(workers, w)
	}
	stop := stFleet(t, f, workers)
	defer stop()
	time.Sleep(2 * stPeriod)

	lockTx, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(t, err)
	defer lockTx.Rollback(f.Ctx) // error dropped: committed below unless the test failed
	_, err = lockTx.Exec(f.Ctx, `LOCK TABLE core_appstatus IN SHARE MODE`)
	require.NoError(t, err)
	time.Sleep(stTTL + stGrace + 2*stPeriod)
	during := f.pass(f.recheckReaper(), reaper.ModeOnce)
	require.Equal(t, exitcode.Guarded, exitcode.Of(during), "the stall is a mass death: %+v", during.Guards)
	require.NoError(t, lockTx.Commit(f.Ctx))
	// The idle workers write at once; the busy ones a period later.
	time.Sleep(stPeriod / 3)

	rep := f.pass(f.recheckReaper(), reaper.ModeOnce)
	require.NotNil(t, rep.HeartbeatRecheck, "the busy workers looked dead")
	require.Equal(t, 4, rep.HeartbeatRecheck.Rows)
	require.Equal(t, 4, rep.HeartbeatRecheck.Moving, "each busy worker wrote within its period: %+v", rep.HeartbeatRecheck)
	for _, h := range held {
		require.True(t, f.holds(h), "a live worker's lock was released: %v", h)
	}
	for _, id := range running {
		state, _, _, _ := f.TaskRow(id)
		require.Equal(t, judge.StateRunning, state, "a live worker's task was ended: %s", id)
	}
	require.Zero(t, rep.Summary.Released)
	require.Zero(t, rep.Summary.TasksUpdated)
}

// TestStallEndHoldsTheGroupWhileOthersComeBack: of four busy workers whose
// heartbeats stopped together, two write again while the pass waits for its
// second read, two do not yet: those two are held with their group, not
// released as sudden deaths of fewer than half (heartbeat-stall guard).
// Once a later pass finds them still silent a period on while none of their
// group comes back, they are released.
func TestStallEndHoldsTheGroupWhileOthersComeBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var live []stWorker
	for i := range 6 {
		live = append(live, stWorker{id: f.AppStatus(fmt.Sprintf("1@pulp-worker-idle-%d", i), "worker", stTTL, 0)})
	}
	stop := stFleet(t, f, live)
	defer stop()
	stopped := map[string]string{}
	var held []heldKey
	for i := range 4 {
		name := fmt.Sprintf("1@pulp-worker-busy-%d", i)
		// Their last heartbeats within a period of each other: one stall.
		id := f.AppStatus(name, "worker", stTTL, stTTL+stGrace+time.Second+time.Duration(i)*stPeriod/4)
		r := repo()
		task := f.Task(judge.StateRunning, id, []string{r}, -1)
		f.Acquire(name, task, []string{r}, false)
		stopped[name] = id
		held = append(held, heldKey{judge.TaskKeyPrefix + task, name}, heldKey{judge.ResourceKeyPrefix + r, name})
	}
	back := func(phase string, _, _ int) {
		if phase != reaper.PhaseRecheckingHeartbeats {
			return
		}
		for _, name := range []string{"1@pulp-worker-busy-0", "1@pulp-worker-busy-1"} {
			_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET last_heartbeat = now() WHERE pulp_id = $1`, stopped[name])
			require.NoError(t, err)
		}
	}
	rep, err := f.recheckReaper().RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce, Phase: back})
	require.NoError(t, err)
	require.Equal(t, &reaper.HeartbeatRecheck{Rows: 4, Moving: 2, Stalled: 2}, rep.HeartbeatRecheck)
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	require.Equal(t, judge.GuardHeartbeatStall, rep.Guards[0].Name)
	require.Contains(t, rep.Guards[0].Reason, "2 process rows look dead")
	for _, h := range held {
		require.True(t, f.holds(h), "released while its group came back: %v", h)
	}
	require.Zero(t, rep.Summary.TasksUpdated)

	// A period on, the two that came back write as live workers; the other
	// two stay silent: deaths.
	later := stFleet(t, f, []stWorker{{id: stopped["1@pulp-worker-busy-0"]}, {id: stopped["1@pulp-worker-busy-1"]}})
	defer later()
	rep = f.pass(f.recheckReaper(), reaper.ModeOnce)
	require.Equal(t, &reaper.HeartbeatRecheck{Rows: 2, Settled: 2}, rep.HeartbeatRecheck)
	for _, h := range held[4:] {
		require.False(t, f.holds(h), "a settled death is released: %v", h)
	}
	for _, h := range held[:4] {
		require.True(t, f.holds(h), "the workers that came back keep their locks: %v", h)
	}
	require.Equal(t, 2, rep.Summary.TasksUpdated)
}

// TestClockBehindIsNotADeath: a worker whose clock is 90 s behind the
// database's writes its heartbeat every period and is always about 90 s
// old; it moves, so it is alive: its locks and running task are kept, and
// the report names its clock. audit and once alike.
func TestClockBehindIsNotADeath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	name := "1@pulp-worker-lagging"
	w := stWorker{id: f.AppStatus(name, "worker", stTTL, 90*time.Second), busy: true, behind: 90 * time.Second}
	for i := range 3 {
		f.AppStatus(fmt.Sprintf("1@pulp-worker-%d", i), "worker", time.Minute, 0)
	}
	r := repo()
	task := f.Task(judge.StateRunning, w.id, []string{r}, -1)
	f.Acquire(name, task, []string{r}, false)
	stop := stFleet(t, f, []stWorker{w})
	defer stop()
	time.Sleep(stPeriod)

	for _, mode := range []string{reaper.ModeAudit, reaper.ModeOnce} {
		rep := f.pass(f.recheckReaper(), mode)
		require.NotNil(t, rep.HeartbeatRecheck, mode)
		require.Equal(t, 1, rep.HeartbeatRecheck.Moving, mode)
		require.Len(t, rep.HeartbeatRecheck.Behind, 1, mode)
		require.Equal(t, name, rep.HeartbeatRecheck.Behind[0].Name)
		require.Greater(t, time.Duration(rep.HeartbeatRecheck.Behind[0].AtLeast), 80*time.Second)
		require.Empty(t, rep.Findings, "%s: %+v", mode, rep.Findings)
		require.Empty(t, rep.Tasks, mode)
		require.Contains(t, fmt.Sprint(rep.Notes), "clock is at least", mode)
	}
	require.True(t, f.holds(heldKey{judge.TaskKeyPrefix + task, name}))
	state, _, _, _ := f.TaskRow(task)
	require.Equal(t, judge.StateRunning, state)
}

// TestDeadWorkerReleasedAfterSecondRead: a worker that really died is read
// again a period after the snapshot and released in the same pass.
func TestDeadWorkerReleasedAfterSecondRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 3 {
		f.Worker(fmt.Sprintf("1@pulp-worker-%d", i), 0)
	}
	name := "1@pulp-worker-dead"
	id := f.AppStatus(name, "worker", stTTL, time.Minute)
	r := repo()
	task := f.Task(judge.StateRunning, id, []string{r}, -1)
	f.Acquire(name, task, []string{r}, false)
	start := time.Now()
	rep := f.pass(f.recheckReaper(), reaper.ModeOnce)
	require.GreaterOrEqual(t, time.Since(start), stPeriod+2*time.Second, "the pass waited a period and the margin")
	require.Equal(t, &reaper.HeartbeatRecheck{Rows: 1, Settled: 1}, rep.HeartbeatRecheck)
	require.False(t, f.holds(heldKey{judge.TaskKeyPrefix + task, name}))
	require.Equal(t, 1, rep.Summary.TasksUpdated)
}

package reaper_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/stretchr/testify/require"
)

// massDeathFleet inserts live workers under new names and dead ones under old
// names, each dead one holding the locks of a running task, heartbeat
// deadAge ago. It returns the dead holdings.
func (f *fixture) massDeathFleet(live, dead int, deadAge time.Duration) []heldKey {
	for i := range live {
		f.Worker(fmt.Sprintf("1@pulp-worker-new-%d", i), time.Second)
	}
	var held []heldKey
	for i := range dead {
		owner := fmt.Sprintf("1@pulp-worker-old-%d", i)
		r := repo()
		task := f.Task(judge.StateRunning, f.Worker(owner, deadAge), []string{r}, -1)
		f.Acquire(owner, task, []string{r}, false)
		held = append(held, heldKey{judge.TaskKeyPrefix + task, owner}, heldKey{judge.ResourceKeyPrefix + r, owner})
	}
	return held
}

// TestMassDeathGuardIgnoresRollingRestart: after a rolling restart the old
// pods' rows stay dead until pulpcore's cleanup deletes them (up to ~17
// minutes); rows dead for minutes are not a sudden death, so the guard does
// not freeze the pass and the old workers' locks are released.
func TestMassDeathGuardIgnoresRollingRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// 5 of 9 rows dead, each for 4 minutes (heartbeat 5 minutes ago).
	held := f.massDeathFleet(4, 5, 5*time.Minute)
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Guards)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	for _, h := range held {
		fd := findingFor(rep, h.key, h.owner)
		require.NotNil(t, fd, h.key)
		require.Equal(t, judge.VerdictOwnerDead, fd.Verdict, h.key)
		require.Equal(t, reaper.ResultReleased, fd.Result, h.key)
		require.False(t, f.holds(h), "released: %v", h)
	}
	require.Equal(t, 5, rep.Summary.TasksUpdated, "the old workers' running tasks are lost")
}

// TestMassDeathGuardTripsOnSuddenDeath: most workers dying at once still
// trips the guard: nothing is released on dead grounds.
func TestMassDeathGuardTripsOnSuddenDeath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// 5 of 9 rows dead, each for 30 seconds.
	held := f.massDeathFleet(4, 5, 90*time.Second)
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	require.Len(t, rep.Guards, 1)
	require.Equal(t, "mass-death", rep.Guards[0].Name)
	require.Contains(t, rep.Guards[0].Reason, "5 of 9 worker rows are dead")
	for _, h := range held {
		require.Equal(t, reaper.ResultDeferred, findingFor(rep, h.key, h.owner).Result, h.key)
		require.True(t, f.holds(h), "held back: %v", h)
	}
	require.Zero(t, rep.Summary.TasksUpdated)
}

// mdStopped is a fleet of one live worker and four that stopped
// heartbeating, each of the four running a task and holding its locks.
type mdStopped struct {
	live    string
	stopped []string // row ids
	tasks   []string
	held    []heldKey
}

func (f *fixture) stopFour() *mdStopped {
	m := &mdStopped{live: f.Worker("1@pulp-worker-live", time.Second)}
	for i := range 4 {
		owner := fmt.Sprintf("1@pulp-worker-stopped-%d", i)
		row := f.Worker(owner, time.Second)
		r, d := repo(), "prn:core.domain:"+sim.NewUUID()
		task := f.Task(judge.StateRunning, row, []string{r, "shared:" + d}, -1)
		f.Acquire(owner, task, []string{r, "shared:" + d}, false)
		m.stopped, m.tasks = append(m.stopped, row), append(m.tasks, task)
		m.held = append(m.held, heldKey{judge.TaskKeyPrefix + task, owner}, heldKey{judge.ResourceKeyPrefix + r, owner}, heldKey{judge.ResourceKeyPrefix + d, owner})
	}
	return m
}

// at moves the database clock to `after` past the four's last heartbeat:
// their heartbeats go back that far, the live worker's stays fresh.
func (m *mdStopped) at(f *fixture, after time.Duration) {
	f.T.Helper()
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET last_heartbeat = now() - make_interval(secs => $2) WHERE pulp_id = ANY($1)`, m.stopped, after.Seconds())
	require.NoError(f.T, err)
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET last_heartbeat = now() WHERE pulp_id = $1`, m.live)
	require.NoError(f.T, err)
}

// held checks a pass held everything back on the guard.
func (m *mdStopped) requireHeld(f *fixture, rep *reaper.Report, after time.Duration) {
	f.T.Helper()
	require.Equal(f.T, exitcode.Guarded, exitcode.Of(rep), "after %s", after)
	require.Len(f.T, rep.Guards, 1, "after %s", after)
	require.Equal(f.T, "mass-death", rep.Guards[0].Name)
	require.Contains(f.T, rep.Guards[0].Reason, "4 of 5 worker rows are dead, dead for ")
	require.Zero(f.T, rep.Summary.Released, "after %s", after)
	require.Zero(f.T, rep.Summary.TasksUpdated, "after %s", after)
	for _, h := range m.held {
		require.True(f.T, f.holds(h), "after %s: held back: %v", after, h)
	}
	for _, id := range m.tasks {
		state, _, _, _ := f.TaskRow(id)
		require.Equal(f.T, judge.StateRunning, state, "after %s", after)
	}
}

// TestMassDeathGuardRemembersAcrossPasses is issue 21's second case: 4 of 5
// workers stop heartbeating while one goes on. Passes at 120 s, 230 s,
// 250 s, 300 s and 20 minutes (a CronJob every 5 minutes sees at most one
// of them within the 3-minute window) all hold, exit 4, saying how long
// the rows have been dead; a pass with --force releases and cancels.
func TestMassDeathGuardRemembersAcrossPasses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.stopFour()
	for _, after := range []time.Duration{120 * time.Second, 230 * time.Second, 250 * time.Second, 300 * time.Second, 20 * time.Minute} {
		m.at(f, after)
		rep := f.pass(f.reaper(nil), reaper.ModeOnce)
		m.requireHeld(f, rep, after)
		if after > 270*time.Second {
			require.Contains(t, rep.Guards[0].Reason, "(each was seen alive by an earlier pass)", "after %s", after)
		}
		// An audit reads the memory and writes nothing.
		audit := f.pass(f.reaper(nil), reaper.ModeAudit)
		require.Equal(t, exitcode.Guarded, exitcode.Of(audit), "audit after %s", after)
	}
	require.Contains(t, f.pass(f.reaper(nil), reaper.ModeAudit).Guards[0].Reason, "dead for 19m")

	forced := f.pass(f.reaper(func(c *reaper.Config) { c.Force = true }), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(forced))
	require.Empty(t, forced.Guards)
	require.Equal(t, 4, forced.Summary.TasksUpdated, "the four running tasks are canceled")
	for _, h := range m.held {
		require.False(t, f.holds(h), "released: %v", h)
	}
	seen, err := redislocks.ReadSeenAlive(f.Ctx, f.Redis.Client, time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{m.live}, slices.Collect(maps.Keys(seen)), "--force forgets the dead")
}

// TestMassDeathGuardEndsWhenPulpcoreDeletesTheRows: pulpcore's own cleanup
// (app_worker_cleanup in redis_worker.py) deletes the rows of missing
// workers, and a live worker whose heartbeat finds no row stops: the rows
// gone, the guard has nothing left to count, and the pass releases their
// locks (owner-gone) and finishes their tasks.
func TestMassDeathGuardEndsWhenPulpcoreDeletesTheRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.stopFour()
	for _, after := range []time.Duration{120 * time.Second, 20 * time.Minute} {
		m.at(f, after)
		m.requireHeld(f, f.pass(f.reaper(nil), reaper.ModeOnce), after)
	}
	// What pulpcore's ORM does on deleting an AppStatus: app_lock set NULL.
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET app_lock_id = NULL WHERE app_lock_id = ANY($1)`, m.stopped)
	require.NoError(t, err)
	_, err = f.DB.Pool.Exec(f.Ctx, `DELETE FROM core_appstatus WHERE pulp_id = ANY($1)`, m.stopped)
	require.NoError(t, err)
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.Empty(t, rep.Guards)
	require.Equal(t, 4, rep.Summary.TasksUpdated)
	for _, h := range m.held {
		require.Equal(t, judge.VerdictOwnerGone, findingFor(rep, h.key, h.owner).Verdict, h.key)
		require.False(t, f.holds(h), "released: %v", h)
	}
	seen, err := redislocks.ReadSeenAlive(f.Ctx, f.Redis.Client, time.Second)
	require.NoError(t, err)
	require.Equal(t, []string{m.live}, slices.Collect(maps.Keys(seen)), "deleted rows are forgotten")
}

// TestMassDeathGuardRollingRestartAfterPasses: passes saw the new fleet
// alive; the old rows were dead for minutes when a pass first saw them.
// They are no sudden death however many passes follow.
func TestMassDeathGuardRollingRestartAfterPasses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 2 {
		rep := f.pass(f.reaper(nil), reaper.ModeOnce)
		require.Empty(t, rep.Guards)
	}
	held := f.massDeathFleet(4, 5, 5*time.Minute)
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Empty(t, rep.Guards)
	for _, h := range held {
		require.False(t, f.holds(h), "released: %v", h)
	}
	require.Equal(t, 5, rep.Summary.TasksUpdated)
	seen, err := redislocks.ReadSeenAlive(f.Ctx, f.Redis.Client, time.Second)
	require.NoError(t, err)
	require.Len(t, seen, 4, "only the live rows are remembered")
}

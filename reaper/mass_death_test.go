package reaper

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mdFleet inserts live workers under new names and dead ones under old
// names, each dead one holding the locks of a running task, heartbeat
// deadAge ago. It returns the dead holdings.
func mdFleet(f *fixture, live, dead int, deadAge time.Duration) []sfHeld {
	for i := range live {
		f.worker(fmt.Sprintf("1@pulp-worker-new-%d", i), time.Second)
	}
	var held []sfHeld
	for i := range dead {
		owner := fmt.Sprintf("1@pulp-worker-old-%d", i)
		r := repo()
		task := f.task(StateRunning, f.worker(owner, deadAge), []string{r}, -1)
		f.acquire(owner, task, []string{r}, false)
		held = append(held, sfHeld{TaskKeyPrefix + task, owner}, sfHeld{ResourceKeyPrefix + r, owner})
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
	held := mdFleet(f, 4, 5, 5*time.Minute)
	rep := f.pass(f.reaper(nil), ModeOnce)
	require.Empty(t, rep.Guards)
	require.Equal(t, ExitOK, rep.ExitCode())
	for _, h := range held {
		fd := findingFor(rep, h.key, h.owner)
		require.NotNil(t, fd, h.key)
		require.Equal(t, VerdictOwnerDead, fd.Verdict, h.key)
		require.Equal(t, ResultReleased, fd.Result, h.key)
		require.False(t, sfHolds(f, h), "released: %v", h)
	}
	require.Equal(t, 5, rep.Summary.TasksUpdated, "the old workers' running tasks are lost")
}

// TestMassDeathGuardTripsOnSuddenDeath: most workers dying at once still
// trips the guard: nothing is released on dead grounds.
func TestMassDeathGuardTripsOnSuddenDeath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// 5 of 9 rows dead, each for 30 seconds.
	held := mdFleet(f, 4, 5, 90*time.Second)
	rep := f.pass(f.reaper(nil), ModeOnce)
	require.Equal(t, ExitGuarded, rep.ExitCode())
	require.Len(t, rep.Guards, 1)
	require.Equal(t, "mass-death", rep.Guards[0].Name)
	require.Contains(t, rep.Guards[0].Reason, "5 of 9 worker rows are dead")
	for _, h := range held {
		require.Equal(t, ResultDeferred, findingFor(rep, h.key, h.owner).Result, h.key)
		require.True(t, sfHolds(f, h), "held back: %v", h)
	}
	require.Zero(t, rep.Summary.TasksUpdated)
}

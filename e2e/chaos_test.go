package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ciScenario is the short run of CI: 20 workers and 2,000 short tasks with
// random faults of every kind.
func ciScenario(r reapers) scenario {
	return scenario{
		workers: 20, tasks: 2000, reapers: r, dispatchRate: 100,
		minTask: 10 * time.Millisecond, maxTask: 40 * time.Millisecond,
	}
}

// A loop of real passes, as a CronJob running `lock-reaper once` would make,
// beside a fleet with random faults.
func TestChaosWithPassLoop(t *testing.T) {
	t.Parallel()
	chaosRun(t, ciScenario(withPassLoop))
}

// `lock-reaper run`'s daemon beside a fleet with random faults: scheduled
// passes, mostly registry-only, a full scan every few seconds.
func TestChaosWithDaemon(t *testing.T) {
	t.Parallel()
	chaosRun(t, ciScenario(withDaemon))
}

// TestSoak runs the fleet with faults for the -soak duration beside both a
// pass loop and the daemon, which then also contend for the pass lock.
//
//	go test ./e2e -run Soak -soak 10m -timeout 30m -v
func TestSoak(t *testing.T) {
	if *soakFlag <= 0 {
		t.Skip("soak runs only with -soak DURATION, e.g. go test ./e2e -run Soak -soak 10m -timeout 30m -v")
	}
	chaosRun(t, scenario{
		workers: 20, soak: *soakFlag, reapers: withPassLoop | withDaemon, dispatchRate: 60,
		minTask: 10 * time.Millisecond, maxTask: 100 * time.Millisecond,
	})
}

// chaosRun runs a scenario through its phases and checks safety, liveness
// and accounting.
func chaosRun(t *testing.T, sc scenario) {
	r := startRun(t, sc)
	r.chaos()
	quietAt := r.quiet()
	convergedAfter := r.converge(quietAt)
	drainedAfter := r.drain()
	r.stop()

	rec := r.rec.snapshot()
	r.logFigures(rec, convergedAfter, drainedAfter)
	require.Empty(t, r.safetyProblems(rec), r.msg("safety"))
	problems, err := r.holdingAccountingProblems(rec)
	require.NoError(t, err)
	require.Empty(t, problems, r.msg("holding accounting"))
	problems, err = r.taskAccountingProblems(rec)
	require.NoError(t, err)
	require.Empty(t, problems, r.msg("task accounting"))
}

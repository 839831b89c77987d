package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// Random faults alone, with nobody releasing anything behind the fleet's
// back, must never produce a violation: a false alarm would make every
// reaper test that uses the fleet fail for nothing.
func TestRandomFaultsWithoutAReaperRaiseNoFalseViolations(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 4
	cfg.APIs = 2
	cfg.Repositories = 200
	cfg.SharedRepoFraction = 0.3
	cfg.Dispatch = sim.DispatchConfig{Rate: 150, ImmediateFraction: 0.2, CancelRate: 15}
	cfg.Faults = sim.FaultRates{
		LeakBeforeClaim: 0.03, FinalNoRelease: 0.03, CancelPathError: 0.3, SupervisorError: 0.03,
		CancelRace: 0.03, ImmediateRelease: 0.05, Kill: 0.02, RestartAfter: 200 * time.Millisecond,
		HeartbeatDelay: 0.2, SlowDB: 0.01, SlowDBDelay: 20 * time.Millisecond,
	}
	f, _ := startFleet(t, cfg)

	// Faults are random and leaks clog repositories (nobody reaps here),
	// so ask for variety rather than for every kind.
	require.Eventually(t, func() bool {
		kinds := 0
		for _, n := range f.Stats().Faults {
			if n > 0 {
				kinds++
			}
		}
		return kinds >= 6
	}, 15*time.Second, 50*time.Millisecond, "stats: %+v", f.Stats())
	time.Sleep(2 * time.Second)
	require.NoError(t, f.SetFaultRates(sim.FaultRates{}))
	require.NoError(t, f.SetDispatch(sim.DispatchConfig{}))
	f.Stop()

	require.Empty(t, f.Violations())
	st := f.Stats()
	require.Zero(t, st.Errors)
	require.Positive(t, st.TasksCompleted)
	t.Logf("stats: %+v", st)
}

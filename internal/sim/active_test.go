package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// ActiveHoldings lists exactly the locks of the task a live worker is
// running, with a LiveUntil ahead of now, and nothing once it is done, or
// once the worker died with the locks still held.
func TestActiveHoldingsFollowTheWork(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Workers = 1
	cfg.MinTaskDuration, cfg.MaxTaskDuration = 2*time.Second, 2*time.Second
	f, b := startFleet(t, cfg)
	repo := sim.RepositoryPRN(sim.NewUUID())
	ids, err := f.SubmitSpecs(b.ctx, sim.TaskSpec{Name: "sync", Exclusive: []string{repo}})
	require.NoError(t, err)

	var active []sim.ActiveHolding
	require.Eventually(t, func() bool {
		active = f.ActiveHoldings()
		return len(active) > 0
	}, 10*time.Second, 5*time.Millisecond)
	worker := f.Workers()[0]
	require.Len(t, active, 3, "task lock, repository, domain: %+v", active)
	kinds := map[string]sim.HoldingKind{}
	for _, h := range active {
		require.Equal(t, worker, h.Owner)
		require.Equal(t, ids[0], h.Task)
		require.Equal(t, active[0].Since, h.Since, "one stretch of work")
		require.True(t, h.LiveUntil.After(time.Now()), "a live worker's LiveUntil is ahead")
		kinds[h.Key] = h.Kind
	}
	require.Equal(t, map[string]sim.HoldingKind{
		sim.TaskKey(ids[0]):   sim.KindTask,
		sim.ResourceKey(repo): sim.KindExclusive,
		sim.ResourceKey(sim.DomainPRN(sim.DefaultDomainID)): sim.KindShared,
	}, kinds)

	// Killed mid-task: the locks stay, but nobody works on them any more.
	require.NoError(t, f.Kill(worker))
	require.Empty(t, f.ActiveHoldings())
	require.Len(t, holdingsOf(t, b, worker), 3)
}

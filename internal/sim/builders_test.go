package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

func TestBuildIncidentWritesTheIncident(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	spec := sim.IncidentOf20260724()
	spec.DeadUnclaimed, spec.DeadMissing = 2, 3
	inc, err := sim.BuildIncident(b.ctx, b.rdb, b.pool, spec)
	require.NoError(t, err)

	hs, err := sim.ScanHoldings(b.ctx, b.rdb)
	require.NoError(t, err)
	require.Equal(t, 543, sim.Count(hs, inc.DeadOwner, sim.KindTask))
	require.Equal(t, 524, sim.Count(hs, inc.DeadOwner, sim.KindExclusive, sim.KindShared))
	require.Equal(t, 1, sim.Count(hs, inc.DeadOwner, sim.KindShared), "one membership in the domain set")
	require.Len(t, inc.Stale, 543+524)
	require.Len(t, inc.Healthy, 3*spec.LiveWorkers)
	require.Len(t, hs, len(inc.Stale)+len(inc.Healthy), "nothing else is locked")

	legacy := map[string]bool{}
	for _, k := range inc.LegacyKeys {
		legacy[k] = true
	}
	require.NotEmpty(t, legacy)
	for _, h := range hs {
		if h.Owner == inc.DeadOwner {
			require.Equal(t, !legacy[h.Key], h.Registered, h.Key)
		} else {
			require.True(t, h.Registered, h.Key)
		}
	}
	domainSet := b.rdb.SMembers(b.ctx, sim.ResourceKey(inc.DomainResource)).Val()
	require.ElementsMatch(t, append([]string{inc.DeadOwner}, inc.LiveOwners...), domainSet)

	var deadAge time.Duration
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT extract(epoch FROM now() - last_heartbeat)::float8 * interval '1 second' FROM core_appstatus WHERE pulp_id = $1`,
		inc.DeadAppStatusID).Scan(&deadAge))
	require.InDelta(t, sim.DefaultDeadHeartbeatAge.Seconds(), deadAge.Seconds(), 60)

	states, err := sim.TaskStates(b.ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, map[string]int{
		sim.StateRunning:   1 + spec.LiveWorkers,
		sim.StateWaiting:   1 + 2 + spec.QueuedTasks + spec.QueuedDomainExclusive,
		sim.StateCompleted: 543 - 1 - 1 - 2 - 3,
	}, states)
	require.Len(t, inc.Cancel, 1)
	require.Len(t, inc.Requeue, 1)
	require.Len(t, inc.Missing, 3)
	for _, id := range inc.Missing {
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM core_task WHERE pulp_id = $1`, id).Scan(&n))
		require.Zero(t, n)
	}

	problems, err := sim.CheckConverged(b.ctx, b.rdb, b.pool)
	require.NoError(t, err)
	require.NotEmpty(t, problems, "an incident is not converged")

	// Do what a correct reaper does, then nothing may be left to complain about.
	idealReaper(t, b, inc)
	problems, err = sim.CheckConverged(b.ctx, b.rdb, b.pool)
	require.NoError(t, err)
	require.Empty(t, problems)
	registry, err := sim.CheckRegistry(b.ctx, b.rdb)
	require.NoError(t, err)
	require.Empty(t, registry)
	for _, h := range inc.Healthy {
		require.Equal(t, h.Kind == sim.KindShared, b.rdb.Type(b.ctx, h.Key).Val() == "set", h.Key)
	}
}

// idealReaper applies an incident's manifest the way the verdicts say.
func idealReaper(t *testing.T, b *bundle, inc *sim.Incident) {
	t.Helper()
	for _, h := range inc.Stale {
		pipe := b.rdb.TxPipeline()
		if h.Kind == sim.KindShared {
			pipe.SRem(b.ctx, h.Key, h.Owner)
		} else {
			pipe.Del(b.ctx, h.Key)
		}
		pipe.SRem(b.ctx, sim.OwnerLocksKey(h.Owner), h.Key)
		_, err := pipe.Exec(b.ctx)
		require.NoError(t, err)
	}
	_, err := b.pool.Exec(b.ctx, `UPDATE core_task SET state = 'canceled', finished_at = now() WHERE pulp_id = ANY($1::uuid[])`, inc.Cancel)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `UPDATE core_task SET app_lock_id = NULL WHERE pulp_id = ANY($1::uuid[])`, inc.Requeue)
	require.NoError(t, err)
}

func TestIncidentKeepAliveKeepsLiveRowsOnline(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	inc, err := sim.BuildIncident(b.ctx, b.rdb, b.pool, sim.IncidentSpec{
		DeadTaskLocks: 2, DeadResourceLocks: 2, LiveWorkers: 2, TTL: time.Second, Successor: true,
	})
	require.NoError(t, err)
	ctx, cancel := contextWithTimeout(b, 1800*time.Millisecond)
	defer cancel()
	require.NoError(t, inc.KeepAlive(ctx, b.pool))
	var online int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM core_appstatus WHERE last_heartbeat >= now() - ttl`).Scan(&online))
	require.Equal(t, 3, online, "two live workers and the successor")
	var names int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT count(*) FROM core_appstatus WHERE name = $1`, inc.DeadOwner).Scan(&names))
	require.Equal(t, 2, names, "the successor reuses the dead name")
}

func TestBuildIncidentRejectsImpossibleSpecs(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	for _, spec := range []sim.IncidentSpec{
		{DeadTaskLocks: 1, DeadRunning: 1, DeadClaimed: 1},
		{DeadResourceLocks: 3},
		{DeadTaskLocks: 1, LegacyFraction: 2},
	} {
		_, err := sim.BuildIncident(b.ctx, b.rdb, b.pool, spec)
		require.Error(t, err, "%+v", spec)
	}
}

func TestBuildFleetCountsMatchRedisAndDatabase(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	m, err := sim.BuildFleet(b.ctx, b.rdb, b.pool, sim.FleetSpec{
		Owners: 4, DeadFraction: 0.25, TaskLocks: 400, ExclusivePerTask: 2, SharedDomains: 3,
		FinishedFraction: 0.2, LegacyFraction: 0.3, QueuedTasks: 50, UnrelatedKeys: 25000, DecoyKeys: 6, BatchSize: 1000,
	})
	require.NoError(t, err)
	require.Len(t, m.Owners, 4)
	require.Len(t, m.DeadOwners, 1)
	require.Len(t, m.DomainIDs, 3)

	hs, err := sim.ScanHoldings(b.ctx, b.rdb)
	require.NoError(t, err)
	require.Len(t, hs, m.StaleHoldings+m.HealthyHoldings, "decoys are not holdings")
	tasks, registered := 0, 0
	for _, h := range hs {
		if h.Kind == sim.KindTask {
			tasks++
			if h.Registered {
				registered++
			}
		}
	}
	require.Equal(t, 400, tasks)
	require.Equal(t, 400-m.LegacyTaskLocks, registered)
	require.InDelta(t, 120, m.LegacyTaskLocks, 40, "about 30% legacy")
	// Unrelated keys, decoys, task keys, exclusive keys, domain sets,
	// registries and pulp:active_owners.
	require.EqualValues(t, 25000+6+400+800+3+4+1, b.rdb.DBSize(b.ctx).Val())

	states, err := sim.TaskStates(b.ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, 50, states[sim.StateWaiting])
	require.Equal(t, 400, states[sim.StateRunning]+states[sim.StateCompleted])
	require.InDelta(t, 80, states[sim.StateCompleted], 40, "about 20% finished")
	var stale, lost int
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT
  count(*) FILTER (WHERE t.state = 'completed' OR a.last_heartbeat < now() - a.ttl),
  count(*) FILTER (WHERE t.state = 'running' AND a.last_heartbeat < now() - a.ttl)
FROM core_task t JOIN core_appstatus a ON a.pulp_id = t.app_lock_id`).Scan(&stale, &lost))
	require.Equal(t, stale, m.StaleTaskLocks)
	require.Equal(t, lost, m.LostTasks)
	require.Positive(t, lost)
	for _, k := range m.DecoyKeys {
		require.EqualValues(t, 1, b.rdb.Exists(b.ctx, k).Val(), k)
	}
}

package sim_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

func newRedis(t *testing.T) (context.Context, *redis.Client) {
	t.Helper()
	return t.Context(), testenv.NewRedis(t).Client
}

func TestAcquireTakesAllLocksAndRegistersThem(t *testing.T) {
	t.Parallel()
	ctx, rdb := newRedis(t)
	task, repo, domain := sim.NewUUID(), sim.RepositoryPRN(sim.NewUUID()), sim.DomainPRN(sim.DefaultDomainID)

	blocked, err := sim.Acquire(ctx, rdb, task, "1@w", []string{repo}, []string{domain})
	require.NoError(t, err)
	require.Empty(t, blocked)

	require.Equal(t, "1@w", rdb.Get(ctx, sim.TaskKey(task)).Val())
	require.Equal(t, "1@w", rdb.Get(ctx, sim.ResourceKey(repo)).Val())
	require.Equal(t, []string{"1@w"}, rdb.SMembers(ctx, sim.ResourceKey(domain)).Val())
	require.ElementsMatch(t, []string{sim.TaskKey(task), sim.ResourceKey(repo), sim.ResourceKey(domain)},
		rdb.SMembers(ctx, sim.OwnerLocksKey("1@w")).Val())
	require.Equal(t, []string{"1@w"}, rdb.SMembers(ctx, sim.ActiveOwnersKey).Val())
}

func TestAcquireBlocksAndWritesNothing(t *testing.T) {
	t.Parallel()
	ctx, rdb := newRedis(t)
	repo, other, domain := sim.RepositoryPRN(sim.NewUUID()), sim.RepositoryPRN(sim.NewUUID()), sim.DomainPRN(sim.DefaultDomainID)
	held := sim.NewUUID()
	_, err := sim.Acquire(ctx, rdb, held, "1@a", []string{repo}, []string{domain})
	require.NoError(t, err)

	cases := []struct {
		name              string
		task              string
		exclusive, shared []string
		blocked           []string
	}{
		{"task key held", held, nil, nil, []string{sim.TaskLockBlocked}},
		{"exclusive held exclusively", sim.NewUUID(), []string{other, repo}, []string{domain}, []string{repo}},
		{"exclusive held shared", sim.NewUUID(), []string{domain}, nil, []string{domain}},
		{"shared held exclusively", sim.NewUUID(), nil, []string{repo, domain}, []string{repo}},
	}
	for _, c := range cases {
		before := rdb.DBSize(ctx).Val()
		blocked, err := sim.Acquire(ctx, rdb, c.task, "2@b", c.exclusive, c.shared)
		require.NoError(t, err, c.name)
		require.Equal(t, c.blocked, blocked, c.name)
		require.Equal(t, before, rdb.DBSize(ctx).Val(), c.name+": a blocked acquire must write nothing")
		require.False(t, rdb.SIsMember(ctx, sim.ActiveOwnersKey, "2@b").Val(), c.name)
	}

	// Shared with shared is fine: the set gets a second member.
	blocked, err := sim.Acquire(ctx, rdb, sim.NewUUID(), "2@b", []string{other}, []string{domain})
	require.NoError(t, err)
	require.Empty(t, blocked)
	require.ElementsMatch(t, []string{"1@a", "2@b"}, rdb.SMembers(ctx, sim.ResourceKey(domain)).Val())
}

func TestAcquireKeepsAResourceReservedBothWaysExclusive(t *testing.T) {
	t.Parallel()
	ctx, rdb := newRedis(t)
	repo := sim.RepositoryPRN(sim.NewUUID())
	blocked, err := sim.Acquire(ctx, rdb, sim.NewUUID(), "1@a", []string{repo}, []string{repo})
	require.NoError(t, err)
	require.Empty(t, blocked)
	require.Equal(t, "string", rdb.Type(ctx, sim.ResourceKey(repo)).Val())
}

func TestReleaseTouchesOnlyWhatTheOwnerHolds(t *testing.T) {
	t.Parallel()
	ctx, rdb := newRedis(t)
	task, repo, domain := sim.NewUUID(), sim.RepositoryPRN(sim.NewUUID()), sim.DomainPRN(sim.DefaultDomainID)
	_, err := sim.Acquire(ctx, rdb, task, "1@a", []string{repo}, []string{domain})
	require.NoError(t, err)
	_, err = sim.Acquire(ctx, rdb, sim.NewUUID(), "2@b", nil, []string{domain})
	require.NoError(t, err)

	notOwned, err := sim.Release(ctx, rdb, task, "2@b", []string{repo}, []string{domain})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{sim.TaskKey(task), sim.ResourceKey(repo)}, notOwned)
	require.Equal(t, "1@a", rdb.Get(ctx, sim.TaskKey(task)).Val(), "another owner's release must not delete")
	require.False(t, rdb.SIsMember(ctx, sim.ResourceKey(domain), "2@b").Val(), "2@b left the shared set")

	notOwned, err = sim.Release(ctx, rdb, task, "1@a", []string{repo}, []string{domain})
	require.NoError(t, err)
	require.Empty(t, notOwned)
	require.Zero(t, rdb.Exists(ctx, sim.TaskKey(task), sim.ResourceKey(repo), sim.ResourceKey(domain)).Val(),
		"the shared set vanishes with its last member")
	require.Zero(t, rdb.Exists(ctx, sim.OwnerLocksKey("1@a")).Val(), "registry entries are removed")
	require.True(t, rdb.SIsMember(ctx, sim.ActiveOwnersKey, "1@a").Val(), "release leaves the owner active")

	notOwned, err = sim.Release(ctx, rdb, task, "1@a", []string{repo}, []string{domain})
	require.NoError(t, err)
	require.Len(t, notOwned, 3, "a second release is harmless and reports every key")
}

func TestAcquireLegacyWritesNoRegistry(t *testing.T) {
	t.Parallel()
	ctx, rdb := newRedis(t)
	task, repo, domain := sim.NewUUID(), sim.RepositoryPRN(sim.NewUUID()), sim.DomainPRN(sim.DefaultDomainID)
	blocked, err := sim.AcquireLegacy(ctx, rdb, task, "1@old", []string{repo}, []string{domain})
	require.NoError(t, err)
	require.Empty(t, blocked)
	require.Equal(t, "1@old", rdb.Get(ctx, sim.TaskKey(task)).Val())
	require.Zero(t, rdb.Exists(ctx, sim.OwnerLocksKey("1@old"), sim.ActiveOwnersKey).Val())

	hs, err := sim.ScanHoldings(ctx, rdb)
	require.NoError(t, err)
	require.Len(t, hs, 3)
	for _, h := range hs {
		require.False(t, h.Registered, h.Key)
	}
}

func TestCleanupOwnerReleasesRegisteredLocksOnly(t *testing.T) {
	t.Parallel()
	ctx, rdb := newRedis(t)
	domain := sim.DomainPRN(sim.DefaultDomainID)
	registered, legacy, other := sim.NewUUID(), sim.NewUUID(), sim.NewUUID()
	_, err := sim.Acquire(ctx, rdb, registered, "1@a", []string{sim.RepositoryPRN(sim.NewUUID())}, []string{domain})
	require.NoError(t, err)
	_, err = sim.AcquireLegacy(ctx, rdb, legacy, "1@a", nil, nil)
	require.NoError(t, err)
	_, err = sim.Acquire(ctx, rdb, other, "2@b", nil, []string{domain})
	require.NoError(t, err)

	released, foreign, err := sim.CleanupOwner(ctx, rdb, "1@a")
	require.NoError(t, err)
	require.Equal(t, 3, released)
	require.Empty(t, foreign)
	require.Zero(t, rdb.Exists(ctx, sim.TaskKey(registered)).Val())
	require.Equal(t, "1@a", rdb.Get(ctx, sim.TaskKey(legacy)).Val(), "legacy locks are not in the registry")
	require.Equal(t, []string{"2@b"}, rdb.SMembers(ctx, sim.ResourceKey(domain)).Val())
	require.Equal(t, []string{"2@b"}, rdb.SMembers(ctx, sim.ActiveOwnersKey).Val())
}

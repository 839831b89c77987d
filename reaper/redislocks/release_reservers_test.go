package redislocks_test

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/stretchr/testify/require"
)

// TestReleaseGuardWithoutRegistry: an owner with no registry (pulpcore
// before 3.117) took a task since the snapshot that reserves the resource
// of its stale holding. pulpcore's acquire adds an owner already in a
// shared set without a trace, so only the new task's lock tells: a guarded
// holding whose owner holds the task lock of a task reserving its resource
// is left alone, exclusive or shared. The task lock of another owner, a
// task lock the same call releases first, or no reserving task at all
// leave the release to go ahead.
func TestReleaseGuardWithoutRegistry(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	const owner, other = "3@legacy", "4@legacy"
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	stale := func(name string, kind judge.Kind) judge.Holding {
		key := judge.ResourceKeyPrefix + name
		if kind == judge.KindShared {
			require.NoError(t, rdb.SAdd(f.Ctx, key, owner).Err())
		} else {
			require.NoError(t, rdb.Set(f.Ctx, key, owner, 0).Err())
		}
		return judge.Holding{Key: key, Owner: owner, Kind: kind}
	}
	taskLock := func(holder string) string {
		id := sim.NewUUID()
		require.NoError(t, rdb.Set(f.Ctx, judge.TaskKeyPrefix+id, holder, 0).Err())
		return id
	}
	release := func(b redislocks.Batch) []redislocks.Outcome {
		out, err := rel.Release(f.Ctx, b)
		require.NoError(t, err)
		return out
	}
	guarded := func(hs []judge.Holding, reservers ...[]string) redislocks.Batch {
		b := redislocks.Batch{Holdings: hs, Guarded: make([]bool, len(hs)), Reservers: map[string][]redislocks.Reserver{}}
		for i := range hs {
			b.Guarded[i] = true
			for _, id := range reservers[i] {
				b.Reservers[hs[i].Key] = append(b.Reservers[hs[i].Key], redislocks.Reserver{ID: id})
			}
		}
		return b
	}

	// The owner took a task reserving each resource since the snapshot.
	shared, exclusive := stale("domain-a", judge.KindShared), stale("repo-a", judge.KindExclusive)
	mine := taskLock(owner)
	out := release(guarded([]judge.Holding{shared, exclusive}, []string{taskLock(other), mine}, []string{mine}))
	require.Equal(t, []redislocks.Outcome{redislocks.OwnerChanged, redislocks.OwnerChanged}, out)
	require.True(t, rdb.SIsMember(f.Ctx, shared.Key, owner).Val(), "the new task's membership stays")
	require.Equal(t, owner, f.Get(exclusive.Key))

	// Reserving tasks held by another owner, or none at all.
	shared, exclusive = stale("domain-b", judge.KindShared), stale("repo-b", judge.KindExclusive)
	out = release(guarded([]judge.Holding{shared, exclusive}, []string{taskLock(other)}, nil))
	require.Equal(t, []redislocks.Outcome{redislocks.Released, redislocks.Released}, out)
	require.False(t, rdb.SIsMember(f.Ctx, shared.Key, owner).Val())
	require.Equal(t, "", f.Get(exclusive.Key))

	// The reserving task's lock is the stale one this call releases first.
	leaked := taskLock(owner)
	shared = stale("domain-c", judge.KindShared)
	b := guarded([]judge.Holding{{Key: judge.TaskKeyPrefix + leaked, Owner: owner, Kind: judge.KindTask}, shared}, nil, []string{leaked})
	b.Guarded[0] = false
	require.Equal(t, []redislocks.Outcome{redislocks.Released, redislocks.Released}, release(b))
	require.False(t, rdb.SIsMember(f.Ctx, shared.Key, owner).Val())
}

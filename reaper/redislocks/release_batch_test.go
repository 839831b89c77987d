package redislocks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/stretchr/testify/require"
)

// TestReleaseBatchAsIfWrittenAtOnce: the release script deletes the string
// locks and removes the registry entries at the end of the batch, yet every
// holding gets the result it would have had were each write made as its
// holding came: a key released earlier in the batch is already gone for a
// later holding of it, of either kind; each owner's registry loses exactly
// the keys it no longer holds; a dead owner whose registry the batch empties
// leaves pulp:active_owners. So it is when the batch is cut into several
// calls by their budget of work (redis.release_call_holdings): each call
// writes before the next runs, the holdings keep their order, and the owner
// is retired by the call that takes the last of them.
func TestReleaseBatchAsIfWrittenAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		callHoldings int
		calls        []int
	}{
		{0, []int{7}}, {1, []int{1, 1, 1, 1, 1, 1, 1}}, {3, []int{3, 3, 1}}, {4, []int{4, 3}},
	} {
		t.Run(fmt.Sprintf("call holdings %d", tc.callHoldings), func(t *testing.T) {
			t.Parallel()
			releaseBatchAsIfWrittenAtOnce(t, tc.callHoldings, tc.calls)
		})
	}
}

func releaseBatchAsIfWrittenAtOnce(t *testing.T, callHoldings int, calls []int) {
	f := passtest.New(t)
	rdb := f.Redis.Client
	recorded := &passtest.ReleaseCalls{}
	rdb.AddHook(recorded)
	const dead, other = "1@dead", "2@other"
	held := judge.ResourceKeyPrefix + "prn:rpm.rpmrepository:held"
	taken := judge.ResourceKeyPrefix + "prn:rpm.rpmrepository:taken"
	domainSet := judge.ResourceKeyPrefix + passtest.Domain
	task := judge.TaskKeyPrefix + sim.NewUUID()
	for _, k := range []string{held, task} {
		require.NoError(t, rdb.Set(f.Ctx, k, dead, 0).Err())
	}
	require.NoError(t, rdb.Set(f.Ctx, taken, other, 0).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, domainSet, dead, other).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+dead, held, taken, task, domainSet).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+other, taken, domainSet).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.ActiveOwnersKey, dead, other).Err())

	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second, CallHoldings: callHoldings}
	holdings := []judge.Holding{
		{Key: held, Owner: dead, Kind: judge.KindExclusive},
		{Key: held, Owner: dead, Kind: judge.KindExclusive}, // listed twice: gone by now
		{Key: held, Owner: dead, Kind: judge.KindShared},    // as a set member: no key either
		{Key: task, Owner: dead, Kind: judge.KindTask},
		{Key: taken, Owner: dead, Kind: judge.KindExclusive}, // another owner's now
		{Key: domainSet, Owner: dead, Kind: judge.KindShared},
		{Key: domainSet, Owner: dead, Kind: judge.KindShared}, // the member is gone by now
	}
	res, err := rel.Release(f.Ctx, redislocks.Batch{Holdings: holdings, Guarded: make([]bool, len(holdings)), Retire: []string{dead}})
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.Released, redislocks.AlreadyGone, redislocks.AlreadyGone, redislocks.Released,
		redislocks.OwnerChanged, redislocks.Released, redislocks.AlreadyGone}, res)

	require.Equal(t, "", f.Get(held))
	require.Equal(t, "", f.Get(task))
	require.Equal(t, other, f.Get(taken), "another owner's lock is left alone")
	require.ElementsMatch(t, []string{other}, f.Members(domainSet))
	require.Zero(t, rdb.Exists(f.Ctx, redislocks.OwnerLocksPrefix+dead).Val(), "the dead owner's registry lost every key it no longer holds")
	require.ElementsMatch(t, []string{taken, domainSet}, f.Members(redislocks.OwnerLocksPrefix+other), "another owner's registry is not touched")
	require.ElementsMatch(t, []string{other}, f.Members(redislocks.ActiveOwnersKey), "the dead owner left, after its registry emptied")
	require.Equal(t, calls, recorded.Holdings(), "the holdings of each call")
}

// TestReleaseBatchNewTaskCheckSeesItsOwnDeletes: a live owner's registry
// lists a task key it was not seen holding, whose lock another (dead) owner
// holds. When the same batch releases that lock first, the key is gone by the
// time the live owner's holding comes: its entry is stale, pruned, and the
// live owner's leaked resource is released, as it would be had the lock been
// deleted on the spot. Coming first, the same holding finds the key there and
// is left alone. So it is when each holding goes in a call of its own.
func TestReleaseBatchNewTaskCheckSeesItsOwnDeletes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		deleteFirst  bool
		callHoldings int
		want         redislocks.Outcome
	}{
		{"the lock is released earlier in the batch", true, 0, redislocks.Released},
		{"the lock is released later in the batch", false, 0, redislocks.OwnerChanged},
		{"the lock is released by an earlier call of the batch", true, 1, redislocks.Released},
		{"the lock is released by a later call of the batch", false, 1, redislocks.OwnerChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := passtest.New(t)
			rdb := f.Redis.Client
			const dead, live = "1@dead", "1@live"
			foreign := judge.TaskKeyPrefix + sim.NewUUID()
			running := judge.TaskKeyPrefix + sim.NewUUID()
			leak := judge.ResourceKeyPrefix + "prn:rpm.rpmrepository:leak"
			require.NoError(t, rdb.Set(f.Ctx, foreign, dead, 0).Err())
			require.NoError(t, rdb.Set(f.Ctx, running, live, 0).Err())
			require.NoError(t, rdb.Set(f.Ctx, leak, live, 0).Err())
			require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+dead, foreign).Err())
			require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+live, foreign, running, leak).Err())

			deleted := judge.Holding{Key: foreign, Owner: dead, Kind: judge.KindTask}
			guardedLeak := judge.Holding{Key: leak, Owner: live, Kind: judge.KindExclusive}
			b := redislocks.Batch{Holdings: []judge.Holding{deleted, guardedLeak}, Guarded: []bool{false, true}}
			if !tc.deleteFirst {
				b.Holdings, b.Guarded = []judge.Holding{guardedLeak, deleted}, []bool{true, false}
			}
			rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second, CallHoldings: tc.callHoldings}
			recorded := &passtest.ReleaseCalls{}
			rdb.AddHook(recorded)
			rememberSeen(t, rel, map[string][]string{live: {running}})
			res, err := rel.Release(f.Ctx, b)
			require.NoError(t, err)
			results := map[string]redislocks.Outcome{b.Holdings[0].Key: res[0], b.Holdings[1].Key: res[1]}
			require.Equal(t, redislocks.Released, results[foreign])
			require.Equal(t, tc.want, results[leak])
			require.Equal(t, "", f.Get(foreign))
			calls := []int{2}
			if tc.callHoldings == 1 {
				calls = []int{1, 1}
			}
			require.Equal(t, calls, recorded.Holdings(), "one call, or one a holding")
			if tc.want == redislocks.Released {
				require.Equal(t, "", f.Get(leak))
				require.ElementsMatch(t, []string{running}, f.Members(redislocks.OwnerLocksPrefix+live), "the stale entry is pruned")
			} else {
				require.Equal(t, live, f.Get(leak))
				require.ElementsMatch(t, []string{foreign, running, leak}, f.Members(redislocks.OwnerLocksPrefix+live))
			}
		})
	}
}

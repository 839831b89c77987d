package redislocks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestReleaseStalePairsGoWithTheirOwner: two dead members of a domain, each
// with stale task locks of its own among the tasks reserving the domain.
// With all its stale pairs, the domain's list is longer than a call may
// check; as each membership needs it, it is not: a call sends a task's
// stale pair only with its owner's membership, the task alone with the
// other's, and a task stale for the call's only owner of the key not at
// all. So each membership goes in a call of its own, sent no more than the
// limit, and with a budget that takes both they go in one call with every
// pair. Either way the check stands: a task stale for one owner whose lock
// the other holds now is that other's new task, and keeps its membership.
func TestReleaseStalePairsGoWithTheirOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redisserver.Start(t)
	rdb := srv.Client
	const a, b, budget = "1@a", "2@b", 11
	limit := redislocks.ReserverCallLimit(budget)
	plain, stale := limit-12, 10

	batch := func(domain string) redislocks.Batch {
		key := judge.ResourceKeyPrefix + domain
		require.NoError(t, rdb.SAdd(ctx, key, a, b).Err())
		var rs []redislocks.Reserver
		for range plain {
			rs = append(rs, redislocks.Reserver{ID: sim.NewUUID()})
		}
		for _, owner := range []string{a, b} {
			for range stale {
				rs = append(rs, redislocks.Reserver{ID: sim.NewUUID(), StaleFor: owner})
			}
		}
		// Each owner's own stale lock of a task; a took another of b's
		// stale tasks since the snapshot.
		require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+rs[plain].ID, a, 0).Err())
		require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+rs[plain+stale].ID, b, 0).Err())
		require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+rs[plain+stale+1].ID, a, 0).Err())
		return redislocks.Batch{
			Holdings:  []judge.Holding{{Key: key, Owner: a, Kind: judge.KindShared}, {Key: key, Owner: b, Kind: judge.KindShared}},
			Guarded:   []bool{true, true},
			Reservers: map[string][]redislocks.Reserver{key: rs},
		}
	}
	want := []redislocks.Outcome{redislocks.OwnerChanged, redislocks.Released}

	calls := &passtest.ReleaseCalls{}
	rdb.AddHook(calls)
	b1 := batch("domain-split")
	out, err := (&redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second, CallHoldings: budget}).Release(ctx, b1)
	require.NoError(t, err)
	require.Equal(t, want, out)
	require.Equal(t, []string{a}, members(t, rdb, b1.Holdings[0].Key), "a took a task reserving the domain: its membership stays")
	require.Equal(t, []int{plain + stale, plain + stale}, calls.TaskKeys(),
		"a call each, sent the other owner's stale tasks without their pairs and none of its owner's own")
	require.LessOrEqual(t, plain+stale, limit)
	require.Greater(t, plain+4*stale, limit, "with every pair the list is longer than a call may check")

	calls = &passtest.ReleaseCalls{}
	rdb.AddHook(calls)
	b2 := batch("domain-whole")
	out, err = (&redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}).Release(ctx, b2)
	require.NoError(t, err)
	require.Equal(t, want, out)
	require.Equal(t, []string{a}, members(t, rdb, b2.Holdings[0].Key))
	require.Equal(t, []int{plain + 4*stale}, calls.TaskKeys(), "one call, with the list and both owners' pairs")
}

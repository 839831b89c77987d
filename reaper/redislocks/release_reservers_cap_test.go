package redislocks_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestReleaseReserversCappedPerCall: the reserving tasks of a lock key go to
// a call once, however many memberships of it the call releases; a call is
// sent at most ReserverCallLimit of them (less the work of its holdings), the memberships of a key whose
// list does not fit beside the others' going to a further call; a key whose
// list alone is longer leaves its memberships untouched (TooManyReservers).
// The owner holding a reserving task's lock keeps its membership, an owner
// whose own stale lock it is does not.
func TestReleaseReserversCappedPerCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redisserver.Start(t)
	rdb := srv.Client
	calls := &passtest.ReleaseCalls{}
	rdb.AddHook(calls)
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	reservers := func(n int) []redislocks.Reserver {
		rs := make([]redislocks.Reserver, n)
		for i := range rs {
			rs[i].ID = sim.NewUUID()
		}
		return rs
	}
	var b redislocks.Batch
	b.Reservers = map[string][]redislocks.Reserver{}
	member := func(resource, owner string) {
		key := judge.ResourceKeyPrefix + resource
		require.NoError(t, rdb.SAdd(ctx, key, owner).Err())
		b.Holdings = append(b.Holdings, judge.Holding{Key: key, Owner: owner, Kind: judge.KindShared})
		b.Guarded = append(b.Guarded, true)
	}
	limit := redislocks.ReserverCallLimit(redislocks.DefaultCallHoldings)
	half := limit/2 + 1
	for i := range 5 {
		member("domain-a", fmt.Sprintf("%d@a", i))
	}
	for i := range 3 {
		member("domain-b", fmt.Sprintf("%d@b", i))
	}
	member("domain-c", "0@c")
	a, bb, c := judge.ResourceKeyPrefix+"domain-a", judge.ResourceKeyPrefix+"domain-b", judge.ResourceKeyPrefix+"domain-c"
	b.Reservers[a], b.Reservers[bb], b.Reservers[c] = reservers(half), reservers(half), reservers(limit+1)
	// 2@a took a task reserving domain-a since the snapshot; 3@a's lock of
	// another is its own stale one.
	require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+b.Reservers[a][7].ID, "2@a", 0).Err())
	require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+b.Reservers[a][8].ID, "3@a", 0).Err())
	b.Reservers[a][8].StaleFor = "3@a"

	out, err := rel.Release(ctx, b)
	require.NoError(t, err)
	r, o, m := redislocks.Released, redislocks.OwnerChanged, redislocks.TooManyReservers
	require.Equal(t, []redislocks.Outcome{r, r, o, r, r, r, r, r, m}, out)
	require.Equal(t, []string{"2@a"}, members(t, rdb, a))
	require.Empty(t, members(t, rdb, bb))
	require.Equal(t, []string{"0@c"}, members(t, rdb, c), "too many reserving tasks: untouched")
	require.Equal(t, []int{half + 1, half}, calls.TaskKeys(), "one call per key's list, each list once")
}

// TestReleaseFailedCallReadsBack: the reply of a release call is lost (as a
// timeout would lose it) after Redis ran the script. The holdings are read
// again: what the script removed is Released, not failed; what it left
// (a new task's membership) is StillHeld, a lock another owner holds is
// OwnerChanged.
func TestReleaseFailedCallReadsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redisserver.Start(t)
	rdb := srv.Client
	rdb.AddHook(lostReply{})
	const owner = "1@gone"
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	require.NoError(t, rdb.SAdd(ctx, judge.ResourceKeyPrefix+"domain-x", owner).Err())
	require.NoError(t, rdb.Set(ctx, judge.ResourceKeyPrefix+"repo-x", owner, 0).Err())
	require.NoError(t, rdb.Set(ctx, judge.ResourceKeyPrefix+"repo-y", "2@other", 0).Err())
	require.NoError(t, rdb.SAdd(ctx, judge.ResourceKeyPrefix+"domain-y", owner).Err())
	task := sim.NewUUID()
	require.NoError(t, rdb.Set(ctx, judge.TaskKeyPrefix+task, owner, 0).Err())
	b := redislocks.Batch{
		Holdings: []judge.Holding{
			{Key: judge.ResourceKeyPrefix + "domain-x", Owner: owner, Kind: judge.KindShared},
			{Key: judge.ResourceKeyPrefix + "repo-x", Owner: owner, Kind: judge.KindExclusive},
			{Key: judge.ResourceKeyPrefix + "repo-y", Owner: owner, Kind: judge.KindExclusive},
			{Key: judge.ResourceKeyPrefix + "domain-y", Owner: owner, Kind: judge.KindShared},
		},
		Guarded:   []bool{true, false, false, true},
		Reservers: map[string][]redislocks.Reserver{judge.ResourceKeyPrefix + "domain-y": {{ID: task}}},
	}
	out, err := rel.Release(ctx, b)
	require.ErrorIs(t, err, errLostReply)
	require.Equal(t, []redislocks.Outcome{redislocks.Released, redislocks.Released, redislocks.OwnerChanged, redislocks.StillHeld}, out)
	require.Empty(t, members(t, rdb, judge.ResourceKeyPrefix+"domain-x"), "the script ran")
	require.Equal(t, []string{owner}, members(t, rdb, judge.ResourceKeyPrefix+"domain-y"))
}

func members(t *testing.T, rdb *redis.Client, key string) []string {
	t.Helper()
	m, err := rdb.SMembers(context.Background(), key).Result()
	require.NoError(t, err)
	return m
}

var errLostReply = errors.New("read tcp: i/o timeout (the reply was lost)")

// lostReply lets every release call run, then loses its reply.
type lostReply struct{}

func (lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && passtest.IsReleaseCall(cmd) {
			cmd.SetErr(errLostReply)
			return errLostReply
		}
		return err
	}
}

func (lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestReleaseReserversWithoutMGET: a Redis user whose ACL lacks MGET (made
// before the reader used it; docs/security.md) still releases: the script
// reads the reserving tasks' locks a GET each, and a membership whose owner
// holds one is still left.
func TestReleaseReserversWithoutMGET(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redisserver.Start(t)
	require.NoError(t, srv.Client.Do(ctx, privilege.RedisSetUser("reaper", "pw")...).Err())
	require.NoError(t, srv.Client.Do(ctx, "ACL", "SETUSER", "reaper", "-mget").Err())
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "reaper", Password: "pw"})
	t.Cleanup(func() { _ = rdb.Close() })
	require.Error(t, rdb.MGet(ctx, judge.TaskKeyPrefix+"x").Err(), "MGET refused")
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	key := judge.ResourceKeyPrefix + "domain-m"
	require.NoError(t, srv.Client.SAdd(ctx, key, "1@m", "2@m").Err())
	task := sim.NewUUID()
	require.NoError(t, srv.Client.Set(ctx, judge.TaskKeyPrefix+task, "2@m", 0).Err())
	out, err := rel.Release(ctx, redislocks.Batch{
		Holdings:  []judge.Holding{{Key: key, Owner: "1@m", Kind: judge.KindShared}, {Key: key, Owner: "2@m", Kind: judge.KindShared}},
		Guarded:   []bool{true, true},
		Reservers: map[string][]redislocks.Reserver{key: {{ID: sim.NewUUID()}, {ID: task}}},
	})
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.Released, redislocks.OwnerChanged}, out)
	require.Equal(t, []string{"2@m"}, members(t, srv.Client, key))
}

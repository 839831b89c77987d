package redislocks_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/passtest"
	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/redislocks"
)

// TestTaskLocksSeenStoredOnce: the task locks a snapshot saw a live owner
// hold are stored once for the pass, not sent with every release call, so a
// call's arguments stay the size of its batch however many task locks the
// owner holds; the store expires on its own and is deleted after the pass;
// and a store that is gone, or was never made, only leaves guarded holdings
// alone.
func TestTaskLocksSeenStoredOnce(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	owner := "7@" + passtest.NewUUID()
	registry := redislocks.OwnerLocksPrefix + owner
	t.Cleanup(func() { rdb.Del(context.Background(), registry) })
	const tasks = 5_000
	var seen []string
	for from := 0; from < tasks; from += 1000 {
		pipe := rdb.Pipeline()
		for i := from; i < from+1000; i++ {
			key := judge.TaskKeyPrefix + fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			seen = append(seen, key)
			pipe.Set(f.Ctx, key, owner, 0)
			pipe.SAdd(f.Ctx, registry, key)
		}
		_, err := pipe.Exec(f.Ctx)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for from := 0; from < len(seen); from += 1000 {
			rdb.Del(context.Background(), seen[from:from+1000]...)
		}
	})
	stale := func(n int) []judge.Holding {
		var hs []judge.Holding
		for i := range n {
			key := judge.ResourceKeyPrefix + fmt.Sprintf("prn:core.repository:%s-%d", owner, i)
			require.NoError(t, rdb.Set(f.Ctx, key, owner, 0).Err())
			require.NoError(t, rdb.SAdd(f.Ctx, registry, key).Err())
			t.Cleanup(func() { rdb.Del(context.Background(), key) })
			hs = append(hs, judge.Holding{Key: key, Owner: owner, Kind: judge.KindExclusive})
		}
		return hs
	}
	guarded := func(hs []judge.Holding) redislocks.Batch {
		b := redislocks.Batch{Holdings: hs, Guarded: make([]bool, len(hs))}
		for i := range b.Guarded {
			b.Guarded[i] = true
		}
		return b
	}

	watched := redis.NewClient(rdb.Options())
	t.Cleanup(func() { _ = watched.Close() })
	sizes := &scriptArgs{}
	watched.AddHook(sizes)
	rel := &redislocks.Releaser{RDB: watched, Timeout: 10 * time.Second}

	hs := stale(50)
	out, err := rel.Release(f.Ctx, guarded(hs[:10]))
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.OwnerChanged}, out[:1], "nothing stored: every task lock the registry lists is new")
	require.Equal(t, owner, f.Get(hs[0].Key))

	forget, err := rel.RememberSeen(f.Ctx, map[string][]string{owner: seen}, []string{owner})
	require.NoError(t, err)
	var stored []string
	iter := rdb.Scan(f.Ctx, 0, redislocks.TaskLocksSeenPrefix+"*", 1000).Iterator()
	for iter.Next(f.Ctx) {
		if k := iter.Val(); k[len(k)-len(owner):] == owner {
			stored = append(stored, k)
		}
	}
	require.NoError(t, iter.Err())
	require.Len(t, stored, 1, "one hash for the owner")
	require.EqualValues(t, tasks, rdb.HLen(f.Ctx, stored[0]).Val())
	ttl := rdb.TTL(f.Ctx, stored[0]).Val()
	require.Positive(t, ttl, "it expires on its own")
	require.LessOrEqual(t, ttl, time.Hour)

	sizes.max.Store(0)
	for from := 10; from < 50; from += 10 {
		out, err = rel.Release(f.Ctx, guarded(hs[from:from+10]))
		require.NoError(t, err)
		for i, o := range out {
			require.Equal(t, redislocks.Released, o, hs[from+i].Key)
		}
	}
	require.Less(t, sizes.max.Load(), int64(100), "a call's arguments are its batch's, not the owner's %d task locks", tasks)

	newTask := judge.TaskKeyPrefix + passtest.NewUUID()
	require.NoError(t, rdb.Set(f.Ctx, newTask, owner, 0).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, registry, newTask).Err())
	t.Cleanup(func() { rdb.Del(context.Background(), newTask) })
	out, err = rel.Release(f.Ctx, guarded(stale(1)))
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.OwnerChanged}, out, "a task lock not in the store: a new task")
	require.NoError(t, rdb.SRem(f.Ctx, registry, newTask).Err())

	require.NoError(t, rdb.Del(f.Ctx, stored[0]).Err(), "as an eviction or the expiry would")
	out, err = rel.Release(f.Ctx, guarded(stale(1)))
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.OwnerChanged}, out, "a store gone mid-pass only leaves holdings alone")

	forget()
	require.Zero(t, rdb.Exists(f.Ctx, stored[0]).Val(), "deleted after the pass")
}

// scriptArgs records the most arguments a script call of the release
// script carried.
type scriptArgs struct{ max atomic.Int64 }

func (c *scriptArgs) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptArgs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && cmd.Args()[1] == redislocks.ReleaseScriptSHA() {
			if n := int64(len(cmd.Args())); n > c.max.Load() {
				c.max.Store(n)
			}
		}
		return next(ctx, cmd)
	}
}

func (c *scriptArgs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

package redislocks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestRegistrySeenStoredOnce: the keys a snapshot saw a live owner's
// registry list are stored once for the pass, not sent with every release
// call, so a call's arguments stay the size of its batch however many locks
// the owner holds; the store expires on its own and is deleted after the
// pass; and a store that is gone, or was never made, only leaves guarded
// holdings alone.
func TestRegistrySeenStoredOnce(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	owner := "7@" + sim.NewUUID()
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

	registered := append([]string(nil), seen...)
	for _, h := range hs {
		registered = append(registered, h.Key)
	}
	forget, err := rel.RememberSeen(f.Ctx, map[string][]string{owner: registered}, []string{owner})
	require.NoError(t, err)
	var stored []string
	iter := rdb.Scan(f.Ctx, 0, redislocks.RegistrySeenPrefix+"*", 1000).Iterator()
	for iter.Next(f.Ctx) {
		if k := iter.Val(); k[len(k)-len(owner):] == owner {
			stored = append(stored, k)
		}
	}
	require.NoError(t, iter.Err())
	require.Len(t, stored, 1, "one set for the owner")
	require.EqualValues(t, tasks+len(hs), rdb.SCard(f.Ctx, stored[0]).Val())
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

	newTask := judge.TaskKeyPrefix + sim.NewUUID()
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

// TestRegistrySeenSkipsTheWalk: when a live owner's registry lists nothing
// but what the snapshot saw, the release script decides without walking it
// (no SSCAN: one SINTERCARD and one SCARD); an entry the snapshot did not
// see, a new task's, sends it to the walk, which finds the task; a stale
// entry (its key gone) to the walk too, which prunes it and releases.
func TestRegistrySeenSkipsTheWalk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redisserver.Start(t)
	rdb := srv.Client
	const owner = "1@live"
	registry := redislocks.OwnerLocksPrefix + owner
	var registered []string
	for i := range 3000 {
		key := fmt.Sprintf("%sprn:core.repository:%05d", judge.ResourceKeyPrefix, i)
		registered = append(registered, key)
		require.NoError(t, rdb.Set(ctx, key, owner, 0).Err())
	}
	running := judge.TaskKeyPrefix + sim.NewUUID()
	require.NoError(t, rdb.Set(ctx, running, owner, 0).Err())
	registered = append(registered, running)
	for from := 0; from < len(registered); from += 1000 {
		members := make([]any, 0, 1000)
		for _, k := range registered[from:min(from+1000, len(registered))] {
			members = append(members, k)
		}
		require.NoError(t, rdb.SAdd(ctx, registry, members...).Err())
	}
	sscans := func() int64 {
		t.Helper()
		stats, err := rdb.Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		var calls int64
		for _, line := range strings.Split(stats, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_sscan:calls="); ok {
				_, err := fmt.Sscanf(rest, "%d", &calls)
				require.NoError(t, err)
			}
		}
		return calls
	}
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	forget, err := rel.RememberSeen(ctx, map[string][]string{owner: registered}, []string{owner})
	require.NoError(t, err)
	t.Cleanup(forget)
	release := func(key string) redislocks.Outcome {
		t.Helper()
		out, err := rel.Release(ctx, redislocks.Batch{Holdings: []judge.Holding{{Key: key, Owner: owner, Kind: judge.KindExclusive}}, Guarded: []bool{true}})
		require.NoError(t, err)
		return out[0]
	}

	before := sscans()
	require.Equal(t, redislocks.Released, release(registered[0]))
	require.Equal(t, redislocks.Released, release(registered[1]))
	require.Equal(t, before, sscans(), "nothing new in the registry: no walk")

	stale := judge.TaskKeyPrefix + sim.NewUUID() // registered, its key deleted by a plain DEL
	require.NoError(t, rdb.SAdd(ctx, registry, stale).Err())
	require.Equal(t, redislocks.Released, release(registered[2]))
	require.Greater(t, sscans(), before, "an entry the snapshot did not see: the walk")
	require.False(t, rdb.SIsMember(ctx, registry, stale).Val(), "the stale entry is pruned")

	newTask := judge.TaskKeyPrefix + sim.NewUUID()
	require.NoError(t, rdb.Set(ctx, newTask, owner, 0).Err())
	require.NoError(t, rdb.SAdd(ctx, registry, newTask).Err())
	require.Equal(t, redislocks.OwnerChanged, release(registered[3]), "a new task")
	require.Equal(t, owner, rdb.Get(ctx, registered[3]).Val())
	require.True(t, rdb.SIsMember(ctx, registry, running).Val())
}

// TestRegistrySeenForgottenInChunks: a large set of keys seen is emptied a
// chunk per command before it is deleted, so that no DEL frees a live
// owner's hundred thousand members in one command.
func TestRegistrySeenForgottenInChunks(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	cmds := &deleteSizes{rdb: f.Redis.Client}
	watched := redis.NewClient(f.Redis.Client.Options())
	t.Cleanup(func() { _ = watched.Close() })
	watched.AddHook(cmds)
	rel := &redislocks.Releaser{RDB: watched, Timeout: 10 * time.Second}
	const owner = "1@leaky"
	keys := make([]string, 5500)
	for i := range keys {
		keys[i] = fmt.Sprintf("%srepo-%05d", judge.ResourceKeyPrefix, i)
	}
	forget, err := rel.RememberSeen(f.Ctx, map[string][]string{owner: keys}, []string{owner})
	require.NoError(t, err)
	forget()
	require.Zero(t, cmds.largest, "a DEL found a set of that many members")
	require.Empty(t, f.Redis.Client.Keys(f.Ctx, redislocks.RegistrySeenPrefix+"*").Val())
}

// TestRegistrySeenOfManyOwnersDeletedInBoundedCommands: the sets of many
// owners, each small, are deleted a few at a time, so that no DEL frees
// the members of hundreds of sets in one command (a pass over 450 live
// owners with about 400 locks each freed 180,000 in one, for 41 ms).
func TestRegistrySeenOfManyOwnersDeletedInBoundedCommands(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	cmds := &deleteSizes{rdb: f.Redis.Client}
	watched := redis.NewClient(f.Redis.Client.Options())
	t.Cleanup(func() { _ = watched.Close() })
	watched.AddHook(cmds)
	rel := &redislocks.Releaser{RDB: watched, Timeout: 10 * time.Second}
	seen := map[string][]string{}
	var owners []string
	for o := range 40 {
		owner := fmt.Sprintf("%d@busy", o)
		owners = append(owners, owner)
		for i := range 400 {
			seen[owner] = append(seen[owner], fmt.Sprintf("%srepo-%d-%03d", judge.ResourceKeyPrefix, o, i))
		}
	}
	forget, err := rel.RememberSeen(f.Ctx, seen, owners)
	require.NoError(t, err)
	forget()
	// seenChunk: the most members one command of the pass writes or frees.
	require.LessOrEqual(t, cmds.largestTotal, int64(1000), "a DEL freed that many members")
	require.Positive(t, cmds.largestTotal)
	require.Empty(t, f.Redis.Client.Keys(f.Ctx, redislocks.RegistrySeenPrefix+"*").Val())
}

// deleteSizes records the most members a DEL found in one of the sets it
// deleted (largest) and in all of them (largestTotal), sent alone or in a
// pipeline.
type deleteSizes struct {
	rdb                   *redis.Client
	largest, largestTotal int64
}

func (d *deleteSizes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *deleteSizes) measure(ctx context.Context, cmd redis.Cmder) {
	if cmd.Name() != "del" {
		return
	}
	var total int64
	for _, k := range cmd.Args()[1:] {
		n := d.rdb.SCard(ctx, k.(string)).Val()
		d.largest, total = max(d.largest, n), total+n
	}
	d.largestTotal = max(d.largestTotal, total)
}

func (d *deleteSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		d.measure(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (d *deleteSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			d.measure(ctx, cmd)
		}
		return next(ctx, cmds)
	}
}

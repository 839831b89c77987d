package redislocks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestReleaseGuardChecksTaskLocks exercises the release script's check that
// a live owner took no task lock since the snapshot, on an owner with more
// task locks than one SMISMEMBER or one SSCAN page takes: a seen task lock that
// finished since leaves the check passing, a new one among them (even as a
// finished one leaves, keeping the count) fails it.
func TestReleaseGuardChecksTaskLocks(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	const owner = "9@busy"
	registry := redislocks.OwnerLocksPrefix + owner
	var seen []string
	for i := range 2500 {
		key := judge.TaskKeyPrefix + fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		seen = append(seen, key)
		require.NoError(t, rdb.Set(f.Ctx, key, owner, 0).Err())
		require.NoError(t, rdb.SAdd(f.Ctx, registry, key, judge.ResourceKeyPrefix+"prn:rpm.rpmrepository:"+fmt.Sprint(i)).Err())
	}
	stale := func(name string) judge.Holding {
		key := judge.ResourceKeyPrefix + name
		require.NoError(t, rdb.Set(f.Ctx, key, owner, 0).Err())
		require.NoError(t, rdb.SAdd(f.Ctx, registry, key).Err())
		return judge.Holding{Key: key, Owner: owner, Kind: judge.KindExclusive}
	}
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	rememberSeen(t, rel, map[string][]string{owner: seen})
	release := func(h judge.Holding) redislocks.Outcome {
		res, err := rel.Release(f.Ctx, redislocks.Batch{Holdings: []judge.Holding{h}, Guarded: []bool{true}})
		require.NoError(t, err)
		return res[0]
	}

	require.Equal(t, redislocks.Released, release(stale("a")), "every task lock the registry lists was seen")

	require.NoError(t, rdb.SRem(f.Ctx, registry, seen[7]).Err())
	require.Equal(t, redislocks.Released, release(stale("b")), "a seen task lock left since")

	newTask := judge.TaskKeyPrefix + "00000000-0000-4000-8000-999999999999"
	require.NoError(t, rdb.SRem(f.Ctx, registry, seen[8]).Err())
	require.NoError(t, rdb.Set(f.Ctx, newTask, owner, 0).Err()) // taken with its entry, as pulpcore's acquire does
	require.NoError(t, rdb.SAdd(f.Ctx, registry, newTask).Err())
	h := stale("c")
	require.Equal(t, redislocks.OwnerChanged, release(h), "a new task lock, though the count of task locks is as seen")
	require.Equal(t, owner, f.Get(h.Key), "left alone")
	require.True(t, rdb.SIsMember(f.Ctx, registry, h.Key).Val(), "still registered")
}

// TestReleaseScriptByKeyType: what the release script does with a holding
// whatever its key holds by the time it runs, and whether the owner's
// registry keeps the key (only while the owner still holds it).
func TestReleaseScriptByKeyType(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	const owner = "3@w"
	registry := redislocks.OwnerLocksPrefix + owner
	rel := &redislocks.Releaser{RDB: rdb, Timeout: 10 * time.Second}
	for _, tc := range []struct {
		name       string
		kind       judge.Kind
		setup      func(key string)
		want       redislocks.Outcome
		registered bool
	}{
		{"string of the owner", judge.KindExclusive, func(k string) { rdb.Set(f.Ctx, k, owner, 0) }, redislocks.Released, false},
		{"string of another owner", judge.KindExclusive, func(k string) { rdb.Set(f.Ctx, k, "4@w", 0) }, redislocks.OwnerChanged, false},
		{"set the owner is in", judge.KindExclusive, func(k string) { rdb.SAdd(f.Ctx, k, owner) }, redislocks.OwnerChanged, true},
		{"set the owner is not in", judge.KindExclusive, func(k string) { rdb.SAdd(f.Ctx, k, "4@w") }, redislocks.OwnerChanged, false},
		{"list", judge.KindExclusive, func(k string) { rdb.LPush(f.Ctx, k, owner) }, redislocks.OwnerChanged, false},
		{"gone string", judge.KindExclusive, func(string) {}, redislocks.AlreadyGone, false},
		{"member of the set", judge.KindShared, func(k string) { rdb.SAdd(f.Ctx, k, owner, "4@w") }, redislocks.Released, false},
		{"set without the member", judge.KindShared, func(k string) { rdb.SAdd(f.Ctx, k, "4@w") }, redislocks.AlreadyGone, false},
		{"gone set", judge.KindShared, func(string) {}, redislocks.AlreadyGone, false},
		{"string instead of the set", judge.KindShared, func(k string) { rdb.Set(f.Ctx, k, owner, 0) }, redislocks.OwnerChanged, false},
		{"hash instead of the set", judge.KindShared, func(k string) { rdb.HSet(f.Ctx, k, owner, 1) }, redislocks.OwnerChanged, false},
	} {
		key := judge.ResourceKeyPrefix + "prn:core.domain:" + tc.name
		tc.setup(key)
		require.NoError(t, rdb.SAdd(f.Ctx, registry, key, "keep-the-registry-a-set").Err())
		res, err := rel.Release(f.Ctx, redislocks.Batch{Holdings: []judge.Holding{{Key: key, Owner: owner, Kind: tc.kind}}, Guarded: []bool{false}})
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, res[0], tc.name)
		require.Equal(t, tc.registered, rdb.SIsMember(f.Ctx, registry, key).Val(), "%s: registered", tc.name)
	}
}

// TestReleaseScriptFailsOnADeniedCommand: only WRONGTYPE tells the script
// a key holds something else. Any other error, such as a command the ACL
// refuses, fails the batch rather than reading as owner-changed, so that a
// misconfigured user is seen at once instead of releasing nothing quietly;
// the script asks before its first write, so the error names the command
// and nothing was changed.
func TestReleaseScriptFailsOnADeniedCommand(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	user, secret := "lr-denied-"+sim.NewUUID()[:8], sim.NewUUID()
	require.NoError(t, f.Redis.Client.Do(f.Ctx, "ACL", "SETUSER", user, "reset", "on", ">"+secret, "~*", "+@all", "-get", "-srem").Err())
	t.Cleanup(func() { _ = f.Redis.Client.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	opts := *f.Redis.Client.Options()
	opts.Username, opts.Password = user, secret
	limited := redis.NewClient(&opts)
	defer limited.Close()

	rel := &redislocks.Releaser{RDB: limited, Timeout: 10 * time.Second}
	for _, h := range []judge.Holding{
		{Key: judge.ResourceKeyPrefix + "x", Owner: "3@w", Kind: judge.KindExclusive},
		{Key: judge.ResourceKeyPrefix + "s", Owner: "3@w", Kind: judge.KindShared},
	} {
		_, err := rel.Release(f.Ctx, redislocks.Batch{Holdings: []judge.Holding{h}, Guarded: []bool{false}})
		require.ErrorContains(t, err, "may not run GET", h.Key)
		require.ErrorContains(t, err, "nothing was changed", h.Key)
	}
}

// TestReleaseCallPagesHandBack: the new-task checks of one release call walk
// a bounded number of SSCAN pages together. Guarded owners whose registries
// need more than the call has left are handed back to further calls, where
// each is checked as it would have been (released, or left owner-changed
// for a new task). A registry larger than one call counts or walks is not
// walked at all: the reserving tasks' task locks alone decide.
func TestReleaseCallPagesHandBack(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	fill := func(owner string, entries int) judge.Holding {
		registry := redislocks.OwnerLocksPrefix + owner
		for start := 0; start < entries; start += 10_000 {
			batch := make([]any, 0, 10_000)
			for i := start; i < min(start+10_000, entries); i++ {
				// Resource entries: the check's SSCAN pages walk them, and
				// they count for no task.
				batch = append(batch, fmt.Sprintf("%sprn:rpm.rpmrepository:%s-%d", judge.ResourceKeyPrefix, owner, i))
			}
			require.NoError(t, rdb.SAdd(f.Ctx, registry, batch...).Err())
		}
		key := judge.ResourceKeyPrefix + passtest.Repo()
		require.NoError(t, rdb.Set(f.Ctx, key, owner, 0).Err())
		require.NoError(t, rdb.SAdd(f.Ctx, registry, key).Err())
		return judge.Holding{Key: key, Owner: owner, Kind: judge.KindExclusive}
	}
	newTask := func(owner string) string {
		id := sim.NewUUID()
		require.NoError(t, rdb.Set(f.Ctx, judge.TaskKeyPrefix+id, owner, 0).Err())
		require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+owner, judge.TaskKeyPrefix+id).Err())
		return id
	}
	// A walk of a registry takes about a page per thousand entries (the
	// call has 100): eight owners of 19,000 entries need about 155.
	var owners []judge.Holding
	for i := range 8 {
		owners = append(owners, fill(fmt.Sprintf("%d@walked", i), 19_000))
	}
	busy := fill("9@busy", 19_000)
	newTask(busy.Owner)
	huge := fill("10@huge", 150_000)
	hugeTask := newTask(huge.Owner)

	calls := &scriptCalls{}
	counted := redis.NewClient(rdb.Options())
	t.Cleanup(func() { _ = counted.Close() })
	counted.AddHook(calls)
	rel := &redislocks.Releaser{RDB: counted, Timeout: 10 * time.Second}
	b := redislocks.Batch{Holdings: owners, Guarded: make([]bool, len(owners))}
	for i := range owners {
		b.Guarded[i] = true
	}
	out, err := rel.Release(f.Ctx, b)
	require.NoError(t, err)
	for i, h := range owners {
		require.Equal(t, redislocks.Released, out[i], h.Owner)
		require.Equal(t, "", f.Get(h.Key))
	}
	require.GreaterOrEqual(t, calls.n.Load(), int64(2), "the owners past the call's pages were handed back")

	// A registry that lists a task lock the snapshot did not see, however
	// many pages in: the owner took a new task.
	calls.n.Store(0)
	out, err = rel.Release(f.Ctx, redislocks.Batch{Holdings: []judge.Holding{busy}, Guarded: []bool{true}})
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.OwnerChanged}, out)
	require.EqualValues(t, 1, calls.n.Load())
	require.Equal(t, busy.Owner, f.Get(busy.Key), "the owner took a new task: left alone")
	require.True(t, rdb.SIsMember(f.Ctx, redislocks.OwnerLocksPrefix+busy.Owner, busy.Key).Val())

	// Past the count limit the registry is not walked: the new task is
	// found by its lock when it reserves the holding's resource.
	calls.n.Store(0)
	out, err = rel.Release(f.Ctx, redislocks.Batch{Holdings: []judge.Holding{huge}, Guarded: []bool{true}, Reservers: map[string][]redislocks.Reserver{huge.Key: {{ID: hugeTask}}}})
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.OwnerChanged}, out, "the new task reserves the resource")
	require.EqualValues(t, 1, calls.n.Load())
	require.Equal(t, huge.Owner, f.Get(huge.Key))
	require.True(t, rdb.SIsMember(f.Ctx, redislocks.OwnerLocksPrefix+huge.Owner, huge.Key).Val(), "still registered")
	out, err = rel.Release(f.Ctx, redislocks.Batch{Holdings: []judge.Holding{huge}, Guarded: []bool{true}})
	require.NoError(t, err)
	require.Equal(t, []redislocks.Outcome{redislocks.Released}, out, "no task reserving it: released")
	require.Equal(t, "", f.Get(huge.Key))
}

// rememberSeen stores the task locks seen for rel's releases, and deletes
// them when the test ends.
func rememberSeen(t *testing.T, rel *redislocks.Releaser, seen map[string][]string) {
	t.Helper()
	var owners []string
	for o := range seen {
		owners = append(owners, o)
	}
	forget, err := rel.RememberSeen(context.Background(), seen, owners)
	require.NoError(t, err)
	t.Cleanup(forget)
}

// scriptCalls counts the script calls that Redis ran (a NOSCRIPT answer,
// before the script is loaded, is none).
type scriptCalls struct{ n atomic.Int64 }

func (c *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && (err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT")) {
			c.n.Add(1)
		}
		return err
	}
}

func (c *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

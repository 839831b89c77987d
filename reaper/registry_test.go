package reaper

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/judge"
	"github.com/lock-reaper/lock-reaper/redislocks"
	"github.com/stretchr/testify/require"
)

// TestStaleRegistryEntryNeverBlocksARelease: a live owner's registry lists a
// task key that no longer exists (deleted with a plain DEL). Its leaked
// resource lock, a suspect, is released once confirmed: within confirm_after
// plus one pass, not left owner-changed forever. The stale entry is pruned;
// the entry of its running task stays, and its healthy locks with it. A
// registry entry of a task lock that does exist still holds the release back.
func TestStaleRegistryEntryNeverBlocksARelease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const owner = "1@live"
	row := f.worker(owner, time.Second)
	running := f.task(judge.StateRunning, row, []string{"repo-run"}, -1)
	f.acquire(owner, running, []string{"repo-run"}, false)
	leak := judge.ResourceKeyPrefix + "repo-leak"
	require.NoError(t, f.redis.Client.Set(f.ctx, leak, owner, 0).Err())
	require.NoError(t, f.redis.Client.SAdd(f.ctx, redislocks.OwnerLocksPrefix+owner, leak).Err())
	stale := judge.TaskKeyPrefix + newUUID()
	require.NoError(t, f.redis.Client.SAdd(f.ctx, redislocks.OwnerLocksPrefix+owner, stale).Err())
	r := f.reaper(nil)

	rep := f.pass(r, ModeOnce)
	require.Equal(t, ResultSuspected, findingFor(rep, leak, owner).Result)
	f.ageSuspects(judge.DefaultPolicy().ConfirmAfter + time.Second)

	// explain of a task waiting for the leaked resource says what the next
	// pass does: release it.
	waiting := f.task(judge.StateWaiting, "", []string{"repo-leak"}, -1)
	in, err := r.Inspect(f.ctx, InspectOptions{TaskID: waiting})
	require.NoError(t, err)
	ex := Explain(in, waiting)
	require.Equal(t, StatusBlocked, ex.Status, ex.Conclusion)
	require.Contains(t, ex.Conclusion, "release")

	rep = f.pass(r, ModeOnce)
	fd := findingFor(rep, leak, owner)
	require.NotNil(t, fd)
	require.Equal(t, ResultReleased, fd.Result, "the stale entry held the release back")
	require.Equal(t, "", f.get(leak))
	registry := f.members(redislocks.OwnerLocksPrefix + owner)
	require.NotContains(t, registry, stale, "the stale entry is pruned")
	require.Contains(t, registry, judge.TaskKeyPrefix+running)
	require.Equal(t, owner, f.get(judge.TaskKeyPrefix+running))
	require.Contains(t, f.members(redislocks.ActiveOwnersKey), owner)

	// A registered task lock that exists but was not seen is a new task.
	other := newUUID()
	leak2 := judge.ResourceKeyPrefix + "repo-leak-2"
	require.NoError(t, f.redis.Client.Set(f.ctx, leak2, owner, 0).Err())
	f.pass(r, ModeOnce)
	f.ageSuspects(judge.DefaultPolicy().ConfirmAfter + time.Second)
	rep, err = r.RunOnce(f.ctx, PassOptions{Mode: ModeOnce, Adjust: func(*judge.Plan) {
		f.acquire(owner, other, nil, false)
	}})
	require.NoError(t, err)
	require.Equal(t, ResultOwnerChanged, findingFor(rep, leak2, owner).Result)
	require.Equal(t, owner, f.get(leak2))
}

// TestPassLeavesRedisAsPulpcoreExpects: after a pass, pulpcore's
// collect_lock_owners (SMEMBERS pulp:active_owners, and with its legacy scan
// the values and members of every task and resource lock) lists no owner
// without a live row: a dead owner whose registry holds only entries of
// deleted keys, an owner that has no row and holds nothing, and a dead owner
// whose locks the pass released (one more registry entry stale) leave
// pulp:active_owners and their registries are gone. A live owner stays, and
// so does a dead owner whose locks the pass held back (max_releases).
func TestPassLeavesRedisAsPulpcoreExpects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rdb := f.redis.Client
	live := "1@live"
	liveRow := f.worker(live, time.Second)
	liveTask := f.task(judge.StateRunning, liveRow, []string{"repo-live"}, -1)
	f.acquire(live, liveTask, []string{"repo-live"}, false)
	for _, idle := range []string{"1@idle-a", "1@idle-b", "1@idle-c"} {
		f.worker(idle, time.Second) // so that two dead rows trip no mass-death guard
	}

	emptyDead := "1@dead-holding-nothing"
	f.worker(emptyDead, time.Hour)
	require.NoError(t, rdb.SAdd(f.ctx, redislocks.OwnerLocksPrefix+emptyDead, judge.TaskKeyPrefix+newUUID(), judge.ResourceKeyPrefix+"gone").Err())
	require.NoError(t, rdb.SAdd(f.ctx, redislocks.ActiveOwnersKey, emptyDead).Err())
	rowless := "immediate-" + newUUID()
	require.NoError(t, rdb.SAdd(f.ctx, redislocks.ActiveOwnersKey, rowless).Err())

	dead := "1@dead"
	deadRow := f.worker(dead, time.Hour)
	deadTask := f.task(judge.StateRunning, deadRow, []string{"repo-dead"}, -1)
	f.acquire(dead, deadTask, []string{"repo-dead"}, false)
	require.NoError(t, rdb.SAdd(f.ctx, redislocks.OwnerLocksPrefix+dead, judge.TaskKeyPrefix+newUUID()).Err())

	f.pass(f.reaper(nil), ModeOnce)

	require.ElementsMatch(t, []string{live}, collectLockOwners(f))
	for _, o := range []string{emptyDead, rowless, dead} {
		require.Zero(t, rdb.Exists(f.ctx, redislocks.OwnerLocksPrefix+o).Val(), "registry of %s", o)
	}
	require.Equal(t, live, f.get(judge.TaskKeyPrefix+liveTask))

	// Held back by max_releases, a dead owner's locks keep it listed.
	held := "1@dead-held-back"
	heldRow := f.worker(held, time.Hour)
	for range 3 {
		id := f.task(judge.StateRunning, heldRow, nil, -1)
		f.acquire(held, id, nil, false)
	}
	f.pass(f.reaper(func(c *Config) { c.MaxReleases = 1 }), ModeOnce)
	require.Contains(t, f.members(redislocks.ActiveOwnersKey), held)
	require.Len(t, f.members(redislocks.OwnerLocksPrefix+held), 2)
}

// collectLockOwners is what pulpcore's collect_lock_owners returns with its
// legacy scan: the members of pulp:active_owners, the values of every task
// and exclusive lock and the members of every shared lock.
func collectLockOwners(f *fixture) []string {
	f.t.Helper()
	owners := map[string]bool{}
	for _, o := range f.members(redislocks.ActiveOwnersKey) {
		owners[o] = true
	}
	for _, pattern := range []string{judge.TaskKeyPrefix + "*", judge.ResourceKeyPrefix + "*"} {
		keys, err := f.redis.Client.Keys(f.ctx, pattern).Result()
		require.NoError(f.t, err)
		for _, k := range keys {
			if f.redis.Client.Type(f.ctx, k).Val() == "string" {
				owners[f.get(k)] = true
			} else {
				for _, m := range f.members(k) {
					owners[m] = true
				}
			}
		}
	}
	var out []string
	for o := range owners {
		out = append(out, o)
	}
	return out
}

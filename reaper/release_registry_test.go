package reaper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
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
	row := f.Worker(owner, time.Second)
	running := f.Task(judge.StateRunning, row, []string{"repo-run"}, -1)
	f.Acquire(owner, running, []string{"repo-run"}, false)
	leak := judge.ResourceKeyPrefix + "repo-leak"
	require.NoError(t, f.Redis.Client.Set(f.Ctx, leak, owner, 0).Err())
	require.NoError(t, f.Redis.Client.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+owner, leak).Err())
	stale := judge.TaskKeyPrefix + sim.NewUUID()
	require.NoError(t, f.Redis.Client.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+owner, stale).Err())
	r := f.reaper(nil)

	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, reaper.ResultSuspected, findingFor(rep, leak, owner).Result)
	f.ageSuspects(reaper.DefaultConfig().Policy.ConfirmAfter + time.Second)

	// explain of a task waiting for the leaked resource says what the next
	// pass does: release it.
	waiting := f.Task(judge.StateWaiting, "", []string{"repo-leak"}, -1)
	in, err := r.Inspect(f.Ctx, reaper.InspectOptions{TaskID: waiting})
	require.NoError(t, err)
	ex := explain.Explain(in, waiting)
	require.Equal(t, explain.StatusBlocked, ex.Status, ex.Conclusion)
	require.Contains(t, ex.Conclusion, "release")

	rep = f.pass(r, reaper.ModeOnce)
	fd := findingFor(rep, leak, owner)
	require.NotNil(t, fd)
	require.Equal(t, reaper.ResultReleased, fd.Result, "the stale entry held the release back")
	require.Equal(t, "", f.Get(leak))
	registry := f.Members(redislocks.OwnerLocksPrefix + owner)
	require.NotContains(t, registry, stale, "the stale entry is pruned")
	require.Contains(t, registry, judge.TaskKeyPrefix+running)
	require.Equal(t, owner, f.Get(judge.TaskKeyPrefix+running))
	require.Contains(t, f.Members(redislocks.ActiveOwnersKey), owner)

	// A registered task lock that exists but was not seen is a new task.
	other := sim.NewUUID()
	leak2 := judge.ResourceKeyPrefix + "repo-leak-2"
	require.NoError(t, f.Redis.Client.Set(f.Ctx, leak2, owner, 0).Err())
	f.pass(r, reaper.ModeOnce)
	f.ageSuspects(reaper.DefaultConfig().Policy.ConfirmAfter + time.Second)
	rep, err = r.RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		f.Acquire(owner, other, nil, false)
	})
	require.NoError(t, err)
	require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, leak2, owner).Result)
	require.Equal(t, owner, f.Get(leak2))
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
	rdb := f.Redis.Client
	live := "1@live"
	liveRow := f.Worker(live, time.Second)
	liveTask := f.Task(judge.StateRunning, liveRow, []string{"repo-live"}, -1)
	f.Acquire(live, liveTask, []string{"repo-live"}, false)
	for _, idle := range []string{"1@idle-a", "1@idle-b", "1@idle-c"} {
		f.Worker(idle, time.Second) // so that two dead rows trip no mass-death guard
	}

	emptyDead := "1@dead-holding-nothing"
	f.Worker(emptyDead, time.Hour)
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+emptyDead, judge.TaskKeyPrefix+sim.NewUUID(), judge.ResourceKeyPrefix+"gone").Err())
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.ActiveOwnersKey, emptyDead).Err())
	rowless := "immediate-" + sim.NewUUID()
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.ActiveOwnersKey, rowless).Err())

	dead := "1@dead"
	deadRow := f.Worker(dead, time.Hour)
	deadTask := f.Task(judge.StateRunning, deadRow, []string{"repo-dead"}, -1)
	f.Acquire(dead, deadTask, []string{"repo-dead"}, false)
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+dead, judge.TaskKeyPrefix+sim.NewUUID()).Err())

	f.pass(f.reaper(nil), reaper.ModeOnce)

	require.ElementsMatch(t, []string{live}, collectLockOwners(f))
	for _, o := range []string{emptyDead, rowless, dead} {
		require.Zero(t, rdb.Exists(f.Ctx, redislocks.OwnerLocksPrefix+o).Val(), "registry of %s", o)
	}
	require.Equal(t, live, f.Get(judge.TaskKeyPrefix+liveTask))

	// Held back by max_releases, a dead owner's locks keep it listed.
	held := "1@dead-held-back"
	heldRow := f.Worker(held, time.Hour)
	for range 3 {
		id := f.Task(judge.StateRunning, heldRow, nil, -1)
		f.Acquire(held, id, nil, false)
	}
	f.pass(f.reaper(func(c *reaper.Config) { c.MaxReleases = 1 }), reaper.ModeOnce)
	require.Contains(t, f.Members(redislocks.ActiveOwnersKey), held)
	require.Len(t, f.Members(redislocks.OwnerLocksPrefix+held), 2)
}

// collectLockOwners is what pulpcore's collect_lock_owners returns with its
// legacy scan: the members of pulp:active_owners, the values of every task
// and exclusive lock and the members of every shared lock.
func collectLockOwners(f *fixture) []string {
	f.T.Helper()
	owners := map[string]bool{}
	for _, o := range f.Members(redislocks.ActiveOwnersKey) {
		owners[o] = true
	}
	for _, pattern := range []string{judge.TaskKeyPrefix + "*", judge.ResourceKeyPrefix + "*"} {
		keys, err := f.Redis.Client.Keys(f.Ctx, pattern).Result()
		require.NoError(f.T, err)
		for _, k := range keys {
			if f.Redis.Client.Type(f.Ctx, k).Val() == "string" {
				owners[f.Get(k)] = true
			} else {
				for _, m := range f.Members(k) {
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

// TestNewTaskWithoutRegistryKeepsItsMembership: a live worker of a pulpcore
// without the owner registry (before 3.117) leaked the shared domain
// membership and the task lock of a finished task. Between the pass's
// snapshot and its release it takes a new task in the same domain: its
// acquire adds it to the domain's set, where it already is. The pass
// releases the finished task's lock but leaves the membership, which the
// new task now needs (owner-changed); the next pass keeps it, justified by
// the new task's lock.
func TestNewTaskWithoutRegistryKeepsItsMembership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const owner = "1@legacy"
	row := f.Worker(owner, time.Second)
	finished := f.Task(judge.StateCompleted, row, []string{"shared:domain-x", "repo-x"}, 10*time.Minute)
	f.Acquire(owner, finished, []string{"shared:domain-x", "repo-x"}, true)
	domain, repo := judge.ResourceKeyPrefix+"domain-x", judge.ResourceKeyPrefix+"repo-x"
	r := f.reaper(nil)

	var next string
	rep, err := r.RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		next = f.Task(judge.StateWaiting, "", []string{"shared:domain-x"}, -1)
		f.Acquire(owner, next, []string{"shared:domain-x"}, true)
	})
	require.NoError(t, err)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.TaskKeyPrefix+finished, owner).Result)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, repo, owner).Result, "no task reserving it was taken")
	require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, domain, owner).Result)
	require.Contains(t, f.Members(domain), owner, "the new task's membership")
	require.Equal(t, owner, f.Get(judge.TaskKeyPrefix+next))

	rep = f.pass(r, reaper.ModeOnce)
	if fd := findingFor(rep, domain, owner); fd != nil {
		require.Contains(t, []reaper.Result{reaper.ResultKept}, fd.Result, fd.Verdict)
	}
	require.Contains(t, f.Members(domain), owner)
}

// TestLiveOwnerPastTheCountLimit: a live owner leaked 24,000 locks of a
// finished task, every one in its registry, more than a release call
// counts. Between the snapshot and the release it takes a new task in the
// leaked task's domain. While the registry is past the limit the release
// script does not count it, and the new task's lock decides: the domain
// membership the new task needs stays; the leaked repositories, which it
// does not reserve, are released. Once the releases bring the registry under
// the limit the count sees the new task and holds the rest back for the next
// pass, which releases them.
func TestLiveOwnerPastTheCountLimit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 24,000 locks")
	}
	f := newFixture(t)
	rdb := f.Redis.Client
	const owner, leaked = "1@leaky", 24_000
	row := f.Worker(owner, time.Second)
	reserved := []string{"shared:domain-y"}
	keys := []any{judge.ResourceKeyPrefix + "domain-y"}
	for i := range leaked {
		name := fmt.Sprintf("repo-y-%05d", i)
		reserved = append(reserved, name)
		keys = append(keys, judge.ResourceKeyPrefix+name)
	}
	finished := f.Task(judge.StateCompleted, row, reserved, 10*time.Minute)
	pipe := rdb.Pipeline()
	pipe.Set(f.Ctx, judge.TaskKeyPrefix+finished, owner, 0)
	pipe.SAdd(f.Ctx, judge.ResourceKeyPrefix+"domain-y", owner)
	for _, k := range keys[1:] {
		pipe.Set(f.Ctx, k.(string), owner, 0)
	}
	pipe.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+owner, append(keys, judge.TaskKeyPrefix+finished)...)
	pipe.SAdd(f.Ctx, redislocks.ActiveOwnersKey, owner)
	_, err := pipe.Exec(f.Ctx)
	require.NoError(t, err)
	r := f.reaper(func(c *reaper.Config) { c.BatchSize, c.MaxReleases = 1000, 50_000 })

	var next string
	rep, err := r.RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		// Taken and claimed at once, as pulpcore's fetch does.
		next = f.Task(judge.StateRunning, row, []string{"shared:domain-y"}, -1)
		f.Acquire(owner, next, []string{"shared:domain-y"}, false)
	})
	require.NoError(t, err)
	domain := judge.ResourceKeyPrefix + "domain-y"
	require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, domain, owner).Result)
	require.Contains(t, f.Members(domain), owner, "the new task's membership")
	released := 0
	for _, fd := range rep.Findings {
		if fd.Result == reaper.ResultReleased && fd.Key != judge.TaskKeyPrefix+finished {
			released++
		}
	}
	require.GreaterOrEqual(t, released, leaked-20_000-1000, "released past the limit, on the reserving tasks' check")
	require.Less(t, released, leaked, "the count, under the limit, saw the new task")

	// The rest, now without their task lock, are no-task suspects of the
	// live owner, released once confirmed.
	f.pass(r, reaper.ModeOnce)
	f.ageSuspects(reaper.DefaultConfig().Policy.ConfirmAfter + time.Second)
	f.pass(r, reaper.ModeOnce)
	require.Contains(t, f.Members(domain), owner)
	for i := range leaked {
		require.Equal(t, "", f.Get(fmt.Sprintf("%srepo-y-%05d", judge.ResourceKeyPrefix, i)))
	}
}

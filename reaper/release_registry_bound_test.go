package reaper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestNoCommandBlocksRedisOnAHugeRegistry: a live owner whose registry lists
// 1,000,000 task keys that are gone, beside its running task and a leaked
// resource, and a dead owner with 200,000 such entries. The release script
// used to walk such a registry whole in one call, twice (4.3 s of blocked
// Redis on an idle machine). Counted in commands by a MONITOR of a
// test-started Redis, no script call of the passes (the pruning, the
// release and retire scripts) walks more than its budget of SSCAN pages, no
// SSCAN asks for more than a page, and no command reads or combines a
// registry whole; what that costs in time, against one walk of such a
// registry, the bench measures (-scenario dead-owner, -stale-registry). The
// passes converge: every stale entry is pruned, the leaked lock is released
// once confirmed, the dead owner leaves pulp:active_owners, and the live
// owner's running task keeps its locks and registry entries.
func TestNoCommandBlocksRedisOnAHugeRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1,200,000 registry entries")
	}
	// registryPageSize and registryCallPages (reaper/redislocks): a call
	// walks at most that many pages past the first of each of its owners.
	const pageSize, callPages, owners = 1000, 100, 2
	srv := redisserver.Start(t)
	f := &fixture{&passtest.Fixture{T: t, Ctx: context.Background(), Redis: &testenv.Redis{Client: srv.Client, URL: srv.URL(0)}, DB: testenv.NewDatabase(t)}}
	rdb := srv.Client
	const live, dead = "1@live", "1@dead"
	row := f.Worker(live, time.Second)
	running := f.Task(judge.StateRunning, row, []string{"repo-run"}, -1)
	f.Acquire(live, running, []string{"repo-run"}, false)
	leak := judge.ResourceKeyPrefix + "repo-leak"
	require.NoError(t, rdb.Set(f.Ctx, leak, live, 0).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+live, leak).Err())
	require.NoError(t, rdb.SAdd(f.Ctx, redislocks.ActiveOwnersKey, dead).Err())
	addStale := func(owner string, n int) {
		for start := 0; start < n; start += 10_000 {
			batch := make([]any, 0, 10_000)
			for i := start; i < min(start+10_000, n); i++ {
				batch = append(batch, fmt.Sprintf("%sstale-%s-%07d", judge.TaskKeyPrefix, owner, i))
			}
			require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+owner, batch...).Err())
		}
	}
	addStale(live, 1_000_000)
	addStale(dead, 200_000)
	work := monitorScripts(t, srv.Addr, rdb, pageSize)

	// The passes take a while here, and longer than the worker's ttl on a
	// loaded machine: the live worker goes on heartbeating, as pulpcore's
	// does, every few seconds until the passes are done.
	beating, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beating)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			if _, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_appstatus SET last_heartbeat = now() WHERE pulp_id = $1`, row); err != nil {
				t.Errorf("heartbeat: %v", err)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); <-beating }()
	r := f.reaper(func(c *reaper.Config) { c.BatchSize = 1000 })
	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, reaper.ResultSuspected, findingFor(rep, leak, live).Result)
	f.ageSuspects(reaper.DefaultConfig().Policy.ConfirmAfter + time.Second)
	rep = f.pass(r, reaper.ModeOnce)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, leak, live).Result, "the huge registry held the release back")

	w := work()
	t.Logf("%d script calls, %d SSCAN pages in them, at most %d pages and %d commands in one", w.Calls, w.Pages, w.MostPages, w.MostCommands)
	require.Positive(t, w.Calls)
	require.GreaterOrEqual(t, w.Pages, 1_200_000/pageSize/2, "the scripts walked the registries, about a page a thousand entries")
	require.LessOrEqual(t, w.MostPages, callPages+owners, "a script call walked a registry past its budget of pages")
	require.Empty(t, w.OverCount, "an SSCAN of more than a page")
	require.Empty(t, w.WholeSet, "a command read or combined a registry whole")

	require.ElementsMatch(t, []string{judge.TaskKeyPrefix + running, judge.ResourceKeyPrefix + "repo-run"}, f.Members(redislocks.OwnerLocksPrefix+live),
		"every stale entry is pruned, the live ones stay")
	require.Equal(t, live, f.Get(judge.TaskKeyPrefix+running))
	require.Equal(t, live, f.Get(judge.ResourceKeyPrefix+"repo-run"))
	require.Equal(t, "", f.Get(leak))
	require.Empty(t, f.Members(redislocks.OwnerLocksPrefix+dead))
	require.ElementsMatch(t, []string{live}, f.Members(redislocks.ActiveOwnersKey), "the dead owner left, the live one stays")
	state, _, _, _ := f.TaskRow(running)
	require.Equal(t, judge.StateRunning, state)
}

// longestCommand is the longest command the server's SLOWLOG holds.
func longestCommand(t *testing.T, rdb *redis.Client) redis.SlowLog {
	t.Helper()
	entries, err := rdb.SlowLogGet(context.Background(), -1).Result()
	require.NoError(t, err)
	var longest redis.SlowLog
	for _, e := range entries {
		if e.Duration > longest.Duration {
			longest = e
		}
	}
	return longest
}

// describeSlow renders a SLOWLOG entry, each argument cut short.
func describeSlow(e redis.SlowLog) string {
	args := make([]string, 0, 8)
	for i, a := range e.Args {
		if i == 8 {
			break
		}
		args = append(args, a[:min(len(a), 40)])
	}
	return fmt.Sprintf("%v %q", e.Duration, args)
}

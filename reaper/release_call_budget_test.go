package reaper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/stretchr/testify/require"
)

// TestReleaseCallsKeepToTheirWork: the release batches are cut by the work
// of one release call (redis.release_call_holdings), not by batch_size
// alone: a guarded owner's registry counts, ten entries as a holding. Six
// live owners each left the locks of a task that finished long ago, beside
// 20 running tasks whose locks fill their registries (42 entries, 5
// holdings' worth). With a budget of 8 holdings, the six unguarded task
// locks go in one call, and each owner's guarded resource lock in a call of
// its own (1 + 5 for the first owner, 12 with a second); everything stale is
// released, everything running stays.
func TestReleaseCallsKeepToTheirWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	calls := &passtest.ReleaseCalls{}
	f.Redis.Client.AddHook(calls)
	var leaked, running []string
	for o := range 6 {
		owner := fmt.Sprintf("%d@live-%d", 10+o, o)
		row := f.Worker(owner, time.Second)
		for n := range 20 {
			res := []string{fmt.Sprintf("repo-run-%d-%d", o, n)}
			id := f.Task(judge.StateRunning, row, res, -1)
			f.Acquire(owner, id, res, false)
			running = append(running, judge.TaskKeyPrefix+id)
		}
		res := []string{fmt.Sprintf("repo-done-%d", o)}
		id := f.Task(judge.StateCompleted, row, res, time.Hour)
		f.Acquire(owner, id, res, false)
		leaked = append(leaked, judge.TaskKeyPrefix+id, judge.ResourceKeyPrefix+res[0])
	}
	r := f.reaper(func(c *reaper.Config) {
		c.BatchSize = reaper.DefaultBatchSize
		c.ReleaseCallHoldings = 8
	})
	rep := f.pass(r, reaper.ModeOnce)
	require.Equal(t, len(leaked), rep.Summary.Released, "every stale lock is released")
	for _, k := range leaked {
		require.Equal(t, "", f.Get(k), k)
	}
	for _, k := range running {
		require.NotEqual(t, "", f.Get(k), "a running task's lock stays: %s", k)
	}
	require.Equal(t, []int{6, 1, 1, 1, 1, 1, 1}, calls.Holdings(), "the holdings of each release call")
}

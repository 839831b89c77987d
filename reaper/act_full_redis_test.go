package reaper_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestFullRedisStillReleases: Redis is full (maxmemory reached under
// noeviction), so it refuses every write that may take memory (OOM), the
// reaper's own records among them: the registries seen a guarded release
// compares with, the suspects, the mass-death guard's memory, the history.
// The releases, whose DEL and SREM free memory, go through all the same: a
// dead worker's task lock, exclusive lock and shared membership are
// released and its orphaned task requeued; the records refused are noted in
// the report and named for the metric, and the pass does not fail.
func TestFullRedisStillReleases(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := redisserver.Start(t, "--maxmemory-policy", "noeviction")
	ctx, rdb := f.Ctx, srv.Client
	const dead, live = "1@dead-full", "1@live-full"
	deadRow := f.Worker(dead, time.Hour)
	f.Worker(live, time.Second)
	repoKey, domainKey := judge.ResourceKeyPrefix+repo(), judge.ResourceKeyPrefix+"domain-full"
	task := f.Task(judge.StateWaiting, deadRow, []string{strings.TrimPrefix(repoKey, judge.ResourceKeyPrefix), "shared:domain-full"}, -1)
	taskKey := judge.TaskKeyPrefix + task
	require.NoError(t, rdb.Set(ctx, taskKey, dead, 0).Err())
	require.NoError(t, rdb.Set(ctx, repoKey, dead, 0).Err())
	require.NoError(t, rdb.SAdd(ctx, domainKey, dead).Err())
	require.NoError(t, rdb.SAdd(ctx, redislocks.OwnerLocksPrefix+dead, taskKey, repoKey, domainKey).Err())
	require.NoError(t, rdb.SAdd(ctx, redislocks.ActiveOwnersKey, dead).Err())
	// A live owner's membership no task reserves: a suspect to remember.
	suspectKey := judge.ResourceKeyPrefix + "domain-full-2"
	require.NoError(t, rdb.SAdd(ctx, suspectKey, live).Err())

	// Filled: a value of 4 MiB, with maxmemory at half of it, so that no
	// release frees enough to take Redis back under.
	require.NoError(t, rdb.Set(ctx, "filler", strings.Repeat("f", 4<<20), 0).Err())
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "2mb").Err())
	require.ErrorContains(t, rdb.Set(ctx, "one-more", "x", 0).Err(), "OOM", "Redis is full")

	r := f.reaperOn(rdb, f.DB.Pool, nil)
	rep, err := r.RunOnce(ctx, reaper.Options{Mode: reaper.ModeOnce, History: reaper.HistoryOnce})
	require.NoError(t, err)
	require.Empty(t, rep.Error)
	for _, k := range []string{taskKey, repoKey} {
		require.Zero(t, rdb.Exists(ctx, k).Val(), "released on a full Redis: %s", k)
	}
	require.False(t, rdb.SIsMember(ctx, domainKey, dead).Val(), "the dead worker's shared membership is released on a full Redis")
	state, appLock, _, _ := f.TaskRow(task)
	require.Equal(t, judge.StateWaiting, state)
	require.Nil(t, appLock, "the orphaned claim is cleared: the task is requeued")
	require.True(t, rdb.SIsMember(ctx, suspectKey, live).Val(), "the live owner's membership is only a suspect")

	require.Contains(t, rep.BookkeepingWriteFailures(), reaper.RecordRegistriesSeen)
	require.Contains(t, rep.BookkeepingWriteFailures(), reaper.RecordSuspects)
	require.True(t, rep.HistoryWriteFailed())
	notes := strings.Join(rep.Notes, "\n")
	require.Contains(t, notes, "Redis is full")
	require.Contains(t, notes, "free memory in Redis or raise maxmemory")
}

package reaper_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestWritableReplicaIsNeverWrittenTo: redis.url names a replica that takes
// writes (replica-read-only no: a Sentinel or DNS mix-up). A pass writes
// nothing, to the replica or to PostgreSQL, and says why and what to fix;
// an audit reports the guard. The primary keeps every lock.
func TestWritableReplicaIsNeverWrittenTo(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	primary := redisserver.Start(t)
	replica := redisserver.ReplicaOf(t, primary, "--replica-read-only", "no")
	const owner = "1@dead"
	dead := f.Worker(owner, time.Hour)
	task := f.Task(judge.StateRunning, dead, []string{"shared:domain-rep", "repo-rep"}, -1)
	keys := []string{judge.TaskKeyPrefix + task, judge.ResourceKeyPrefix + "repo-rep"}
	for _, k := range keys {
		require.NoError(t, primary.Client.Set(f.Ctx, k, owner, 0).Err())
	}
	require.NoError(t, primary.Client.SAdd(f.Ctx, judge.ResourceKeyPrefix+"domain-rep", owner).Err())
	require.Eventually(t, func() bool {
		n, err := replica.Client.Exists(f.Ctx, append(keys, judge.ResourceKeyPrefix+"domain-rep")...).Result()
		return err == nil && n == 3
	}, 10*time.Second, 20*time.Millisecond, "the replica has the locks")

	rdb := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	r := f.reaperOn(rdb, f.DB.Pool, nil)

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce, History: reaper.HistoryOnce})
	var np *redislocks.NotPrimaryError
	require.ErrorAs(t, err, &np)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	require.Contains(t, rep.Error, "replica of "+primary.Addr)
	require.Contains(t, rep.Error, "Point redis.url at the primary")
	var se *reaper.StepError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "checking that Redis is the primary in Redis", se.Activity())
	state, _, _, _ := f.TaskRow(task)
	require.Equal(t, judge.StateRunning, state, "no task is canceled")
	for _, c := range []*redis.Client{primary.Client, replica.Client} {
		for _, k := range keys {
			require.Equal(t, owner, c.Get(f.Ctx, k).Val(), k)
		}
		require.True(t, c.SIsMember(f.Ctx, judge.ResourceKeyPrefix+"domain-rep", owner).Val())
		lr, err := c.Keys(f.Ctx, "pulp:lock_reaper:*").Result()
		require.NoError(t, err)
		require.Empty(t, lr, "not even the reaper's own keys, the history of passes among them")
	}

	audit, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeAudit})
	require.NoError(t, err)
	require.Equal(t, exitcode.Guarded, exitcode.Of(audit))
	require.Equal(t, reaper.GuardRedisPrimary, audit.Guards[0].Name)
	require.Contains(t, audit.Guards[0].Reason, "a pass would stop before its first write")
}

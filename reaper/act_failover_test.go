package reaper_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/testing/faultproxy"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestFailoverUnderAPassRepublishesCancelSignals: Pulp's Redis is a
// primary, a replica and a Sentinel, and the reaper finds the primary
// through the Sentinel. During a pass the link from the primary to its
// replica breaks before the pass's first write (a network partition), the
// pass cancels a dead worker's running tasks and publishes their cancel
// signals to the primary alone, and the primary then dies: the Sentinel
// promotes the replica, which never got the signals. Before, the pass
// reported success and the signals were gone for good. Now the pass
// reports the guard redis-failover, the next pass publishes every missing
// signal again on the new primary, for the rest of its 24 hours, and the
// pass after it has nothing left to check.
func TestFailoverUnderAPassRepublishesCancelSignals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	primary := redisserver.Start(t)
	link, err := faultproxy.Start(primary.Addr)
	require.NoError(t, err)
	t.Cleanup(link.Close)
	replica := redisserver.ReplicaVia(t, link.Addr())
	sentinel := redisserver.StartSentinel(t, primary, "pulp", 500*time.Millisecond)
	require.Eventually(t, func() bool {
		rs, err := sentinel.Client.Replicas(f.Ctx, sentinel.Master).Result()
		return err == nil && len(rs) == 1 && rs[0]["port"] == replica.Client.Options().Addr[len("127.0.0.1:"):]
	}, 30*time.Second, 50*time.Millisecond, "the Sentinel knows the replica")

	dead := f.Worker("1@dead", time.Hour)
	var running []string
	for range 10 {
		running = append(running, f.Task(judge.StateRunning, dead, nil, -1))
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: sentinel.Master, SentinelAddrs: []string{sentinel.Addr},
		ContextTimeoutEnabled: true, DialTimeout: 2 * time.Second,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	r := f.reaperOn(rdb, f.DB.Pool, nil)

	failedOver := false
	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce, Phase: func(phase string, done, total int) {
		switch {
		case phase == reaper.PhaseReadingDatabase:
			// Whatever the pass writes from here on reaches the primary
			// alone.
			link.Refuse()
			link.Cut()
		case phase == reaper.PhaseUpdatingTasks && done == total && !failedOver:
			failedOver = true
			primary.Kill()
			sentinel.AwaitPrimary(t, replica)
		}
	}})
	require.NoError(t, err)
	require.True(t, failedOver, "the pass updated tasks")
	require.Equal(t, map[reaper.Result]int{reaper.ResultUpdated: len(running)}, rep.Summary.TasksByResult)
	require.Len(t, rep.Guards, 1, "the pass says the primary changed under it")
	require.Equal(t, reaper.GuardRedisFailover, rep.Guards[0].Name)
	require.Contains(t, rep.Guards[0].Reason, "Redis's primary changed during the pass")
	require.Equal(t, exitcode.Guarded, exitcode.Of(rep))
	for _, id := range running {
		state, _, _, _ := f.TaskRow(id)
		require.Equal(t, judge.StateCanceled, state, id)
		require.Zero(t, replica.Client.Exists(f.Ctx, redislocks.CancelSignalPrefix+id).Val(), "%s: the failover lost its signal", id)
	}

	rep, err = r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Empty(t, rep.Guards)
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
	require.NotNil(t, rep.SignalCheck, "the next pass checks the signals on the new primary")
	require.Equal(t, reaper.SignalCheck{Primary: rep.SignalCheck.Primary, Checked: len(running), Republished: len(running)}, *rep.SignalCheck)
	require.Contains(t, rep.Notes[len(rep.Notes)-1], "had no cancel signal, published again")
	for _, id := range running {
		key := redislocks.CancelSignalPrefix + id
		require.Equal(t, "cancel", replica.Client.Get(f.Ctx, key).Val(), id)
		ttl := replica.Client.TTL(f.Ctx, key).Val()
		require.Greater(t, ttl, 24*time.Hour-5*time.Minute, id)
		require.LessOrEqual(t, ttl, 24*time.Hour, "%s: never beyond the first signal's lifetime", id)
	}

	rep, err = r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Nil(t, rep.SignalCheck, "the new primary's signals are checked already")
	require.Equal(t, exitcode.OK, exitcode.Of(rep))
}

// TestCancelSignalCheckGoesOnOverPasses: on a primary whose signals were
// never checked, passes check the tasks a reaper finished within the
// signal's 24 hours, newest first, a bounded number per pass, going on
// where the last one stopped. A missing signal is published again for the
// rest of its lifetime; one Redis holds is left as it is; a task finished
// longer ago, or by someone else, gets none. Once all are checked, a pass
// checks nothing.
func TestCancelSignalCheckGoesOnOverPasses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dead := f.Worker("1@dead", time.Hour)
	finished := func(state string, ago time.Duration, reason string) string {
		id := f.Task(state, dead, nil, ago)
		_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET error = jsonb_build_object('reason', $2::text) WHERE pulp_id = $1`, id, reason)
		require.NoError(t, err)
		return id
	}
	byReaper := func(state string) string {
		return pulpdb.TaskReason(&judge.TaskJudgement{Verdict: judge.VerdictLost, Owner: "1@dead", StateAfter: state})
	}
	var missing []string // newest first
	for i := range 7 {
		state := judge.StateCanceled
		if i%3 == 1 {
			state = judge.StateFailed
		}
		missing = append(missing, finished(state, time.Duration(i+1)*time.Minute, byReaper(state)))
	}
	held := finished(judge.StateCanceled, 30*time.Second, byReaper(judge.StateCanceled))
	require.NoError(t, f.Redis.Client.Set(f.Ctx, redislocks.CancelSignalPrefix+held, "cancel", time.Hour).Err())
	old := finished(judge.StateCanceled, 25*time.Hour, byReaper(judge.StateCanceled))
	other := finished(judge.StateFailed, time.Minute, "Task exited prematurely.")

	r := f.reaper(nil)
	r.SetSignalCheckLimit(3)
	var republished, checked int
	for pass, want := range []reaper.SignalCheck{{Checked: 3, Republished: 2, More: true}, {Checked: 3, Republished: 3, More: true}, {Checked: 2, Republished: 2}} {
		rep := f.pass(r, reaper.ModeOnce)
		require.NotNil(t, rep.SignalCheck, "pass %d", pass)
		want.Primary = rep.SignalCheck.Primary
		require.Equal(t, want, *rep.SignalCheck, "pass %d", pass)
		republished += rep.SignalCheck.Republished
		checked += rep.SignalCheck.Checked
	}
	require.Equal(t, len(missing), republished)
	require.Equal(t, len(missing)+1, checked)
	require.Nil(t, f.pass(r, reaper.ModeOnce).SignalCheck, "every signal is checked")

	for i, id := range missing {
		require.Equal(t, "cancel", f.Get(redislocks.CancelSignalPrefix+id), id)
		left := 24*time.Hour - time.Duration(i+1)*time.Minute
		require.InDelta(t, left.Seconds(), f.Redis.Client.TTL(f.Ctx, redislocks.CancelSignalPrefix+id).Val().Seconds(), 60, id)
	}
	require.InDelta(t, time.Hour.Seconds(), f.Redis.Client.TTL(f.Ctx, redislocks.CancelSignalPrefix+held).Val().Seconds(), 60, "a signal Redis holds is left as it is")
	for _, id := range []string{old, other} {
		require.Zero(t, f.Redis.Client.Exists(f.Ctx, redislocks.CancelSignalPrefix+id).Val(), id)
	}
}

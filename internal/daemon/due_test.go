package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// passDue, called directly: a death by heartbeat since the last pass, or the
// last pass's next change come.
func TestPassDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	const grace = 30 * time.Second
	row := func(deathIn time.Duration) heartbeat.AppStatus {
		return heartbeat.AppStatus{ID: "r", Name: "1@w", AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: now.Add(deathIn - 30*time.Second - grace)}
	}
	lastPass := now.Add(-2 * time.Second)
	for name, tc := range map[string]struct {
		rows  []heartbeat.AppStatus
		clock verdictClock
		want  string
	}{
		"a row died after the last pass":          {[]heartbeat.AppStatus{row(-time.Second)}, verdictClock{since: lastPass}, StartedByHeartbeat},
		"a row died before the last pass":         {[]heartbeat.AppStatus{row(-time.Minute)}, verdictClock{since: lastPass}, ""},
		"a row dies in a second":                  {[]heartbeat.AppStatus{row(time.Second)}, verdictClock{since: lastPass}, ""},
		"the next change has come":                {nil, verdictClock{since: lastPass, nextChange: now.Add(-time.Millisecond)}, StartedByNextChange},
		"the next change is exactly now":          {nil, verdictClock{since: lastPass, nextChange: now}, StartedByNextChange},
		"the next change is later":                {nil, verdictClock{since: lastPass, nextChange: now.Add(time.Second)}, ""},
		"no pass yet: the first pass runs anyway": {[]heartbeat.AppStatus{row(-time.Second)}, verdictClock{}, ""},
	} {
		require.Equal(t, tc.want, passDue(pulpdb.Heartbeats{Now: now, Rows: tc.rows}, tc.clock, grace), name)
	}
}

// TestHeartbeatCrossingStartsAPass: against real Redis and PostgreSQL, a
// worker that stops heartbeating has its locks freed within seconds of its
// last heartbeat + ttl + grace, although the schedule's next pass is an hour
// away.
func TestHeartbeatCrossingStartsAPass(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	ctx := context.Background()
	r := f.reaper(t, nil)
	// A worker whose last heartbeat makes it dead (ttl 30 s + grace 30 s)
	// 3 s from now, holding a task lock in the owner registry.
	const owner = "1@crossing-worker"
	_, err := f.db.Pool.Exec(ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES (gen_random_uuid(), 'worker', $1, interval '30 seconds', now() - interval '57 seconds')`, owner)
	require.NoError(t, err)
	var deathAt time.Time
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT last_heartbeat + interval '60 seconds' FROM core_appstatus WHERE name = $1`, owner).Scan(&deathAt))
	taskID := sim.NewUUID()
	_, err = sim.Acquire(ctx, f.redis.Client, taskID, owner, nil, nil)
	require.NoError(t, err)

	_, b := start(t, ctx, r, Config{Schedule: "@every 1h", Heartbeats: r.Heartbeats, HeartbeatGrace: 30 * time.Second, HeartbeatPoll: 500 * time.Millisecond})
	first := b.waitPass(t)
	require.NoError(t, first.Err)
	require.EqualValues(t, 1, f.redis.Client.Exists(ctx, "task:"+taskID).Val(), "late, not dead: kept")
	require.False(t, first.Report.NextChange.IsZero(), "the pass names the row's death as its next change")

	res := b.waitPass(t)
	require.NoError(t, res.Err)
	require.Equal(t, StartedByHeartbeat, res.StartedBy)
	require.Zero(t, f.redis.Client.Exists(ctx, "task:"+taskID).Val(), "released")
	delay := res.Report.DBNow.Sub(deathAt)
	t.Logf("released %v after last heartbeat + ttl + grace", delay)
	require.GreaterOrEqual(t, delay, time.Duration(0))
	require.Less(t, delay, 3*time.Second)
	require.Len(t, res.Report.ReleaseDelays, 1, "the delay metric's observation, one per dead owner")
	require.InDelta(t, delay.Seconds(), res.Report.ReleaseDelays[0].Seconds(), 0.001)
	require.Equal(t, 2.0, b.scrape(t)["lock_reaper_release_delay_seconds_count"], "the incident's dead owner in the first pass, this one now")
}

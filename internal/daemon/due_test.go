package daemon

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// passDue, called directly: a death by heartbeat since the last pass, a row
// gone, a row gone stale since the last pass while the pods are only listed,
// or the last pass's next change come.
func TestPassDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	const grace = 30 * time.Second
	row := func(deathIn time.Duration) heartbeat.AppStatus {
		return heartbeat.AppStatus{ID: "r", Name: "1@w", AppType: "worker", TTL: 30 * time.Second, LastHeartbeat: now.Add(deathIn - 30*time.Second - grace)}
	}
	lastPass := now.Add(-2 * time.Second)
	for name, tc := range map[string]struct {
		rows   []heartbeat.AppStatus
		clock  verdictClock
		listed bool
		want   string
	}{
		"a row died after the last pass":          {[]heartbeat.AppStatus{row(-time.Second)}, verdictClock{since: lastPass}, true, StartedByHeartbeat},
		"a row died before the last pass":         {[]heartbeat.AppStatus{row(-time.Minute)}, verdictClock{since: lastPass}, true, ""},
		"a row dies in a second":                  {[]heartbeat.AppStatus{row(time.Second)}, verdictClock{since: lastPass}, true, ""},
		"the next change has come":                {nil, verdictClock{since: lastPass, nextChange: now.Add(-time.Millisecond)}, true, StartedByNextChange},
		"the next change is exactly now":          {nil, verdictClock{since: lastPass, nextChange: now}, true, StartedByNextChange},
		"the next change is later":                {nil, verdictClock{since: lastPass, nextChange: now.Add(time.Second)}, true, ""},
		"no pass yet: the first pass runs anyway": {[]heartbeat.AppStatus{row(-time.Second)}, verdictClock{}, true, ""},
		"a row of the last read is gone": {[]heartbeat.AppStatus{row(time.Minute)},
			verdictClock{since: lastPass, rows: map[string]struct{}{"r": {}, "gone": {}}}, true, StartedByRowGone},
		"the rows of the last read, and a new one": {[]heartbeat.AppStatus{row(time.Minute), {ID: "new", Name: "2@w", TTL: time.Minute, LastHeartbeat: now}},
			verdictClock{since: lastPass, rows: map[string]struct{}{"r": {}}}, true, ""},
		"a row gone before the first pass":            {nil, verdictClock{rows: map[string]struct{}{"r": {}}}, true, ""},
		"the live rows' deaths to come are no change": {[]heartbeat.AppStatus{row(time.Second)}, verdictClock{since: lastPass, rows: map[string]struct{}{"r": {}}}, true, ""},
		// Every case above with the pods listed: it changes none of them.
		// row(grace - d) went past its ttl d ago.
		"a row went stale after the last pass, the pods listed":          {[]heartbeat.AppStatus{row(grace - time.Second)}, verdictClock{since: lastPass}, true, StartedByStale},
		"a row went stale after the last pass, the pods watched or none": {[]heartbeat.AppStatus{row(grace - time.Second)}, verdictClock{since: lastPass}, false, ""},
		"a row went stale before the last pass: that pass listed":        {[]heartbeat.AppStatus{row(grace - 3*time.Second)}, verdictClock{since: lastPass}, true, ""},
		"a row not yet stale": {[]heartbeat.AppStatus{row(grace + time.Second)}, verdictClock{since: lastPass}, true, ""},
		"a row went stale, no pass yet: the first pass runs anyway": {[]heartbeat.AppStatus{row(grace - time.Second)}, verdictClock{}, true, ""},
		"a death and a row gone stale: the death":                   {[]heartbeat.AppStatus{row(-time.Second), row(grace - time.Second)}, verdictClock{since: lastPass}, true, StartedByHeartbeat},
	} {
		require.Equal(t, tc.want, passDue(pulpdb.Heartbeats{Now: now, Rows: tc.rows}, tc.clock, grace, tc.listed), name)
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
	require.True(t, first.Report.NextChange.IsZero(), "the row's death is no next change: the heartbeat reads see it")

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

// TestHeartbeatReadsGoOnThroughTheJitter: a row that dies by its heartbeat
// while a scheduled pass waits for its jitter starts a pass at once, not
// after the jitter: the jitter is part of the wait that the heartbeat reads
// cut short. The first pass gets no jitter here, every later one an hour;
// a pass every second by the schedule would otherwise be an hour away.
func TestHeartbeatReadsGoOnThroughTheJitter(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	var dies time.Time
	heartbeats := func(context.Context) (pulpdb.Heartbeats, error) {
		row := heartbeat.AppStatus{ID: "r", Name: "1@w", AppType: "worker", TTL: time.Second, LastHeartbeat: dies.Add(-time.Second - grace)}
		return pulpdb.Heartbeats{Now: time.Now(), Rows: []heartbeat.AppStatus{row}}, nil
	}
	var draws int
	firstNoJitter := func(d *Daemon) {
		d.jitterN = func(n time.Duration) time.Duration {
			if draws++; draws == 1 {
				return 0
			}
			return n - 1
		}
	}
	// The row dies 1.5 s after the start: after the first tick, inside its
	// jitter.
	dies = time.Now().Add(1500 * time.Millisecond)
	_, b := start(t, context.Background(), idleRunner, Config{Schedule: "@every 1s", Jitter: time.Hour,
		Heartbeats: heartbeats, HeartbeatGrace: grace, HeartbeatPoll: 50 * time.Millisecond}, firstNoJitter)
	require.Equal(t, StartedBySchedule, b.waitPass(t).StartedBy, "the first pass")
	res := b.waitPass(t)
	require.Equal(t, StartedByHeartbeat, res.StartedBy)
	require.True(t, res.Woken)
}

// TestDeletedRowStartsAPass: a worker row that the heartbeat reads found and
// then find no more starts a pass at once: its owner is gone, and its
// locks are free to release. The schedule's next pass is an hour away.
func TestDeletedRowStartsAPass(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	heartbeats := func(context.Context) (pulpdb.Heartbeats, error) {
		rows := []heartbeat.AppStatus{{ID: "stays", Name: "1@a", AppType: "worker", TTL: time.Minute, LastHeartbeat: time.Now()}}
		if reads.Add(1) <= 3 {
			rows = append(rows, heartbeat.AppStatus{ID: "goes", Name: "1@b", AppType: "worker", TTL: time.Minute, LastHeartbeat: time.Now()})
		}
		return pulpdb.Heartbeats{Now: time.Now(), Rows: rows}, nil
	}
	_, b := start(t, context.Background(), idleRunner, Config{Schedule: "@every 1h",
		Heartbeats: heartbeats, HeartbeatGrace: time.Second, HeartbeatPoll: 20 * time.Millisecond}, noJitter)
	require.Equal(t, StartedBySchedule, b.waitPass(t).StartedBy, "the first pass")
	res := b.waitPass(t)
	require.Equal(t, StartedByRowGone, res.StartedBy)
	require.True(t, res.Woken)
}

// nextPoll, called directly: the next read at the first moment a row read
// can go stale or die, or the next change comes, within [poll, grace].
func TestNextPoll(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	const poll, grace, ttl = 2 * time.Second, 30 * time.Second, 30 * time.Second
	// row's heartbeat is age old.
	row := func(id string, age time.Duration) heartbeat.AppStatus {
		return heartbeat.AppStatus{ID: id, Name: "1@" + id, AppType: "worker", TTL: ttl, LastHeartbeat: now.Add(-age)}
	}
	for name, tc := range map[string]struct {
		rows       []heartbeat.AppStatus
		nextChange time.Time
		want       time.Duration
	}{
		"a row goes stale in 10 s":                          {[]heartbeat.AppStatus{row("a", 21*time.Second), row("b", 5*time.Second)}, time.Time{}, 10 * time.Second},
		"a stale row dies in 10 s":                          {[]heartbeat.AppStatus{row("a", 50*time.Second)}, time.Time{}, 10 * time.Second},
		"a row goes stale in a second: no sooner than poll": {[]heartbeat.AppStatus{row("a", 30*time.Second)}, time.Time{}, poll},
		"the rows just beat: no later than grace":           {[]heartbeat.AppStatus{row("a", 0)}, time.Time{}, grace},
		"no row alive: grace":                               {[]heartbeat.AppStatus{row("a", time.Hour)}, time.Time{}, grace},
		"no row: grace":                                     {nil, time.Time{}, grace},
		"the next change first":                             {[]heartbeat.AppStatus{row("a", 40*time.Second)}, now.Add(5 * time.Second), 5 * time.Second},
		"the next change after the death":                   {[]heartbeat.AppStatus{row("a", 40*time.Second)}, now.Add(25 * time.Second), 20 * time.Second},
	} {
		got := nextPoll(pulpdb.Heartbeats{Now: now, Rows: tc.rows}, verdictClock{nextChange: tc.nextChange}, poll, grace)
		require.Equal(t, tc.want, got, name)
	}
	require.Equal(t, poll, nextPoll(pulpdb.Heartbeats{Now: now}, verdictClock{}, poll, 0), "no grace: every poll")
}

// TestPollsReadADyingRowStale: the reads of a worker that stops beating
// include one that finds it past its ttl and is a period and 2 s or more
// before its death, the earlier read its pass settles the death on
// without waiting (reaper.settleDeaths).
func TestPollsReadADyingRowStale(t *testing.T) {
	t.Parallel()
	const poll, grace, ttl = 2 * time.Second, 30 * time.Second, 30 * time.Second
	last := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	for start := time.Duration(0); start < ttl+grace; start += 700 * time.Millisecond {
		at, found := last.Add(start), false
		rows := []heartbeat.AppStatus{{ID: "a", Name: "1@a", AppType: "worker", TTL: ttl, LastHeartbeat: last}}
		for at.Before(last.Add(ttl + grace)) {
			if age := at.Sub(last); age > ttl && age <= ttl+grace-ttl/3-2*time.Second {
				found = true
			}
			at = at.Add(nextPoll(pulpdb.Heartbeats{Now: at, Rows: rows}, verdictClock{}, poll, grace))
		}
		if start <= ttl {
			require.True(t, found, "reads from %v after the last heartbeat", start)
		}
	}
}

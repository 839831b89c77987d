package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/heartbeat/kube"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/kubeapi"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// polledPasses runs the polls' decisions (pollHeartbeats, without its
// sleeps) over rows read at every moment from `from` to `until`, a pass
// having judged at from: each read after the wait next says, a pass
// whenever passDue says one is due, judging at that read's now, and the
// polls again a poll after it. It returns what started each pass.
func polledPasses(rows []heartbeat.AppStatus, from, until time.Time, listed bool, poll, grace time.Duration,
	next func(pulpdb.Heartbeats, verdictClock) time.Duration) []string {
	c := verdictClock{since: from, rows: rowIDs(rows)}
	var started []string
	for at := from.Add(poll); at.Before(until); {
		hb := pulpdb.Heartbeats{Now: at, Rows: rows}
		reason := passDue(hb, c, grace, listed)
		c.rows = rowIDs(hb.Rows)
		if reason != "" {
			started = append(started, reason)
			c.passed(hb.Now, time.Time{})
			at = at.Add(poll)
			continue
		}
		at = at.Add(next(hb, c))
	}
	return started
}

// A worker that stops beating starts one pass when its row goes past its
// ttl while the pods are only listed, whenever the last pass before it
// judged, and however often the polls read the row stale after that: with
// the polls' own timing (nextPoll) and with a read every poll. Then the
// pass at its death, as without a list. Two workers dying apart start one
// such pass each. With the pods watched or no Kubernetes, only the death's.
func TestRowGoneStaleStartsOnePassWhenPodsAreListed(t *testing.T) {
	t.Parallel()
	const poll, grace, ttl = 2 * time.Second, 30 * time.Second, 30 * time.Second
	last := time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	worker := func(id string, lastBeat time.Time) heartbeat.AppStatus {
		return heartbeat.AppStatus{ID: id, Name: "1@" + id, AppType: "worker", TTL: ttl, LastHeartbeat: lastBeat}
	}
	everyPoll := func(pulpdb.Heartbeats, verdictClock) time.Duration { return poll }
	sparse := func(hb pulpdb.Heartbeats, c verdictClock) time.Duration { return nextPoll(hb, c, poll, grace) }
	until := last.Add(ttl + grace + 2*grace)
	for _, next := range map[string]func(pulpdb.Heartbeats, verdictClock) time.Duration{"every poll": everyPoll, "nextPoll": sparse} {
		// The last pass judged from before the worker's last heartbeat to
		// just before its row goes stale.
		for start := -ttl / 3; start < ttl; start += 700 * time.Millisecond {
			rows := []heartbeat.AppStatus{worker("dying", last)}
			from := last.Add(start)
			require.Equal(t, []string{StartedByStale, StartedByHeartbeat}, polledPasses(rows, from, until, true, poll, grace, next),
				"listed, the last pass %v after the last heartbeat", start)
			require.Equal(t, []string{StartedByHeartbeat}, polledPasses(rows, from, until, false, poll, grace, next),
				"watched or none, the last pass %v after the last heartbeat", start)
		}
		// The last pass judged with the row already stale: it listed the
		// pods then, and no pass follows until the death.
		rows := []heartbeat.AppStatus{worker("dying", last)}
		require.Equal(t, []string{StartedByHeartbeat}, polledPasses(rows, last.Add(ttl+time.Second), until, true, poll, grace, next))

		// Two workers going stale 10 s apart: a pass each.
		rows = []heartbeat.AppStatus{worker("a", last), worker("b", last.Add(10*time.Second))}
		require.Equal(t, []string{StartedByStale, StartedByStale, StartedByHeartbeat, StartedByHeartbeat},
			polledPasses(rows, last, until, true, poll, grace, next))
	}
}

// staleRowDaemon runs a daemon whose fake heartbeat reads find one worker
// row going stale 2 s after the start and dying 2 s later, with podsListed
// as its Config.PodsListed, and returns what started its passes until the
// one at the death (the schedule's next pass is an hour away).
func staleRowDaemon(t *testing.T, podsListed func() bool) []string {
	t.Helper()
	const ttl, grace = 2 * time.Second, 2 * time.Second
	lastBeat := time.Now()
	heartbeats := func(context.Context) (pulpdb.Heartbeats, error) {
		row := heartbeat.AppStatus{ID: "r", Name: "1@dying", AppType: "worker", TTL: ttl, LastHeartbeat: lastBeat}
		return pulpdb.Heartbeats{Now: time.Now(), Rows: []heartbeat.AppStatus{row}}, nil
	}
	_, b := start(t, context.Background(), idleRunner, Config{Schedule: "@every 1h",
		Heartbeats: heartbeats, HeartbeatGrace: grace, HeartbeatPoll: 20 * time.Millisecond, PodsListed: podsListed}, noJitter)
	var started []string
	for {
		res := b.waitPass(t)
		started = append(started, res.StartedBy)
		if res.StartedBy != StartedBySchedule && res.StartedBy != StartedByStale {
			return started
		}
	}
}

// The daemon asks Config.PodsListed: a row gone stale starts a pass while
// it says the pods are listed, not while a watch keeps them, nor without
// Kubernetes (nil). The first pass judges before the row goes stale.
func TestRowGoneStaleStartsAPassOnlyWhenPodsAreListed(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		podsListed func() bool
		want       []string
	}{
		"listed":        {func() bool { return true }, []string{StartedBySchedule, StartedByStale, StartedByHeartbeat}},
		"watched":       {func() bool { return false }, []string{StartedBySchedule, StartedByHeartbeat}},
		"no kubernetes": {nil, []string{StartedBySchedule, StartedByHeartbeat}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, staleRowDaemon(t, tc.podsListed))
		})
	}
}

// TestListedPodGoneReleasesWhenTheRowGoesStale: against real Redis and
// PostgreSQL and the stand-in API server, with the pods listed by each pass
// (no watch), a worker whose pod is deleted has its locks released by the
// pass its row's going past its ttl starts, on pod-gone, long before its
// ttl + grace, although the schedule's next pass is an hour away.
func TestListedPodGoneReleasesWhenTheRowGoesStale(t *testing.T) {
	t.Parallel()
	f := newFleet(t)
	ctx := context.Background()
	api := kubeapi.New(t)
	const pod = "pulp-worker-stale-0"
	for _, name := range []string{"pulp-worker-incident-1", "pulp-worker-incident-2", "pulp-worker-incident-3", pod} {
		require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: name, Component: "worker", Node: "node-a", Started: time.Now().Add(-time.Hour)})))
	}
	src, err := kube.NewRESTSource(api.Config(), "pulp", kube.DefaultSelector, kube.DefaultContainer)
	require.NoError(t, err)
	cfg := passConfig()
	cfg.PodSource = src
	r, err := reaper.New(cfg, f.redis.Client, f.db.Pool, testLogger(t))
	require.NoError(t, err)

	// A worker whose row goes past its ttl (30 s) 4 s from now and crosses
	// ttl + grace (30 s) 34 s from now, holding a task lock.
	const owner = "1@" + pod
	_, err = f.db.Pool.Exec(ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES (gen_random_uuid(), 'worker', $1, interval '30 seconds', now() - interval '26 seconds')`, owner)
	require.NoError(t, err)
	var staleAt, deathAt time.Time
	require.NoError(t, f.db.Pool.QueryRow(ctx, `SELECT last_heartbeat + interval '30 seconds', last_heartbeat + interval '60 seconds'
		FROM core_appstatus WHERE name = $1`, owner).Scan(&staleAt, &deathAt))
	taskID := sim.NewUUID()
	_, err = sim.Acquire(ctx, f.redis.Client, taskID, owner, nil, nil)
	require.NoError(t, err)

	_, b := start(t, ctx, r, Config{Schedule: "@every 1h", Heartbeats: r.Heartbeats, HeartbeatGrace: 30 * time.Second,
		HeartbeatPoll: 500 * time.Millisecond, PodsListed: func() bool { return true }})
	first := b.waitPass(t)
	require.NoError(t, first.Err)
	require.NotNil(t, first.Report.Kubernetes)
	require.Equal(t, 4, first.Report.Kubernetes.Pods, "the pods listed, the dying worker's among them")
	require.EqualValues(t, 1, f.redis.Client.Exists(ctx, "task:"+taskID).Val(), "alive: kept")
	require.NoError(t, api.Delete("pulp", pod))

	res := b.waitPass(t)
	require.NoError(t, res.Err)
	require.Equal(t, StartedByStale, res.StartedBy)
	require.Equal(t, 1, res.Report.Kubernetes.OwnersByEvidence[heartbeat.PodGone])
	require.Zero(t, f.redis.Client.Exists(ctx, "task:"+taskID).Val(), "released on pod-gone")
	require.True(t, res.Report.DBNow.After(staleAt), "judged with the row past its ttl")
	require.True(t, res.Report.DBNow.Before(deathAt), "before ttl + grace")
	t.Logf("released %v after the row went past its ttl", res.Report.DBNow.Sub(staleAt))
}

// PodsListedBy, what run tells the daemon: no Kubernetes, nothing; a Source
// (the watch refused) is listed by every pass; a watch only while its cache
// is not read (before its first list here), not once it is.
func TestPodsListedBy(t *testing.T) {
	t.Parallel()
	require.Nil(t, PodsListedBy(nil))
	api := kubeapi.New(t)
	require.NoError(t, api.Create(kubeapi.NewPod(kubeapi.PodSpec{Namespace: "pulp", Name: "example-worker-6d9f-aaaaa", Component: "worker", Node: "node-a", Started: time.Now().Add(-time.Hour)})))
	src, err := kube.NewRESTSource(api.Config(), "pulp", kube.DefaultSelector, kube.DefaultContainer)
	require.NoError(t, err)
	require.True(t, PodsListedBy(src)())

	w, err := kube.NewWatcher(src, kube.WatchConfig{Logger: testLogger(t)})
	require.NoError(t, err)
	listed := PodsListedBy(w)
	require.True(t, listed(), "not yet synced: the passes list")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.Eventually(t, func() bool { return !listed() }, 10*time.Second, 10*time.Millisecond, "the watch's cache is read")
}

package reaper_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/metrics"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// TestPassRedisLoad: a pass reports its own Redis traffic, counted by the
// client's hook, and only its own: an audit run while other callers use
// the same client (the daemon's status page, its heartbeat polls between
// passes) counts exactly what an audit alone counts.
func TestPassRedisLoad(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("1@live", 2*time.Second)
	f.Worker("1@dead", time.Hour)
	for range 5 {
		r := repo()
		f.Acquire("1@live", f.Task("running", live, []string{r}, -1), []string{r}, false)
	}
	for range 4 {
		r := repo()
		f.Acquire("1@dead", f.Task("running", live, []string{r}, -1), []string{r}, true)
	}
	// Walked over by SCAN, never returned: the walk asks for [tp]* only.
	require.NoError(t, f.Redis.Client.Set(f.Ctx, "unrelated:key", "x", 0).Err())
	want, err := f.Redis.Client.Keys(f.Ctx, "[tp]*").Result()
	require.NoError(t, err)

	r := f.reaper(func(c *reaper.Config) { c.ScanCount = 5 })
	rep := f.pass(r, reaper.ModeAudit)
	alone := rep.RedisLoad
	require.EqualValues(t, len(want), alone.KeysScanned, "keys scanned are the lock-like keys of the database")
	require.GreaterOrEqual(t, alone.ScanCalls, int64(2), "a COUNT of 5 walks in several calls")
	require.Positive(t, alone.Commands)
	require.Positive(t, alone.RoundTrips)
	require.LessOrEqual(t, alone.RoundTrips, alone.ScanCalls+alone.Commands, "a pipeline is one round trip")
	require.Less(t, alone.RoundTrips, alone.ScanCalls+alone.Commands, "the reads are pipelined")
	require.Positive(t, alone.WaitSeconds)
	requireExported(t, rep)

	// Others' calls on the same client all through a pass: each SCANs the
	// whole database, alone and in a pipeline, so that one counted into the
	// pass would show in its keys scanned. The pass's own counts vary a
	// little from pass to pass (how the walk's pages meet the reads), so
	// they are not compared whole.
	ctx, stop := context.WithCancel(f.Ctx)
	var calls atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = f.Redis.Client.Scan(ctx, 0, "*", 1000).Err()
			_, _ = r.RecentPasses(ctx, time.Time{}, 10)
			_, _ = f.Redis.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Ping(ctx)
				p.Scan(ctx, 0, "*", 1000)
				return nil
			})
			calls.Add(1)
		}
	})
	for calls.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	before := calls.Load()
	crowded := f.pass(r, reaper.ModeAudit).RedisLoad
	during := calls.Load() - before
	stop()
	wg.Wait()
	require.Positive(t, during, "others called Redis during the pass")
	require.EqualValues(t, len(want), crowded.KeysScanned, "calls outside the pass are not counted")
	require.Less(t, crowded.Commands, 2*alone.Commands)

	// A second Reaper on the same client adds a hook of its own; a pass
	// is still counted once.
	r2 := f.reaper(func(c *reaper.Config) { c.ScanCount = 5 })
	again := f.pass(r2, reaper.ModeAudit).RedisLoad
	require.EqualValues(t, len(want), again.KeysScanned)
	require.Less(t, again.Commands, 2*alone.Commands)
}

// requireExported: the pass's Redis load is on the metrics page.
func requireExported(t *testing.T, rep *reaper.Report) {
	t.Helper()
	m := metrics.New("test")
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.Register(reg))
	m.Observe(rep)
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, fam := range families {
		for _, s := range fam.GetMetric() {
			if c := s.GetCounter(); c != nil {
				got[fam.GetName()] += c.GetValue()
			}
		}
	}
	l := rep.RedisLoad
	require.EqualValues(t, l.ScanCalls+l.Commands, got[metrics.NameRedisCommands])
	require.EqualValues(t, l.RoundTrips, got[metrics.NameRedisRoundTrips])
	require.EqualValues(t, l.KeysScanned, got[metrics.NameRedisKeysScanned])
	require.InDelta(t, l.WaitSeconds, got[metrics.NameRedisWait], 1e-9)
}

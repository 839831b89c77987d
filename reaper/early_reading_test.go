package reaper_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestWalkLongerThanThePeriodNeedsNoWait: a pass reads the heartbeats as it
// starts, beside the walk of Redis; when the walk outlasts the heartbeat
// period, that reading is a period before the snapshot and settles a dead
// row's death without a wait and a read after the snapshot. A walk shorter
// than the period still waits, as before.
func TestWalkLongerThanThePeriodNeedsNoWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	live := f.Worker("1@live", 2*time.Second)
	f.Worker("1@dead", time.Hour)
	for range 3 {
		r := repo()
		f.Acquire("1@dead", f.Task("running", live, []string{r}, -1), []string{r}, true)
	}
	read := func(rep *reaper.Report) []string {
		var names []string
		for _, p := range rep.PhaseTimes {
			names = append(names, p.Phase)
		}
		return names
	}

	quick := f.pass(f.reaper(nil), reaper.ModeAudit)
	require.Contains(t, read(quick), reaper.TimeSecondRead, "a walk of a few keys is shorter than the period: the pass reads again")
	require.Equal(t, 1, quick.HeartbeatRecheck.Settled)

	// Each call to Redis takes at least two delays, and a SCAN COUNT of 1
	// walks the keys one call each: the walk outlasts the period.
	proxy := f.redisProxy()
	proxy.SetDelay(testenv.HeartbeatRecheck / 4)
	slow := redis.NewClient(&redis.Options{Addr: proxy.Addr(), DB: f.Redis.Client.Options().DB})
	t.Cleanup(func() { _ = slow.Close() })
	cfg := f.config(func(c *reaper.Config) { c.ScanCount = 1 })
	r, err := reaper.New(cfg, slow, f.DB.Pool, passtest.Logger())
	require.NoError(t, err)
	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.False(t, slices.Contains(read(rep), reaper.TimeSecondRead), "settled on the early reading: %v", rep.PhaseTimes)
	require.Equal(t, &reaper.HeartbeatRecheck{Rows: 1, Settled: 1}, rep.HeartbeatRecheck)
	require.Equal(t, 6, rep.Summary.Released, "the dead owner's task and resource locks")
}

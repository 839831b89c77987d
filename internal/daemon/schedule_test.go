package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC)

func mustSchedule(t *testing.T, spec string) cron.Schedule {
	t.Helper()
	s, err := cron.ParseStandard(spec)
	require.NoError(t, err)
	return s
}

func TestPlanNextAfterQuickPass(t *testing.T) {
	t.Parallel()
	p := planNext(mustSchedule(t, "@every 1m"), t0, t0.Add(3*time.Second), 0, time.Hour)
	require.Equal(t, NextPass{At: t0.Add(time.Minute)}, p)
}

func TestPlanNextCountsOverlappedTicks(t *testing.T) {
	t.Parallel()
	// A pass of 2m30s on a one-minute schedule misses the ticks at 1m and 2m.
	p := planNext(mustSchedule(t, "@every 1m"), t0, t0.Add(150*time.Second), 0, time.Hour)
	require.Equal(t, NextPass{At: t0.Add(3 * time.Minute), Overlapped: 2}, p)

	// Cron expressions work the same way: every five minutes, on the dot.
	p = planNext(mustSchedule(t, "*/5 * * * *"), t0, t0.Add(11*time.Minute), 0, time.Hour)
	require.Equal(t, NextPass{At: t0.Add(15 * time.Minute), Overlapped: 2}, p)
}

func TestPlanNextBacksOffExponentially(t *testing.T) {
	t.Parallel()
	sched := mustSchedule(t, "@every 1m")
	end := t0.Add(time.Second)
	for _, tc := range []struct {
		failures  int
		wantAt    time.Duration
		backedOff int
	}{
		{failures: 1, wantAt: 1 * time.Minute, backedOff: 0},
		{failures: 2, wantAt: 2 * time.Minute, backedOff: 1},
		{failures: 3, wantAt: 4 * time.Minute, backedOff: 3},
		{failures: 4, wantAt: 5 * time.Minute, backedOff: 4}, // capped at 5m
		{failures: 40, wantAt: 5 * time.Minute, backedOff: 4},
	} {
		p := planNext(sched, t0, end, tc.failures, 5*time.Minute)
		require.Equal(t, t0.Add(tc.wantAt), p.At, "failures %d", tc.failures)
		require.Equal(t, tc.backedOff, p.BackedOff, "failures %d", tc.failures)
	}
}

func TestPlanNextNeverWaitsPastTheCapForASlowSchedule(t *testing.T) {
	t.Parallel()
	// The next tick itself is past the cap: it is kept, no tick is skipped.
	p := planNext(mustSchedule(t, "@hourly"), t0, t0.Add(time.Second), 5, 5*time.Minute)
	require.Equal(t, NextPass{At: t0.Add(time.Hour)}, p)
}

func TestPlanNextBoundsTheWalk(t *testing.T) {
	t.Parallel()
	end := t0.Add(1000 * time.Hour)
	p := planNext(mustSchedule(t, "@every 1s"), t0, end, 0, time.Hour)
	require.Equal(t, maxCountedTicks, p.Overlapped)
	require.Equal(t, end.Add(time.Second), p.At)
}

func TestConfigParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Schedule: "every minute"}, "schedule"},
		{Config{Schedule: "0 0 30 2 *"}, "never fires"},
		{Config{Jitter: -time.Second}, "jitter"},
		{Config{FullScanInterval: -time.Second}, "full_scan_interval"},
	} {
		_, err := New(runnerFunc(nil), tc.cfg)
		require.ErrorContains(t, err, tc.want, "%+v", tc.cfg)
	}
	d, err := New(runnerFunc(nil), Config{})
	require.NoError(t, err)
	require.Equal(t, ScheduleDefault, d.cfg.Schedule)
	require.Equal(t, ListenDefault, d.cfg.Listen)
	require.Equal(t, FullScanIntervalDefault, d.cfg.FullScanInterval)
	require.Zero(t, d.cfg.Jitter, "zero jitter means none")
}

func TestSleepsEndOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, sleepUntil(ctx, time.Time{}), "a schedule that never fires waits for the cancel")
	require.False(t, sleepUntil(ctx, time.Now().Add(time.Hour)))
}

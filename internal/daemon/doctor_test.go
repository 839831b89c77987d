package daemon

import (
	"context"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestDoctorAtStart: the daemon runs the doctor once, after its first pass
// (the second waits for it), logs each
// warn and fail once, exposes every check's status, and stays ready.
func TestDoctorAtStart(t *testing.T) {
	t.Parallel()
	var logs testenv.SyncBuffer
	doctorRuns := make(chan struct{}, 10)
	runner := runnerFunc(func(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
		return &reaper.Report{Mode: reaper.ModeOnce, StartedAt: time.Now(), DBNow: time.Now(), Scanned: reaper.Scanned{FullScan: !opts.RegistryOnly}}, nil
	})
	cfg := Config{
		Schedule: "@every 1s", Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Doctor: func(context.Context, *reaper.Inspection) doctor.Report {
			doctorRuns <- struct{}{}
			return doctor.Report{Status: doctor.Fail, Counts: map[doctor.Status]int{doctor.OK: 1, doctor.Warn: 1, doctor.Fail: 1}, Checks: []doctor.Result{
				{Check: doctor.CheckRedisReachable, Status: doctor.OK, Evidence: "reachable"},
				{Check: doctor.CheckRedisPersistence, Status: doctor.Warn, Evidence: "AOF off", Fix: "turn on appendonly"},
				{Check: doctor.CheckRedisEviction, Status: doctor.Fail, Evidence: "allkeys-lru", Fix: "noeviction"},
			}}
		},
	}
	_, b := start(t, context.Background(), runner, cfg)
	b.waitPass(t)
	b.waitPass(t)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "doctor finished") }, time.Minute, 10*time.Millisecond)

	m := b.scrape(t)
	require.Equal(t, 0.0, m[`lock_reaper_doctor_check_status{check="redis-reachable"}`])
	require.Equal(t, 1.0, m[`lock_reaper_doctor_check_status{check="redis-persistence"}`])
	require.Equal(t, 2.0, m[`lock_reaper_doctor_check_status{check="redis-eviction"}`])
	code, body := b.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, "doctor findings are not outages: %s", body)

	out := logs.String()
	require.Equal(t, 1, strings.Count(out, `"check":"redis-persistence"`), out)
	require.Equal(t, 1, strings.Count(out, `"check":"redis-eviction"`), out)
	require.Contains(t, out, `"level":"ERROR","msg":"doctor check","check":"redis-eviction"`)
	require.Contains(t, out, `"level":"WARN","msg":"doctor check","check":"redis-persistence"`)
	require.NotContains(t, out, `"check":"redis-reachable"`)
	require.Len(t, doctorRuns, 1, "once, at start")
}

// TestDoctorAfterTheFirstPass: the doctor starts once the first pass is
// over, never beside it, and the second pass waits for it, so that the
// daemon never holds the doctor's reading and a pass's at once.
func TestDoctorAfterTheFirstPass(t *testing.T) {
	t.Parallel()
	var passes atomic.Int32
	runner := runnerFunc(func(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
		passes.Add(1)
		return &reaper.Report{Mode: reaper.ModeOnce, StartedAt: time.Now(), DBNow: time.Now(), Scanned: reaper.Scanned{FullScan: !opts.RegistryOnly}}, nil
	})
	doctorStarted, release := make(chan int32, 1), make(chan struct{})
	cfg := Config{
		Schedule: "@every 1s",
		Doctor: func(_ context.Context, in *reaper.Inspection) doctor.Report {
			require.Nil(t, in, "no status page: no inspection kept")
			doctorStarted <- passes.Load()
			<-release
			return doctor.Report{Counts: map[doctor.Status]int{}}
		},
	}
	_, b := start(t, context.Background(), runner, cfg)
	b.waitPass(t)
	select {
	case n := <-doctorStarted:
		require.Equal(t, int32(1), n, "the doctor starts after the first pass")
	case <-time.After(time.Minute):
		t.Fatal("the doctor did not start after the first pass")
	}
	time.Sleep(2500 * time.Millisecond) // two ticks
	require.Equal(t, int32(1), passes.Load(), "the second pass waits for the doctor")
	close(release)
	b.waitPass(t)
}

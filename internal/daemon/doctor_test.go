package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/testtool"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestDoctorAtStart: the daemon runs the doctor once at start, logs each
// warn and fail once, exposes every check's status, and stays ready.
func TestDoctorAtStart(t *testing.T) {
	t.Parallel()
	var logs testtool.SyncBuffer
	doctorRuns := make(chan struct{}, 10)
	runner := runnerFunc(func(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
		return &reaper.Report{Mode: reaper.ModeOnce, StartedAt: time.Now(), DBNow: time.Now(), Scanned: reaper.Scanned{FullScan: !opts.RegistryOnly}}, nil
	})
	cfg := Config{
		Schedule: "@every 1s", Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Doctor: func(context.Context) doctor.Report {
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

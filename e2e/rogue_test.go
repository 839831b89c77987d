package e2e

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// runnerFunc adapts a function to daemon.Runner.
type runnerFunc func(ctx context.Context, opts reaper.Options) (*reaper.Report, error)

func (f runnerFunc) RunOnce(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
	return f(ctx, opts)
}

// The checks must catch the mistake they exist for. A rogue pass that
// deletes the task lock a live worker is running under, behind the release
// script's back, and reports it released, trips all three: the worker's own
// check, the cross-check of the pass against the fleet's work, and the
// accounting of the wire against the reports.
func TestChecksCatchARogueRelease(t *testing.T) {
	t.Parallel()
	rd, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	r := &run{t: t, seed: testSeed(t), ctx: t.Context(), wire: newWireLog(), started: time.Now()}
	r.rdb, r.pool = newRedisClient(t, rd.URL, 16, nil), newPool(t, db.URL, 10)
	f, err := sim.New(r.rdb, r.pool, sim.Config{
		Workers: 3, WorkerTTL: workerTTL, APITTL: apiTTL, HeartbeatGrace: heartbeatGrace,
		// Long tasks: the victim is still at work when the pass ends.
		MinTaskDuration: 5 * time.Second, MaxTaskDuration: 5 * time.Second,
		Seed: r.seed, Logger: testLogger(t, slog.LevelError+1), // the violation is expected
	})
	require.NoError(t, err)
	require.NoError(t, f.Start(r.ctx))
	t.Cleanup(f.Stop)
	r.fleet = f
	_, err = f.Submit(r.ctx, 1)
	require.NoError(t, err)

	var victim sim.ActiveHolding
	require.Eventually(t, func() bool {
		for _, h := range f.ActiveHoldings() {
			if h.Kind == sim.KindTask {
				victim = h
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no worker took the task")

	rp, err := reaper.New(reaperConfig(), newRedisClient(t, rd.URL, 4, r.wire), newPool(t, db.URL, 4), nil)
	require.NoError(t, err)
	r.rec = newPassRecorder(f, runnerFunc(func(ctx context.Context, opts reaper.Options) (*reaper.Report, error) {
		rep, err := rp.RunOnce(ctx, opts)
		require.NoError(t, r.rdb.Del(ctx, victim.Key).Err())
		rep.Findings = append(rep.Findings, reaper.Finding{Judgement: &judge.Judgement{Holding: judge.Holding{Key: victim.Key, Kind: judge.KindTask, Owner: victim.Owner}, Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease}, Result: reaper.ResultReleased})
		rep.Summary.Released++
		return rep, err
	}))
	_, err = r.rec.RunOnce(r.ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(f.Violations()) > 0 }, 10*time.Second, 10*time.Millisecond,
		"the worker never noticed its lock was gone")

	rec := r.rec.snapshot()
	require.Len(t, rec.unsafe, 1)
	require.Contains(t, rec.unsafe[0], victim.Key)
	safety := strings.Join(r.safetyProblems(rec), "\n")
	require.Contains(t, safety, "fleet violation: "+victim.Owner+" lost "+victim.Key)
	require.Contains(t, safety, "unsafe release: ")
	holdings, err := r.holdingAccountingProblems(rec)
	require.NoError(t, err)
	require.Equal(t, []string{victim.Key + " held by " + victim.Owner + ": released 0 times on the wire, 1 times in the reports",
		"the reports' summaries count 1 released holdings, the wire 0"}, holdings)
}

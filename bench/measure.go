package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Measurement is one phase's figures. Wall time is the median of the runs;
// the counts are those of the median run (they do not vary between runs of a
// read-only phase); the heap figures are the largest of the runs.
type Measurement struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Runs        int     `json:"runs"`
	WallMS      float64 `json:"wall_ms"`
	// WallMSRuns lists every run's wall time, for the spread.
	WallMSRuns      []float64 `json:"wall_ms_runs"`
	RedisRoundTrips int64     `json:"redis_round_trips"`
	RedisCommands   int64     `json:"redis_commands"`
	// RedisCPUMS is the CPU time the Redis server used during the run
	// (median run), whoever the client: on a shared server, an upper bound.
	RedisCPUMS float64 `json:"redis_cpu_ms"`
	// RedisServerMS is the time Redis spent executing commands during the
	// run (median run), from its INFO commandstats: like RedisCPUMS it
	// counts every client of a shared server, but not Redis's own work
	// between commands (the event loop, the network, expiry).
	RedisServerMS float64 `json:"redis_server_ms"`
	// CPUMS is the CPU time this process used during the run (median run),
	// the heap sampler's included.
	CPUMS     float64 `json:"cpu_ms"`
	DBQueries int64   `json:"db_queries"`
	// KeysScanned is what the SCAN returned (baseline) or the lock keys the
	// pass read (reaper).
	KeysScanned int `json:"keys_scanned"`
	// Holdings counts the holdings the pass judged.
	Holdings int `json:"holdings"`
	// PeakHeapInuseBytes is the peak of the runtime's HeapInuse above what it
	// was just before the phase; PeakHeapLiveBytes the peak of the live heap
	// the collector marked.
	PeakHeapInuseBytes  uint64  `json:"peak_heap_inuse_bytes"`
	PeakHeapLiveBytes   uint64  `json:"peak_heap_live_bytes"`
	HeapInusePerHolding float64 `json:"heap_inuse_bytes_per_holding,omitempty"`
	HeapLivePerHolding  float64 `json:"heap_live_bytes_per_holding,omitempty"`
	// RatioToBaseline is the median of RatioRuns, each run's wall time over
	// that of the baseline of the same round.
	RatioToBaseline float64   `json:"ratio_to_baseline,omitempty"`
	RatioRuns       []float64 `json:"ratio_runs,omitempty"`
	Released        int       `json:"released,omitempty"`
	TasksUpdated    int       `json:"tasks_updated,omitempty"`
	ReleasePhaseMS  float64   `json:"release_phase_ms,omitempty"`
	// ReleaseCalls counts the release script's calls (batches), ReleaseCallsMS
	// sums their times (the rest of the phase is the reaper's between them)
	// and SlowestReleaseMS is the longest.
	ReleaseCalls         int     `json:"release_calls,omitempty"`
	ReleaseCallsMS       float64 `json:"release_calls_ms,omitempty"`
	SlowestReleaseMS     float64 `json:"slowest_release_ms,omitempty"`
	ReleasedPerSecond    float64 `json:"released_per_second,omitempty"`
	ReleasedPerPassSec   float64 `json:"released_per_pass_second,omitempty"`
	Findings             int     `json:"findings"`
	ExitCode             int     `json:"exit_code"`
	UnrelatedKeysInRedis int     `json:"unrelated_keys_in_redis"`
}

// phaseRun is one timed execution of a phase.
type phaseRun struct {
	wall  time.Duration
	redis redisCounts
	dbq   int64
	inuse uint64
	live  uint64
	keys  int
	hold  int
	// redisCPU is the Redis server's CPU time during the run, selfCPU this
	// process's.
	redisCPU, selfCPU time.Duration
	// redisServer is the time Redis spent in commands during the run.
	redisServer time.Duration
	report      *reaper.Report
}

// harness runs phases against the counted clients.
type harness struct {
	rdb *redis.Client
	// admin asks Redis for its CPU time, outside the counted client.
	admin  *redis.Client
	pool   *pgxpool.Pool
	rc     *redisCounter
	qc     *queryCounter
	cfg    reaper.Config
	reaper *reaper.Reaper
	// fleet says what a correct pass finds and does.
	fleet *sim.FleetManifest
	// legacyLocks says some locks have no registry entry.
	legacyLocks bool
	// reaped says the real pass ran: nothing is left to find.
	reaped bool
}

func newHarness(rdb, admin *redis.Client, pool *pgxpool.Pool, rc *redisCounter, qc *queryCounter, cfg reaper.Config) (*harness, error) {
	// Logs are formatted as in production (one JSON line per released
	// holding) and thrown away, so their cost is measured but not the disk's.
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r, err := reaper.New(cfg, rdb, pool, logger)
	if err != nil {
		return nil, fmt.Errorf("new reaper: %w", err)
	}
	return &harness{rdb: rdb, admin: admin, pool: pool, rc: rc, qc: qc, cfg: cfg, reaper: r}, nil
}

// timed runs fn once with the counters and the heap sampler around it.
func (h *harness) timed(fn func() (phaseRun, error)) (phaseRun, error) {
	cpu, self, server := redisCPU(h.admin), processCPU(), redisServerTime(h.admin)
	h.rc.take()
	h.qc.queries.Swap(0)
	hs := startHeapSampler()
	start := time.Now()
	r, err := fn()
	r.wall = time.Since(start)
	r.inuse, r.live = hs.finish()
	r.redis = h.rc.take()
	r.dbq = h.qc.queries.Swap(0)
	r.redisCPU, r.selfCPU = redisCPU(h.admin)-cpu, processCPU()-self
	r.redisServer = redisServerTime(h.admin) - server
	return r, err
}

// processCPU is the CPU time this process has used, user and system: what a
// phase costs the reaper's host, whatever else the machine runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the CPU time the Redis server has used, user and system; it
// counts every client of a shared server.
func redisCPU(admin *redis.Client) time.Duration {
	info, err := admin.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// redisServerTime is the time the Redis server has spent executing
// commands, the sum of INFO commandstats' usec over every command: the
// server's own measure of the load its clients put on it.
func redisServerTime(admin *redis.Client) time.Duration {
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0
	}
	var usec int64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(k, "cmdstat_") {
			continue
		}
		for field := range strings.SplitSeq(v, ",") {
			if n, ok := strings.CutPrefix(field, "usec="); ok {
				u, _ := strconv.ParseInt(n, 10, 64)
				usec += u
			}
		}
	}
	return time.Duration(usec) * time.Microsecond
}

func (h *harness) baseline(ctx context.Context) (phaseRun, error) {
	return h.timed(func() (phaseRun, error) {
		w, err := baselineWalk(ctx, h.rdb, h.cfg.ScanCount, h.cfg.BatchSize)
		return phaseRun{keys: w.keys, hold: w.lockKeys}, err
	})
}

func (h *harness) pass(ctx context.Context, opts reaper.Options) (phaseRun, error) {
	// The pass settles the fleet's deaths on a read of the heartbeats made
	// before it, untimed, as run's passes do on its polls: what is timed is
	// the pass's work, with no second read nor its wait (BENCHMARKS.md).
	if _, err := h.reaper.Heartbeats(ctx); err != nil {
		return phaseRun{}, fmt.Errorf("read heartbeats before the %s pass: %w", opts.Mode, err)
	}
	time.Sleep(benchRecheck)
	return h.timed(func() (phaseRun, error) {
		rep, err := h.reaper.RunOnce(ctx, opts)
		if err != nil {
			return phaseRun{report: rep}, fmt.Errorf("%s pass: %w", opts.Mode, err)
		}
		return phaseRun{report: rep, keys: rep.Scanned.Keys, hold: rep.Scanned.TaskLocks + rep.Scanned.ResourceHoldings}, nil
	})
}

// phase is one thing the benchmark times.
type phase struct {
	name, desc string
	run        func() (phaseRun, error)
}

// rounds runs every phase once per round, n rounds: a change of load on a
// shared machine then hits all phases of a round alike, and each phase is
// compared with the first (the baseline) of its own round.
func rounds(n int, phases []phase, logf func(string, ...any)) ([]Measurement, error) {
	runs := make([][]phaseRun, len(phases))
	ratios := make([][]float64, len(phases))
	for round := range n {
		for i, ph := range phases {
			r, err := ph.run()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ph.name, err)
			}
			runs[i] = append(runs[i], r)
			if i > 0 {
				ratios[i] = append(ratios[i], r.wall.Seconds()/runs[0][round].wall.Seconds())
			}
			logf("round %d/%d %-22s %8.1f ms", round+1, n, ph.name, ms(r.wall))
		}
	}
	out := make([]Measurement, len(phases))
	for i, ph := range phases {
		out[i] = summarise(ph.name, ph.desc, runs[i])
		if i > 0 {
			out[i].RatioRuns = ratios[i]
			out[i].RatioToBaseline = round2(median(ratios[i]))
		}
	}
	return out, nil
}

// repeat runs one phase n times under the profiler, for a profile of it
// alone; the runs are not measured.
func repeat(n int, ph phase, profile func(name string) func()) error {
	stop := profile(ph.name)
	defer stop()
	for range n {
		if _, err := ph.run(); err != nil {
			return fmt.Errorf("%s: %w", ph.name, err)
		}
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func summarise(name, desc string, runs []phaseRun) Measurement {
	byWall := slices.Clone(runs)
	slices.SortFunc(byWall, func(a, b phaseRun) int { return int(a.wall - b.wall) })
	med := byWall[len(byWall)/2]
	m := Measurement{
		Name: name, Description: desc, Runs: len(runs), WallMS: ms(med.wall),
		RedisRoundTrips: med.redis.roundTrips, RedisCommands: med.redis.commands, RedisCPUMS: ms(med.redisCPU), RedisServerMS: ms(med.redisServer), CPUMS: ms(med.selfCPU), DBQueries: med.dbq,
		KeysScanned: med.keys, Holdings: med.hold,
	}
	for _, r := range runs {
		m.WallMSRuns = append(m.WallMSRuns, ms(r.wall))
		m.PeakHeapInuseBytes = max(m.PeakHeapInuseBytes, r.inuse)
		m.PeakHeapLiveBytes = max(m.PeakHeapLiveBytes, r.live)
	}
	if med.hold > 0 {
		m.HeapInusePerHolding = float64(m.PeakHeapInuseBytes) / float64(med.hold)
		m.HeapLivePerHolding = float64(m.PeakHeapLiveBytes) / float64(med.hold)
	}
	if rep := med.report; rep != nil {
		m.Findings = len(rep.Findings)
		m.Released = rep.Summary.Released
		m.TasksUpdated = rep.Summary.TasksUpdated
		m.ExitCode = exitcode.Of(rep)
		if m.Released > 0 {
			m.ReleasePhaseMS = ms(med.redis.scriptSpan)
			m.ReleaseCalls, m.ReleaseCallsMS, m.SlowestReleaseMS = med.redis.scriptCalls, ms(med.redis.scriptBusy), ms(med.redis.scriptSlowest)
			if med.redis.scriptSpan > 0 {
				m.ReleasedPerSecond = math.Round(float64(m.Released) / med.redis.scriptSpan.Seconds())
			}
			m.ReleasedPerPassSec = math.Round(float64(m.Released) / med.wall.Seconds())
		}
	}
	return m
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/10) / 100 }

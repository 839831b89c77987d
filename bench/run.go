package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// Phase names, as the table, the JSON and -profile use them.
const (
	phaseBaseline       = "baseline"
	phaseAudit          = "audit"
	phaseRegistry       = "registry-only"
	phaseOnce           = "once"
	phaseRegistryReaped = "registry-only-reaped"
	phaseBaselineScaled = "baseline-scaled"
	phaseRegistryScaled = "registry-only-scaled"
)

// Results is everything one benchmark run measured.
type Results struct {
	Machine      Machine       `json:"machine"`
	Fleet        FleetFigures  `json:"fleet"`
	Sizes        TypeSizes     `json:"type_sizes"`
	Measurements []Measurement `json:"measurements"`
	Targets      []Target      `json:"targets"`
}

// FleetFigures describes the fleet that was measured.
type FleetFigures struct {
	UnrelatedKeys    int     `json:"unrelated_keys"`
	ScaledUnrelated  int     `json:"scaled_unrelated_keys"`
	TaskLocks        int     `json:"task_locks"`
	ExclusivePerTask int     `json:"exclusive_per_task"`
	Domains          int     `json:"domains"`
	Owners           int     `json:"owners"`
	DeadOwners       int     `json:"dead_owners"`
	FinishedFraction float64 `json:"finished_fraction"`
	StaleHoldings    int     `json:"stale_holdings"`
	HealthyHoldings  int     `json:"healthy_holdings"`
	LostTasks        int     `json:"lost_tasks"`
	QueuedTasks      int     `json:"queued_tasks,omitempty"`
	KeysInRedis      int64   `json:"keys_in_redis"`
	BuildSeconds     float64 `json:"build_seconds"`
	ScanCount        int     `json:"scan_count"`
	BatchSize        int     `json:"batch_size"`
}

// run measures and writes the table to stdout and, when asked, the JSON.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", args...) }
	switch o.scenario {
	case scenarioDeadOwner:
		return runDeadOwner(ctx, o, stdout, logf)
	case scenarioUnjam:
		return runUnjam(ctx, o, stdout, logf)
	case scenarioStatusPage:
		return runStatusPage(ctx, o, stdout, logf)
	case scenarioScale:
		return runScale(ctx, o, stdout, logf)
	case scenarioIdle:
		return runIdle(ctx, o, stdout, logf)
	case scenarioIncident:
		return runIncident(ctx, o, stdout, logf)
	}
	res, err := benchmark(ctx, o, logf)
	if err != nil {
		return err
	}
	if err := writeMarkdown(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		return writeJSON(o.jsonPath, res)
	}
	return nil
}

// benchmark builds the fleet in a Redis database and a PostgreSQL database
// of its own, measures every phase, and removes both.
func benchmark(ctx context.Context, o options, logf func(string, ...any)) (*Results, error) {
	machine := describeMachine()
	e, err := newEnv(ctx, o.redisURL, o.databaseURL)
	if err != nil {
		return nil, err
	}
	defer e.close()
	logf("redis database %d, postgres database %s", e.claim.DB, e.dbName)

	// The fleet is built and checked through clients of its own, so that
	// only the measured work shows in the counters.
	build := redis.NewClient(e.redisOpts)
	defer build.Close()
	buildPool, err := pgxpool.New(ctx, e.databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open benchmark database: %w", err)
	}
	defer buildPool.Close()
	rdb, pool, rc, qc, err := countedClients(ctx, e)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	defer pool.Close()
	machine.fill(ctx, build, buildPool)

	logf("building the fleet: %d unrelated keys, %d task locks, %d owners", o.unrelated, o.taskLocks, o.owners)
	m, took, err := buildFleet(ctx, build, buildPool, o)
	if err != nil {
		return nil, err
	}
	keys := build.DBSize(ctx).Val()
	logf("built %d keys in %v", keys, took.Round(time.Millisecond))

	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = benchRecheck
	cfg.ScanCount, cfg.BatchSize = o.scanCount, o.batchSize
	// One pass does all the work of the fleet, so that the release rate is
	// measured on every stale holding, not on the first max_releases.
	cfg.MaxReleases, cfg.MaxTaskUpdates = math.MaxInt32, math.MaxInt32
	h, err := newHarness(rdb, build, pool, rc, qc, cfg)
	if err != nil {
		return nil, err
	}
	h.fleet, h.legacyLocks = m, o.legacyFraction > 0
	s := &session{o: o, h: h, admin: build, prof: newProfiler(o, logf), logf: logf,
		res: &Results{Machine: machine, Fleet: fleetFigures(o, m, keys, took), Sizes: typeSizes()}}
	for _, step := range []func(context.Context) error{s.readOnly, s.once, s.scaled} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.prof.err(); err != nil {
		return nil, err
	}
	s.res.finish()
	return s.res, nil
}

func countedClients(ctx context.Context, e *env) (*redis.Client, *pgxpool.Pool, *redisCounter, *queryCounter, error) {
	rc, qc := &redisCounter{}, &queryCounter{}
	rdb := redis.NewClient(e.redisOpts)
	rdb.AddHook(rc)
	pc, err := pgxpool.ParseConfig(e.databaseURL)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, nil, nil, fmt.Errorf("parse benchmark database url: %w", err)
	}
	pc.ConnConfig.Tracer = qc
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, nil, nil, fmt.Errorf("open benchmark database: %w", err)
	}
	return rdb, pool, rc, qc, nil
}

func fleetFigures(o options, m *sim.FleetManifest, keys int64, took time.Duration) FleetFigures {
	return FleetFigures{
		UnrelatedKeys: o.unrelated, ScaledUnrelated: o.unrelated * o.scaleFactor, TaskLocks: o.taskLocks,
		ExclusivePerTask: o.exclusivePerTask, Domains: o.domains, Owners: o.owners, DeadOwners: len(m.DeadOwners),
		FinishedFraction: o.finishedFraction, StaleHoldings: m.StaleHoldings, HealthyHoldings: m.HealthyHoldings,
		LostTasks: m.LostTasks, QueuedTasks: o.queued, KeysInRedis: keys, BuildSeconds: math.Round(took.Seconds()*10) / 10,
		ScanCount: o.scanCount, BatchSize: o.batchSize,
	}
}

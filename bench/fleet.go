package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/sim"
)

// fleetSpec maps the options onto the simulator's fleet. Heartbeats are dated
// so that the live owners stay alive and the dead ones dead for the whole
// run without a background writer beating the live rows.
func fleetSpec(o options) sim.FleetSpec {
	return sim.FleetSpec{
		Owners:           o.owners,
		DeadFraction:     o.deadFraction,
		TaskLocks:        o.taskLocks,
		ExclusivePerTask: o.exclusivePerTask,
		SharedDomains:    o.domains,
		FinishedFraction: o.finishedFraction,
		LegacyFraction:   o.legacyFraction,
		QueuedTasks:      o.queued,
		UnrelatedKeys:    o.unrelated,
		DecoyKeys:        o.decoys,
		TTL:              time.Hour,
		DeadHeartbeatAge: 3 * time.Hour,
		Hostname:         "bench",
		BatchSize:        sim.DefaultBatchSize,
	}
}

func buildFleet(ctx context.Context, rdb *redis.Client, pool *pgxpool.Pool, o options) (*sim.FleetManifest, time.Duration, error) {
	start := time.Now()
	m, err := sim.BuildFleet(ctx, rdb, pool, fleetSpec(o))
	if err != nil {
		return nil, 0, fmt.Errorf("build fleet: %w", err)
	}
	// Fresh statistics, as autovacuum would have them on a database of this
	// size, so the planner sees the table it will really scan.
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE core_task, core_appstatus"); err != nil {
		return nil, 0, fmt.Errorf("analyze benchmark database: %w", err)
	}
	return m, time.Since(start), nil
}

// extraKeyPrefix names the unrelated keys added to grow the keyspace; they
// look like the simulator's cache keys, so the reaper's SCAN MATCH lets them
// through like a real cache's.
const extraKeyPrefix = "pulp:cache:bench-extra:"

// addUnrelated writes n more unrelated keys, a thousand per MSET and ten
// MSETs per round trip.
func addUnrelated(ctx context.Context, rdb *redis.Client, n int) error {
	const keysPerCommand, commandsPerPipeline = 1000, 10
	pipe := rdb.Pipeline()
	for start := 0; start < n; start += keysPerCommand {
		end := min(start+keysPerCommand, n)
		pairs := make([]any, 0, 2*(end-start))
		for i := start; i < end; i++ {
			pairs = append(pairs, extraKeyPrefix+strconv.Itoa(i), "cached")
		}
		pipe.MSet(ctx, pairs...)
		if pipe.Len() == commandsPerPipeline || end == n {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("add %d unrelated keys: %w", n, err)
			}
		}
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/testing/redisclaim"
)

// The servers are the ones the tests use, named by the same variables.
const (
	defaultRedisURL    = "redis://127.0.0.1:6379/0"
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

	// claimTTL bounds how long a crashed benchmark keeps its Redis database.
	claimTTL  = time.Hour
	claimWait = 5 * time.Minute
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// env is the benchmark's own Redis logical database and its own PostgreSQL
// database with pulpcore's schema; close flushes the one and drops the other.
type env struct {
	// redisURL is the server's URL as given; redisOpts point at the claimed
	// logical database.
	redisURL    string
	redisOpts   *redis.Options
	databaseURL string

	claim    *redisclaim.Claim
	adminURL string
	dbName   string
}

// newEnv claims an empty Redis logical database through the same registry the
// tests use, so a benchmark never lands on a test's data or a test on the
// benchmark's, and creates a throwaway PostgreSQL database.
func newEnv(ctx context.Context, redisURL, adminURL string) (*env, error) {
	base, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	claim, err := redisclaim.Acquire(ctx, base, claimTTL, claimWait, true)
	if err != nil {
		return nil, err
	}
	e := &env{redisURL: redisURL, redisOpts: claim.Options(), claim: claim, adminURL: adminURL}
	if err := e.createDatabase(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) createDatabase(ctx context.Context) error {
	name, dbURL, err := pulpschema.CreateDatabase(ctx, e.adminURL, "lr_bench_")
	if err != nil {
		return err
	}
	e.dbName, e.databaseURL = name, dbURL
	return nil
}

// close removes everything the benchmark wrote, whatever state it stopped in.
func (e *env) close() {
	ctx := context.Background()
	if e.claim != nil {
		rdb := redis.NewClient(e.redisOpts)
		_ = rdb.FlushDB(ctx).Err()
		_ = rdb.Close()
		e.claim.Release()
	}
	if e.dbName != "" {
		_ = pulpschema.DropDatabase(ctx, e.adminURL, e.dbName)
	}
}

// clients opens a Redis client on the env's logical database and a pool on
// its PostgreSQL database; the caller closes both.
func (e *env) clients(ctx context.Context) (*redis.Client, *pgxpool.Pool, error) {
	pool, err := openBenchPool(ctx, e.databaseURL)
	if err != nil {
		return nil, nil, err
	}
	return redis.NewClient(e.redisOpts), pool, nil
}

// benchDatabase creates a throwaway database with pulpcore's schema on the
// server of adminURL, for a scenario on a redis-server of its own, and opens
// a pool on it; drop closes the pool and drops the database.
func benchDatabase(ctx context.Context, adminURL string) (pool *pgxpool.Pool, dbURL string, drop func(), err error) {
	name, dbURL, err := pulpschema.CreateDatabase(ctx, adminURL, "lr_bench_")
	if err != nil {
		return nil, "", nil, err
	}
	dropDB := func() { _ = pulpschema.DropDatabase(context.Background(), adminURL, name) }
	if pool, err = openBenchPool(ctx, dbURL); err != nil {
		dropDB()
		return nil, "", nil, err
	}
	return pool, dbURL, func() { pool.Close(); dropDB() }, nil
}

// openBenchPool opens a pool on a benchmark database.
func openBenchPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open benchmark database: %w", err)
	}
	return pool, nil
}

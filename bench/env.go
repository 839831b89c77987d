package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/redisclaim"
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
	e := &env{redisOpts: claim.Options(), claim: claim, adminURL: adminURL}
	if err := e.createDatabase(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) createDatabase(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "lr_bench_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create benchmark database: %w", err)
	}
	e.dbName = name
	u, err := url.Parse(e.adminURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	u.Path = "/" + name
	e.databaseURL = u.String()
	conn, err := pgx.Connect(ctx, e.databaseURL)
	if err != nil {
		return fmt.Errorf("connect to benchmark database: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, pulpschema.SQL); err != nil {
		return fmt.Errorf("load pulp schema: %w", err)
	}
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
		if admin, err := pgx.Connect(ctx, e.adminURL); err == nil {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{e.dbName}.Sanitize()+" WITH (FORCE)")
			_ = admin.Close(ctx)
		}
	}
}

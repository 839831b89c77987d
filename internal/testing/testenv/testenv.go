// Package testenv gives tests their own real Redis database and their own real
// PostgreSQL database holding pulpcore's schema, and removes both afterwards.
// Tests own their data: nothing is flushed, dropped or changed that the
// tests did not create.
//
// Redis: by default each test process (one per package) starts its own
// redis-server on a free loopback port in a temporary directory, and each
// call claims one of its logical databases 1..15 through internal/redisclaim,
// so parallel tests never share a database. With REAPER_TEST_REDIS_URL set,
// the databases are claimed on that server instead, and only databases found
// empty are used: a database holding anyone's keys is passed over, and the
// flush at cleanup removes only what the test wrote into a database it found
// empty. A crashed run frees its claims by itself (they expire).
//
// PostgreSQL: each call creates a fresh database from a template that holds
// pulpcore's schema (made once per schema version) on the server named by
// REAPER_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// and drops it at cleanup. What a killed test process could not drop, and
// the template once no test runs, DropLeftovers drops (`make test` runs it
// before and after the tests: cmd/dropleftovers); presence.go says how it
// tells a live test process's database from a leftover.
package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/testing/redisclaim"
)

const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

	// claimTTL bounds how long a crashed test run keeps a Redis database.
	claimTTL     = 30 * time.Minute
	claimTimeout = 5 * time.Minute
)

// RedisURL is the test Redis server's URL (database 0, the claim registry):
// REAPER_TEST_REDIS_URL, or the redis-server this process started. It panics
// when that server cannot start, naming the fix, as no test can run then.
func RedisURL() string {
	if v := os.Getenv("REAPER_TEST_REDIS_URL"); v != "" {
		return v
	}
	s, err := processRedisServer()
	if err != nil {
		panic("testenv: " + err.Error())
	}
	return s.URL
}

// DatabaseURL is the test PostgreSQL server's administrative URL.
func DatabaseURL() string { return envOr("REAPER_TEST_DATABASE_URL", defaultDatabaseURL) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Redis is a claimed, empty Redis database.
type Redis struct {
	Client *redis.Client
	// URL selects the claimed database; pass it to the reaper under test.
	URL string
	DB  int
}

// NewRedis claims an empty Redis database for the test and releases it at cleanup.
func NewRedis(t testing.TB) *Redis {
	t.Helper()
	r, err := claimRedis(RedisURL(), claimTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.release)
	return r.Redis
}

// claimedRedis is a claim and what releases it.
type claimedRedis struct {
	*Redis
	claim *redisclaim.Claim
}

// claimRedis claims a database found empty on the server of serverURL,
// waiting up to wait for one.
func claimRedis(serverURL string, wait time.Duration) (*claimedRedis, error) {
	ctx := context.Background()
	base, err := redis.ParseURL(serverURL)
	if err != nil {
		return nil, fmt.Errorf("parse REAPER_TEST_REDIS_URL: %w", err)
	}
	claim, err := redisclaim.Acquire(ctx, base, claimTTL, wait, true)
	if err != nil {
		return nil, fmt.Errorf("claim an empty redis test database on %s: %w (databases holding keys are never used; "+
			"unset REAPER_TEST_REDIS_URL to let the tests start their own redis-server)", base.Addr, err)
	}
	u, err := claim.URL(serverURL)
	if err != nil {
		claim.Release()
		return nil, fmt.Errorf("REAPER_TEST_REDIS_URL: %w", err)
	}
	client := redis.NewClient(claim.Options())
	return &claimedRedis{Redis: &Redis{Client: client, URL: u, DB: claim.DB}, claim: claim}, nil
}

// release empties the database, which held nothing when it was claimed, so
// that everything in it is the test's, and hands it back.
func (c *claimedRedis) release() {
	_ = c.Client.FlushDB(context.Background()).Err()
	_ = c.Client.Close()
	c.claim.Release()
}

// Database is a fresh PostgreSQL database holding pulpcore's schema.
type Database struct {
	Pool *pgxpool.Pool
	URL  string
	Name string
}

// NewDatabase creates a database with pulpcore's schema for the test and drops it at cleanup.
func NewDatabase(t testing.TB) *Database {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, DatabaseURL())
	if err != nil {
		t.Fatalf("connect to test postgres (REAPER_TEST_DATABASE_URL): %v", err)
	}
	defer admin.Close(ctx)

	key, err := processKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := testDatabaseName(key)
	// The template is made, when missing, and copied under one lock: copies
	// from one template are serialised (PostgreSQL refuses a copy while
	// another session is connected to the template), and DropLeftovers,
	// which drops templates under the same lock, cannot drop it in between.
	if err := withAdvisoryLock(ctx, admin, func() error {
		template, err := ensureTemplate(ctx, admin)
		if err != nil {
			return fmt.Errorf("prepare schema template: %w", err)
		}
		_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
		return err
	}); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	var pool *pgxpool.Pool
	t.Cleanup(func() {
		if pool != nil {
			pool.Close()
		}
		DropDatabase(name)
	})
	dbURL, err := withDatabase(DatabaseURL(), name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err = pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	return &Database{Pool: pool, URL: dbURL, Name: name}
}

// DropDatabase removes a test database, disconnecting whoever is still in it.
func DropDatabase(name string) {
	ctx := context.Background()
	_ = pulpschema.DropDatabase(ctx, DatabaseURL(), name)
}

// ensureTemplate makes the schema template when it is missing, and returns
// its name; the caller holds the advisory lock.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	sum := sha256.Sum256([]byte(pulpschema.SQL))
	template := "lr_template_" + hex.EncodeToString(sum[:6])
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return template, nil
	}
	building := template + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", err
	}
	u, err := withDatabase(DatabaseURL(), building)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, pulpschema.SQL)
	conn.Close(ctx)
	if err != nil {
		return "", fmt.Errorf("load pulp schema: %w", err)
	}
	_, err = admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{template}.Sanitize())
	return template, err
}

// testenvLockKey serialises template creation and copies across test
// binaries, and DropLeftovers with both.
const testenvLockKey = 7_000_000_001

func withAdvisoryLock(ctx context.Context, conn *pgx.Conn, fn func() error) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(testenvLockKey)); err != nil {
		return err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(testenvLockKey)) // error dropped: the lock ends with the session anyway
	return fn()
}

func withDatabase(raw, name string) (string, error) {
	u, err := pulpschema.DatabaseURL(raw, name)
	if err != nil {
		return "", fmt.Errorf("REAPER_TEST_DATABASE_URL: %w", err)
	}
	return u, nil
}

// HeartbeatRecheck is the tests' heartbeat_recheck: their rows that look
// dead are rows a test wrote, which never write again, so a pass reads them
// again this long after its snapshot instead of a heartbeat period (the
// product's default, which the tests of the second read itself keep).
const HeartbeatRecheck = 100 * time.Millisecond

// HeartbeatRecheckEnv is HeartbeatRecheck for a command line's environment.
const HeartbeatRecheckEnv = "100ms"

// LookupEnv looks a command line's setting up in env alone, as a clean
// environment holding only env would, except that heartbeat_recheck is the
// tests' (HeartbeatRecheckEnv) unless env names one.
func LookupEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		if k == "REAPER_HEARTBEAT_RECHECK" {
			return HeartbeatRecheckEnv, true
		}
		return "", false
	}
}

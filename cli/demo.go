package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/redisclaim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/sim"
)

func init() {
	registerCommand("demo", command{
		summary: "reproduce the 2026-07-24 incident in a throwaway database, audit, reap, audit again",
		keys:    noKeys, run: runDemo,
		exits: []exitCode{{0, "the demo ran"}, {1, "it could not set up, or a step did not end as it should"}},
	})
}

const (
	defaultDemoRedis    = "redis://127.0.0.1:6379/0"
	defaultDemoDatabase = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
)

// runDemo builds the incident of 2026-07-24 in a throwaway PostgreSQL
// database and an empty Redis logical database, runs audit, once and audit
// again through the real command line, and removes what it created.
func runDemo(ctx context.Context, env Env, args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	redisURL := fs.String("redis-url", envDefault(env, "REAPER_REDIS_URL", defaultDemoRedis), "Redis server to use; the demo picks an empty logical database 1-15 on it")
	dbURL := fs.String("database-url", envDefault(env, "REAPER_DATABASE_URL", defaultDemoDatabase), "PostgreSQL server to use; the demo creates and drops its own database on it")
	limit := fs.Int("limit", 8, "rows per table in the reports")
	keep := fs.Bool("keep", false, "leave the demo's database and Redis database in place and print the commands to explore and to remove them")
	if code, ok := parseFlags(fs, env, args, 0); !ok {
		return code
	}
	d := &demo{env: env, out: env.Stdout, keep: *keep}
	defer d.cleanup()
	if err := d.setUp(ctx, *redisURL, *dbURL); err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper demo: %v\n", err)
		return reaper.ExitFailed
	}
	return d.play(ctx, *limit)
}

func envDefault(env Env, name, def string) string {
	if v, ok := env.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

type demo struct {
	keep     bool
	env      Env
	out      io.Writer
	rdb      *redis.Client
	claim    *redisclaim.Claim
	redisURL string
	admin    string
	dbName   string
	dbURL    string
	pool     *pgxpool.Pool
	inc      *sim.Incident
	// stopBeat ends the live workers' heartbeats.
	stopBeat func() error
}

func (d *demo) setUp(ctx context.Context, redisURL, adminURL string) error {
	if err := d.pickRedisDB(ctx, redisURL); err != nil {
		return err
	}
	if err := d.createDatabase(ctx, adminURL); err != nil {
		return err
	}
	spec := sim.IncidentOf20260724()
	spec.DeadRunning, spec.DeadClaimed = 12, 6
	inc, err := sim.BuildIncident(ctx, d.rdb, d.pool, spec)
	if err != nil {
		return fmt.Errorf("build the incident: %w", err)
	}
	d.inc = inc
	// The live workers keep beating for as long as the demo runs, as real
	// workers would; the dead one stopped 23 hours ago.
	d.stopBeat = inc.KeepAliveInBackground(context.WithoutCancel(ctx), d.pool)
	return nil
}

// pickRedisDB claims an empty logical database (1-15) the way tests do, so
// the demo never sees or touches a real Pulp's keys in database 0, nor a
// database a test is using.
func (d *demo) pickRedisDB(ctx context.Context, raw string) error {
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	claim, err := redisclaim.Acquire(ctx, opts, 30*time.Minute, 30*time.Second, true)
	if err != nil {
		return err
	}
	d.claim = claim
	d.rdb = redis.NewClient(claim.Options())
	if d.redisURL, err = claim.URL(raw); err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	return nil
}

func (d *demo) createDatabase(ctx context.Context, adminURL string) error {
	name, dbURL, err := pulpschema.CreateDatabase(ctx, adminURL, "lock_reaper_demo_")
	if err != nil {
		return fmt.Errorf("the demo database: %w", err)
	}
	d.admin, d.dbName, d.dbURL = adminURL, name, dbURL
	if d.pool, err = pgxpool.New(ctx, d.dbURL); err != nil {
		return fmt.Errorf("open the demo database: %w", err)
	}
	return nil
}

func (d *demo) cleanup() {
	if d.keep && d.inc != nil {
		d.printKept()
		return
	}
	if d.stopBeat != nil {
		_ = d.stopBeat()
	}
	if d.pool != nil {
		d.pool.Close()
	}
	if d.rdb != nil {
		_ = d.rdb.FlushDB(context.Background()).Err()
		_ = d.rdb.Close()
		d.claim.Release()
	}
	if d.dbName != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pulpschema.DropDatabase(ctx, d.admin, d.dbName)
	}
	fmt.Fprintln(d.out, "\nRemoved the demo database and flushed the demo's Redis database.")
}

// lookup gives the demo's passes the demo's services and nothing else from
// the caller's environment, so a REAPER_* variable cannot point them at a
// real Pulp.
func (d *demo) lookup(name string) (string, bool) {
	switch name {
	case "REAPER_REDIS_URL":
		return d.redisURL, true
	case "REAPER_DATABASE_URL":
		return d.dbURL, true
	case "REAPER_LOG_FORMAT":
		return "json", true
	case "NO_COLOR", "TERM":
		return d.env.LookupEnv(name)
	}
	return "", false
}

// doctor closes the demo with `lock-reaper doctor` on the demo's services.
// Its findings describe the machine the demo runs on (a superuser, the
// default Redis user), so they never fail the demo.
func (d *demo) doctor(ctx context.Context) {
	fmt.Fprintf(d.out, "\n━━ 6. lock-reaper doctor: what in this deployment makes Pulp's locks unsafe (read-only)\n$ lock-reaper doctor\n\n")
	code := Main(ctx, Env{Args: []string{"doctor"}, Stdout: d.out, Stderr: io.Discard, Version: d.env.Version, LookupEnv: d.lookup})
	fmt.Fprintf(d.out, "(exit code %d: 0 all ok, 3 warnings, 1 a failure; the demo runs as a superuser and\n"+
		"the default Redis user, which doctor reports as more privilege than a pass needs)\n", code)
}

package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	if code, ok := parseFlags(fs, env, args, 0); !ok {
		return code
	}
	d := &demo{env: env, out: env.Stdout}
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

func (d *demo) play(ctx context.Context, limit int) int {
	inc := d.inc
	tasks := sim.Count(inc.Stale, inc.DeadOwner, sim.KindTask)
	fmt.Fprintf(d.out, "lock-reaper demo: the incident of 2026-07-24\n\n")
	fmt.Fprintf(d.out, "Built in PostgreSQL database %s and Redis %s:\n", d.dbName, d.redisURL)
	fmt.Fprintf(d.out, "  - worker %s, dead for 23 hours, still holds %d task locks\n", inc.DeadOwner, tasks)
	fmt.Fprintf(d.out, "    and %d resource locks (%d keys are legacy locks with no owner-registry entry);\n", len(inc.Stale)-tasks, len(inc.LegacyKeys))
	fmt.Fprintf(d.out, "  - %d live workers run healthy tasks; %d queued tasks need the dead worker's\n", len(inc.LiveOwners), len(inc.Queued))
	fmt.Fprintf(d.out, "    resources and would wait forever.\n\n")

	steps := []struct {
		title string
		args  []string
		want  int
	}{
		{"1. lock-reaper audit: what a pass would do (writes nothing)", []string{"audit"}, reaper.ExitFindings},
		{"2. lock-reaper once: release the stale locks, cancel and requeue the lost tasks", []string{"once"}, reaper.ExitOK},
		{"3. lock-reaper audit again: nothing left to do", []string{"audit"}, reaper.ExitOK},
	}
	for _, s := range steps {
		fmt.Fprintf(d.out, "━━ %s\n$ lock-reaper %s\n\n", s.title, strings.Join(s.args, " "))
		code := Main(ctx, Env{
			Args: append(s.args, "--limit", strconv.Itoa(limit)), Stdout: d.out, Stderr: io.Discard, Version: d.env.Version,
			LookupEnv: d.lookup,
		})
		fmt.Fprintf(d.out, "(exit code %d)\n\n", code)
		if code != s.want {
			fmt.Fprintf(d.env.Stderr, "lock-reaper demo: step %q exited %d, expected %d\n", s.title, code, s.want)
			return reaper.ExitFailed
		}
	}
	fmt.Fprintf(d.out, "The dead worker's %d holdings are gone, its running tasks are canceled and its\n"+
		"claimed waiting tasks requeued; every healthy lock of the live workers is intact.\n", len(inc.Stale))
	d.doctor(ctx)
	return reaper.ExitOK
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
	}
	return "", false
}

// doctor closes the demo with `lock-reaper doctor` on the demo's services.
// Its findings describe the machine the demo runs on (a superuser, the
// default Redis user), so they never fail the demo.
func (d *demo) doctor(ctx context.Context) {
	fmt.Fprintf(d.out, "\n━━ 4. lock-reaper doctor: what in this deployment makes Pulp's locks unsafe (read-only)\n$ lock-reaper doctor\n\n")
	code := Main(ctx, Env{Args: []string{"doctor"}, Stdout: d.out, Stderr: io.Discard, Version: d.env.Version, LookupEnv: d.lookup})
	fmt.Fprintf(d.out, "(exit code %d: 0 all ok, 3 warnings, 1 a failure; the demo runs as a superuser and\n"+
		"the default Redis user, which doctor reports as more privilege than a pass needs)\n", code)
}

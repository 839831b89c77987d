package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/throwaway"
)

func demoCommand() command {
	return command{
		name: "demo", summary: "reproduce the 2026-07-24 incident in a throwaway database, audit, reap, audit again (--no-reap: stop before the pass)",
		flags: demoFlags,
		exits: []exitCode{{0, "the demo ran"}, {1, "it could not set up (a server named by a flag holds data the demo did not make, or one it starts would not start), or a step did not end as it should"}, {2, "bad flags"}},
	}
}

// demoFlags defines the demo's flags, which name its own servers: it reads
// no configuration.
func demoFlags(cmd *cobra.Command, _ *config.Loader) runFunc {
	fs := cmd.Flags()
	redisURL := fs.String("redis-url", "", "an empty Redis logical database to build the incident in (the URL's database, 0 when none); "+
		"by default the demo starts a redis-server of its own. REAPER_REDIS_URL is never used")
	dbURL := fs.String("database-url", "", "a PostgreSQL server holding no database but postgres and the templates, on which the demo creates and drops its own database; "+
		"by default the demo starts a PostgreSQL of its own. REAPER_DATABASE_URL is never used")
	limit := fs.Int("limit", 8, "rows per table in the reports")
	keep := fs.Bool("keep", false, "leave the demo's state in place (the servers it started keep running) and print the commands to explore and to remove it")
	noReap := fs.Bool("no-reap", false, "build the incident, explain a blocked task and audit, then stop before the pass: with --keep the incident is left to explore, "+
		"the demo staying in the foreground to keep its live workers heartbeating until Ctrl-C")
	return func(ctx context.Context, env Env, _ []string) int {
		return runDemo(ctx, env, demoOptions{redisURL: *redisURL, adminURL: *dbURL, limit: *limit, keep: *keep, noReap: *noReap, spec: sim.DemoIncident()})
	}
}

// runDemo builds the incident of 2026-07-24 in a throwaway PostgreSQL
// database and an empty Redis logical database, runs audit, once and audit
// again through the real command line, and removes what it created.
//
// It talks only to servers it starts itself, or to the ones its own flags
// name, never to those of REAPER_REDIS_URL / REAPER_DATABASE_URL: on a
// laptop pointed at production those are production. A server named by a
// flag must hold nothing the demo did not make.
func runDemo(ctx context.Context, env Env, o demoOptions) int {
	d := &demo{env: env, out: env.Stdout, keep: o.keep, noReap: o.noReap, spec: o.spec}
	if err := d.setUp(ctx, o.redisURL, o.adminURL); err != nil {
		fmt.Fprintf(env.Stderr, "lock-reaper demo: %v\n", err)
		d.cleanup()
		return exitcode.Failed
	}
	code := d.play(ctx, o.limit)
	if d.keep && d.noReap && code == exitcode.OK {
		d.printKept()
		d.beatUntil(ctx)
		d.letGo()
		return code
	}
	d.cleanup()
	return code
}

// demoOptions are the demo's flags, and the incident it builds.
type demoOptions struct {
	redisURL, adminURL string
	limit              int
	keep, noReap       bool
	spec               sim.IncidentSpec
}

type demo struct {
	keep     bool
	noReap   bool
	env      Env
	out      io.Writer
	own      *throwaway.Servers
	rdb      *redis.Client
	redisURL string
	admin    string
	dbName   string
	dbURL    string
	pool     *pgxpool.Pool
	inc      *sim.Incident
	spec     sim.IncidentSpec
	// wrote says the demo began writing into its Redis database: only then
	// is there anything of its own there to flush.
	wrote bool
	// stopBeat ends the live workers' heartbeats.
	stopBeat func() error
}

func (d *demo) setUp(ctx context.Context, redisURL, adminURL string) error {
	if redisURL == "" || adminURL == "" {
		own, err := throwaway.Start(ctx)
		if err != nil {
			return fmt.Errorf("%w; or name an empty Redis database and PostgreSQL server with --redis-url and --database-url", err)
		}
		d.own = own
		if redisURL == "" {
			redisURL = own.RedisURL
		}
		if adminURL == "" {
			adminURL = own.DatabaseURL
		}
	}
	if err := d.openRedis(ctx, redisURL); err != nil {
		return err
	}
	if err := d.createDatabase(ctx, adminURL); err != nil {
		return err
	}
	d.wrote = true
	inc, err := sim.BuildIncident(ctx, d.rdb, d.pool, d.spec)
	if err != nil {
		return fmt.Errorf("build the incident: %w", err)
	}
	d.inc = inc
	// The live workers keep beating for as long as the demo runs, as real
	// workers would; the dead one stopped 23 hours ago.
	d.stopBeat = inc.KeepAliveInBackground(context.WithoutCancel(ctx), d.pool)
	return nil
}

// openRedis opens exactly the logical database of raw and refuses it unless
// it is empty: the demo writes into that one database and flushes it at the
// end, and writes nothing anywhere else on the server.
func (d *demo) openRedis(ctx context.Context, raw string) error {
	opts, err := redis.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	rdb := redis.NewClient(opts)
	where := redisTarget(raw, rdb)
	n, err := rdb.DBSize(ctx).Result()
	if err != nil {
		_ = rdb.Close()
		return fmt.Errorf("redis %s: %w", where, err)
	}
	if n > 0 {
		_ = rdb.Close()
		return fmt.Errorf("redis %s holds %d keys the demo did not make: it builds its incident only in an empty database "+
			"(give --redis-url an empty one, e.g. redis://host:6379/15, or leave it out and the demo starts a redis-server of its own)", where, n)
	}
	d.rdb, d.redisURL = rdb, raw
	return nil
}

// createDatabase makes the demo's database on a server that holds no data
// but the demo's own.
func (d *demo) createDatabase(ctx context.Context, adminURL string) error {
	if err := refuseUsedServer(ctx, adminURL); err != nil {
		return err
	}
	name, dbURL, err := pulpschema.CreateDatabase(ctx, adminURL, demoDatabasePrefix)
	if err != nil {
		return fmt.Errorf("the demo database: %w", err)
	}
	d.admin, d.dbName, d.dbURL = adminURL, name, dbURL
	if d.pool, err = pgxpool.New(ctx, d.dbURL); err != nil {
		return fmt.Errorf("open the demo database: %w", err)
	}
	return nil
}

const demoDatabasePrefix = "lock_reaper_demo_"

// refuseUsedServer fails unless the server of adminURL holds no database
// but postgres, the templates and earlier demos' (--keep), and no table in
// the database adminURL opens.
func refuseUsedServer(ctx context.Context, adminURL string) error {
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return fmt.Errorf("--database-url: %w", err)
	}
	where := fmt.Sprintf("%s, database %s, user %s", hostText(cfg.Host, cfg.Port), databaseName(cfg.Database, cfg.User), cfg.User)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgresql %s: %w", where, err)
	}
	defer conn.Close(ctx)
	var others []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(datname ORDER BY datname), '{}') FROM pg_database
		WHERE datname NOT IN ('postgres', 'template0', 'template1') AND datname NOT LIKE $1`, demoDatabasePrefix+"%").Scan(&others); err != nil {
		return fmt.Errorf("postgresql %s: list the databases: %w", where, err)
	}
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`).Scan(&tables); err != nil {
		return fmt.Errorf("postgresql %s: list the tables: %w", where, err)
	}
	if len(others) == 0 && tables == 0 {
		return nil
	}
	what := fmt.Sprintf("%d tables in its database %s", tables, databaseName(cfg.Database, cfg.User))
	if len(others) > 0 {
		shown := others
		if len(shown) > 3 {
			shown = append(shown[:3:3], "…")
		}
		what = fmt.Sprintf("%d databases the demo did not make (%s)", len(others), strings.Join(shown, ", "))
	}
	return fmt.Errorf("postgresql %s holds %s: the demo creates its database only on a server with no data of anyone else's "+
		"(give --database-url an unused server, or leave it out and the demo starts a PostgreSQL of its own)", where, what)
}

// cleanup removes what the demo made, or with --keep lets go of it, and
// says what it did: only what was made and removed, so a demo refused at
// setup claims nothing.
func (d *demo) cleanup() {
	if d.keep && d.inc != nil {
		d.printKept()
		d.letGo()
		return
	}
	if d.stopBeat != nil {
		_ = d.stopBeat()
	}
	if d.pool != nil {
		d.pool.Close()
	}
	var done, failed []string
	if d.rdb != nil {
		if d.wrote {
			if err := d.rdb.FlushDB(context.Background()).Err(); err != nil {
				failed = append(failed, fmt.Sprintf("flush the demo's Redis database %s: %v", d.redisURL, err))
			} else {
				done = append(done, "flushed the demo's Redis database")
			}
		}
		_ = d.rdb.Close()
	}
	if d.dbName != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pulpschema.DropDatabase(ctx, d.admin, d.dbName); err != nil {
			failed = append(failed, fmt.Sprintf("drop the demo database %s: %v", d.dbName, err))
		} else {
			done = append([]string{"removed the demo database"}, done...)
		}
	}
	if d.own != nil {
		d.own.Stop()
		done = append(done, "stopped the servers it started")
	}
	for _, f := range failed {
		fmt.Fprintf(d.env.Stderr, "lock-reaper demo: could not %s\n", f)
	}
	if len(done) > 0 {
		fmt.Fprintf(d.out, "\n%s.\n", upperFirst(joinWords(done)))
	}
}

// joinWords joins phrases as a sentence does: "a", "a and b", "a, b and c".
func joinWords(ws []string) string {
	if len(ws) < 2 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " and " + ws[len(ws)-1]
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

// Package doctor checks a Pulp deployment for the choices that silently break
// its Redis locks: an eviction policy that may drop them, a Redis that loses
// them on restart, a replica, a keyspace shared with the content cache, a
// database that is a standby or behind a transaction pooler, privileges that
// are not exactly the documented ones, a pulpcore too old to clean up after
// itself, skewed worker clocks and owners only a keyspace scan can find.
//
// Every check is read-only: it reads server facts, queries the catalog, or
// asks Redis whether a command would be allowed without running it. Each
// check is a small function returning one Result; the decisions behind them
// are pure functions of what was read, tested on tables.
package doctor

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// Status of one check.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	// Skipped is a check that did not run because the service it reads is
	// out of reach: it saw nothing either way, and counting it as a warning
	// would bury the one failure that says why among checks never run.
	Skipped Status = "skipped"
)

// Level orders the statuses: 0 ok, 1 warn, 2 fail. It is also the value of
// the lock_reaper_doctor_check_status metric. A skipped check has level 0:
// it neither raises the report's status nor is a finding (the unreachable
// service is, in the check that failed); the daemon exports no value for it.
func (s Status) Level() int {
	switch s {
	case Warn:
		return 1
	case Fail:
		return 2
	}
	return 0
}

// Names of the checks, stable: they are metric label values.
const (
	CheckRedisReachable   = "redis-reachable"
	CheckRedisEviction    = "redis-eviction"
	CheckRedisPersistence = "redis-persistence"
	CheckRedisRole        = "redis-role"
	CheckRedisSharedKeys  = "redis-shared-keyspace"
	CheckRedisACL         = "redis-acl"
	CheckPostgresPrimary  = "postgres-primary"
	CheckPostgresPooler   = "postgres-pooler"
	CheckPostgresGrants   = "postgres-grants"
	CheckPulpcoreVersion  = "pulpcore-version"
	CheckHeartbeatClock   = "heartbeat-clock"
	CheckLegacyOwners     = "legacy-owners"
	CheckRedisWorker      = "redis-worker"
)

// CheckNames lists every check in the order Run runs them.
var CheckNames = []string{
	CheckRedisReachable, CheckRedisEviction, CheckRedisPersistence, CheckRedisRole, CheckRedisSharedKeys,
	CheckRedisACL, CheckPostgresPrimary, CheckPostgresPooler, CheckPostgresGrants, CheckPulpcoreVersion,
	CheckHeartbeatClock, CheckLegacyOwners, CheckRedisWorker,
}

// Result is what one check found.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Evidence is what the check saw, in one line.
	Evidence string `json:"evidence"`
	// Fix says in one sentence what to change; empty when the check is ok.
	Fix string `json:"fix,omitempty"`
}

// Report is every check's result, in CheckNames order.
type Report struct {
	Status Status         `json:"status"`
	Checks []Result       `json:"checks"`
	Counts map[Status]int `json:"counts"`
}

// Problems are the results that are warnings or failures.
func (r Report) Problems() []Result {
	var out []Result
	for _, c := range r.Checks {
		if c.Status == Warn || c.Status == Fail {
			out = append(out, c)
		}
	}
	return out
}

// DefaultTimeout bounds each check when Target.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Target is the deployment to check: the same clients a pass uses.
type Target struct {
	Redis    redis.UniversalClient
	Postgres *pgxpool.Pool
	// Timeout bounds each check. Default DefaultTimeout.
	Timeout time.Duration
	// SampleKeys bounds the keyspace sample of the shared-keyspace check.
	// Default DefaultSampleKeys.
	SampleKeys int
	// Inspect reads one snapshot as a pass does (a full scan, writing
	// nothing), for the legacy-owners check; nil leaves that check out.
	Inspect func(ctx context.Context) (*reaper.Inspection, error)
	// HeartbeatWatch is how long the heartbeat-clock check watches the rows'
	// heartbeats move, to find clocks behind the database's (within the
	// check's deadline); 0 reads them once.
	HeartbeatWatch time.Duration
}

// check is one named check.
type check struct {
	name string
	run  func(ctx context.Context, t Target) Result
}

var checks = []check{
	{CheckRedisReachable, checkRedisReachable},
	{CheckRedisEviction, checkRedisEviction},
	{CheckRedisPersistence, checkRedisPersistence},
	{CheckRedisRole, checkRedisRole},
	{CheckRedisSharedKeys, checkSharedKeyspace},
	{CheckRedisACL, checkRedisACL},
	{CheckPostgresPrimary, checkPostgresPrimary},
	{CheckPostgresPooler, checkPostgresPooler},
	{CheckPostgresGrants, checkPostgresGrants},
	{CheckPulpcoreVersion, checkPulpcoreVersion},
	{CheckHeartbeatClock, checkHeartbeatClock},
	{CheckLegacyOwners, checkLegacyOwners},
	{CheckRedisWorker, checkRedisWorker},
}

// Run runs every check, one after the other, each within Target.Timeout
// (the legacy-owners snapshot within the deadlines of its own calls).
// When Redis or PostgreSQL cannot be reached, the checks that need it are
// Skipped instead of repeating the connection error.
func Run(ctx context.Context, t Target) Report {
	if t.Timeout <= 0 {
		t.Timeout = DefaultTimeout
	}
	if t.SampleKeys <= 0 {
		t.SampleKeys = DefaultSampleKeys
	}
	if t.Inspect != nil {
		t.Inspect = inspectOnce(t.Inspect)
	}
	rep := Report{Counts: map[Status]int{OK: 0, Warn: 0, Fail: 0, Skipped: 0}}
	redisDown, postgresDown := false, false
	for _, c := range checks {
		var res Result
		switch {
		case redisDown && needsRedis(c.name):
			res = skipped("Redis is unreachable (see " + CheckRedisReachable + ")")
		case postgresDown && needsPostgres(c.name):
			res = skipped("PostgreSQL is unreachable (see " + CheckPostgresPrimary + ")")
		case c.name == CheckLegacyOwners, c.name == CheckRedisWorker:
			// A full snapshot of a large keyspace takes longer than one
			// call; the snapshot reader bounds each of its calls itself.
			res = c.run(ctx, t)
		default:
			cctx, cancel := context.WithTimeout(ctx, t.Timeout)
			res = c.run(cctx, t)
			cancel()
		}
		res.Check = c.name
		switch c.name {
		case CheckRedisReachable:
			redisDown = res.Status == Fail
		case CheckPostgresPrimary:
			postgresDown = res.Status == Fail && res.Evidence != "" && isUnreachable(res)
		}
		rep.Checks = append(rep.Checks, res)
		rep.Counts[res.Status]++
		if res.Status.Level() > rep.Status.Level() || rep.Status == "" {
			rep.Status = res.Status
		}
	}
	return rep
}

func needsRedis(name string) bool {
	switch name {
	case CheckRedisEviction, CheckRedisPersistence, CheckRedisRole, CheckRedisSharedKeys, CheckRedisACL, CheckLegacyOwners, CheckRedisWorker:
		return true
	}
	return false
}

func needsPostgres(name string) bool {
	switch name {
	case CheckPostgresPooler, CheckPostgresGrants, CheckPulpcoreVersion, CheckHeartbeatClock, CheckLegacyOwners, CheckRedisWorker:
		return true
	}
	return false
}

// skipped is the result of a check whose service is out of reach. It has
// no fix of its own and does not repeat the connection error: the
// reachability check that failed says both, once.
func skipped(why string) Result {
	return Result{Status: Skipped, Evidence: "not run: " + why}
}

// grantFix is the fix of a database read that failed: a refused read
// wants the documented grants, a missing table the right database.
func grantFix(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return "point database.url at pulpcore's database (and search_path at its schema)."
	}
	return "grant the least-privilege set of docs/security.md (internal/privilege/postgres.sql) to the role."
}

// couldNotCheck is the result of a check whose read was refused or failed.
func couldNotCheck(what string, err error, fix string) Result {
	return Result{Status: Warn, Evidence: "could not " + what + ": " + err.Error(), Fix: fix}
}

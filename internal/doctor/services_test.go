package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// restrictedRole creates a role with the documented grants, then runs
// adjust (as the database's owner, {role} naming the role) to take one
// away or add one, and returns
// a pool logged in as it. The role is dropped at cleanup.
func restrictedRole(t *testing.T, db *testenv.Database, adjust ...string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	role := "lr_doctor_" + randomSuffix()
	_, err := db.Pool.Exec(ctx, privilege.PostgresSQLFor(role, "pw"))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = db.Pool.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
		_, _ = db.Pool.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
	})
	for _, sql := range adjust {
		_, err := db.Pool.Exec(ctx, strings.ReplaceAll(sql, "{role}", pgx.Identifier{role}.Sanitize()))
		require.NoError(t, err, sql)
	}
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "pw")
	pool, err := pgxpool.New(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// aclUser creates an ACL user with the documented rules plus extra ones on
// a test-started server and returns a client logged in as it.
func aclUser(t *testing.T, s *redisserver.Server, extra ...string) *redis.Client {
	t.Helper()
	ctx := context.Background()
	user := "lr-doctor-" + randomSuffix()
	args := privilege.RedisSetUser(user, "pw")
	for _, r := range extra {
		args = append(args, r)
	}
	require.NoError(t, s.Client.Do(ctx, args...).Err())
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: user, Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// addWorker inserts a worker row with a pulpcore version and a heartbeat
// at the database's now() plus offset.
func addWorker(t *testing.T, db *testenv.Database, name, core string, offset time.Duration) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO core_appstatus (pulp_id, app_type, name, versions, ttl, last_heartbeat)
		VALUES (gen_random_uuid(), 'worker', $1, hstore('core', $2), '30 seconds', now() + $3::interval)`, name, core, offset.String())
	require.NoError(t, err)
}

// registeredLock writes one task lock of owner with its registry entries,
// as pulpcore 3.117's acquire script does.
func registeredLock(t *testing.T, rdb *redis.Client, owner string) {
	t.Helper()
	ctx := context.Background()
	key := judge.TaskKeyPrefix + "6f1c4a52-7a3e-4c59-9d1a-0f6e2b8f1c11"
	require.NoError(t, rdb.Set(ctx, key, owner, 0).Err())
	require.NoError(t, rdb.SAdd(ctx, redislocks.OwnerLocksPrefix+owner, key).Err())
	require.NoError(t, rdb.SAdd(ctx, redislocks.ActiveOwnersKey, owner).Err())
}

func runCheck(t *testing.T, fn func(context.Context, Target) Result, target Target) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if target.SampleKeys == 0 {
		target.SampleKeys = DefaultSampleKeys
	}
	return fn(ctx, target)
}

// TestEvictingRedisWithoutPersistence: a Redis that may evict locks and
// saves nothing fails the eviction check and warns on persistence.
func TestEvictingRedisWithoutPersistence(t *testing.T) {
	t.Parallel()
	s := redisserver.Start(t, "--maxmemory-policy", "allkeys-lru", "--save", "", "--appendonly", "no")
	target := Target{Redis: s.Client}

	ev := runCheck(t, checkRedisEviction, target)
	require.Equal(t, Fail, ev.Status, ev.Evidence)
	require.Contains(t, ev.Evidence, "allkeys-lru")
	require.Contains(t, ev.Fix, "noeviction")

	p := runCheck(t, checkRedisPersistence, target)
	require.Equal(t, Warn, p.Status, p.Evidence)
	require.Contains(t, p.Evidence, "AOF off, no RDB save points")

	// The same server under the documented ACL user, which may not run
	// CONFIG GET: INFO's save history decides.
	p = runCheck(t, checkRedisPersistence, Target{Redis: aclUser(t, s)})
	require.Equal(t, Warn, p.Status, p.Evidence)
	require.Contains(t, p.Evidence, "save points unknown")
}

// TestReplicaRedis: the reaper pointed at a replica fails the role check,
// which names the primary.
func TestReplicaRedis(t *testing.T) {
	t.Parallel()
	primary := redisserver.Start(t)
	replica := redisserver.ReplicaOf(t, primary)

	r := runCheck(t, checkRedisRole, Target{Redis: replica.Client})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "replica of 127.0.0.1:"+strconv.Itoa(primary.Port))
	require.Contains(t, r.Fix, "127.0.0.1:"+strconv.Itoa(primary.Port))

	// The primary lists the replica once the replica's sync is done on its
	// side too, a moment after the replica reports its link up.
	require.Eventually(t, func() bool {
		r = runCheck(t, checkRedisRole, Target{Redis: primary.Client})
		return r.Status == OK && strings.Contains(r.Evidence, "1 connected replicas")
	}, 10*time.Second, 50*time.Millisecond, "the primary's role check: %s", r.Evidence)
}

// TestACLUserMissingOneCommand: a user the documented rules without HSET
// fails the ACL check, asked by ACL DRYRUN from an admin connection and by
// the transaction probe from the user's own; the probe writes nothing.
func TestACLUserMissingOneCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redisserver.Start(t)
	limited := aclUser(t, s, "-hset")
	user := limited.Options().Username

	dry, err := dryRunACL(ctx, s.Client, user)
	require.NoError(t, err)
	r := evalACL(dry)
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "ACL DRYRUN")
	require.Contains(t, r.Evidence, "refused: hset ")

	r = runCheck(t, checkRedisACL, Target{Redis: limited})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "transaction probe")
	require.Contains(t, r.Evidence, "refused: hset ")
	require.Zero(t, s.Client.Exists(ctx, probeKey, "task:"+probeKey).Val(), "the probe wrote a key")

	// The client it used is left usable, outside any transaction.
	require.ErrorIs(t, limited.Get(ctx, "task:"+probeKey).Err(), redis.Nil)

	// Exactly the documented rules: ok both ways.
	exact := aclUser(t, s)
	r = runCheck(t, checkRedisACL, Target{Redis: exact})
	require.Equal(t, OK, r.Status, r.Evidence)
	dry, err = dryRunACL(ctx, s.Client, exact.Options().Username)
	require.NoError(t, err)
	require.Equal(t, OK, evalACL(dry).Status, evalACL(dry).Evidence)

	// One command too many: a warning.
	wide := aclUser(t, s, "+dbsize")
	r = runCheck(t, checkRedisACL, Target{Redis: wide})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "also allowed: dbsize")
}

// TestRoleGrants: a role missing one documented grant fails, a role with
// one grant too many warns, the documented role is ok.
func TestRoleGrants(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)

	missing := restrictedRole(t, db, "REVOKE UPDATE (error) ON core_task FROM {role}")
	r := runCheck(t, checkPostgresGrants, Target{Postgres: missing})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "missing UPDATE (error) ON core_task")
	require.NotContains(t, r.Evidence, "beyond")

	extra := restrictedRole(t, db, "GRANT SELECT (enc_args) ON core_task TO {role}")
	r = runCheck(t, checkPostgresGrants, Target{Postgres: extra})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "beyond the documented set SELECT (enc_args) ON core_task")

	table := restrictedRole(t, db, "GRANT SELECT ON core_domain TO {role}")
	r = runCheck(t, checkPostgresGrants, Target{Postgres: table})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "SELECT ON core_domain")

	exact := restrictedRole(t, db)
	r = runCheck(t, checkPostgresGrants, Target{Postgres: exact})
	require.Equal(t, OK, r.Status, r.Evidence)

	r = runCheck(t, checkPostgresGrants, Target{Postgres: db.Pool})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "superuser")
}

// TestFutureHeartbeat: a worker row stamped an hour ahead of the database
// clock is reported; rows on time are not.
func TestFutureHeartbeat(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	addWorker(t, db, "1@on-time", "3.117.0", 0)
	r := runCheck(t, checkHeartbeatClock, Target{Postgres: db.Pool})
	require.Equal(t, OK, r.Status, r.Evidence)

	addWorker(t, db, "1@ahead", "3.117.0", time.Hour)
	r = runCheck(t, checkHeartbeatClock, Target{Postgres: db.Pool})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, `worker "1@ahead" 1h0m0s ahead`)
	require.NotContains(t, r.Evidence, "on-time")
}

// TestHeartbeatBehind: a worker whose clock is 90 s behind the database's
// writes its heartbeat every half second; watched, its heartbeat lands at
// least 85 s behind, and the check warns. A worker on time is not named.
func TestHeartbeatBehind(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	addWorker(t, db, "1@on-time", "3.117.0", 0)
	addWorker(t, db, "1@lagging", "3.117.0", -90*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// The worker's clock, not the database's: the value is made here.
			_, _ = db.Pool.Exec(ctx, `UPDATE core_appstatus SET last_heartbeat = $1 WHERE name = '1@lagging'`, time.Now().Add(-90*time.Second))
			_, _ = db.Pool.Exec(ctx, `UPDATE core_appstatus SET last_heartbeat = $1 WHERE name = '1@on-time'`, time.Now())
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	defer func() { cancel(); <-done }()
	r := runCheck(t, checkHeartbeatClock, Target{Postgres: db.Pool, HeartbeatWatch: 3 * time.Second})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, `worker "1@lagging" at least`)
	require.NotContains(t, r.Evidence, "on-time")

	r = runCheck(t, checkHeartbeatClock, Target{Postgres: db.Pool})
	require.Equal(t, OK, r.Status, "read once, a heartbeat 90 s old says nothing: %s", r.Evidence)
}

// TestPrimaryAndPooler: the test database is a writable primary reached
// directly; a role whose sessions are read-only fails.
func TestPrimaryAndPooler(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	r := runCheck(t, checkPostgresPrimary, Target{Postgres: db.Pool})
	require.Equal(t, OK, r.Status, r.Evidence)
	r = runCheck(t, checkPostgresPooler, Target{Postgres: db.Pool})
	require.Equal(t, OK, r.Status, r.Evidence)

	// A read-only session is refused as the pass would be.
	ro := restrictedRole(t, db, "ALTER ROLE {role} SET default_transaction_read_only = on")
	r = runCheck(t, checkPostgresPrimary, Target{Postgres: ro})
	require.Equal(t, Fail, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, "default_transaction_read_only on")
}

// TestLegacyOwner: an owner with no AppStatus row and no registry is
// counted; a registered one is not.
func TestLegacyOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	registeredLock(t, rdb.Client, "1@registered-gone")
	require.NoError(t, rdb.Client.Set(ctx, judge.TaskKeyPrefix+"0b0c7d7e-1111-4c59-9d1a-0f6e2b8f1c11", "1@legacy", 0).Err())
	require.NoError(t, rdb.Client.Set(ctx, judge.ResourceKeyPrefix+"prn:core.domain:x", "1@legacy", 0).Err())
	r, err := reaper.New(passConfig(), rdb.Client, db.Pool, nil)
	require.NoError(t, err)
	res := runCheck(t, checkLegacyOwners, Target{Inspect: func(ctx context.Context) (*reaper.Inspection, error) {
		return r.Inspect(ctx, reaper.InspectOptions{})
	}})
	require.Equal(t, Warn, res.Status, res.Evidence)
	require.Contains(t, res.Evidence, `1 owners with no AppStatus row and no registry hold 2 holdings ("1@legacy" 2)`)
}

// TestRedisWorkerNotInUse: workers heartbeat in a database whose Redis holds
// no Redis-worker lock, registry or active owner, as under pulpcore's
// default worker: the check says so and where WORKER_TYPE is set; a lock,
// or an owner left in pulp:active_owners by an idle Redis worker, is ok.
func TestRedisWorkerNotInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	addWorker(t, db, "1@pulp-worker-0", "3.117.0", 0)
	addWorker(t, db, "1@pulp-worker-1", "3.117.0", 0)
	addWorker(t, db, "1@pulp-worker-old", "3.117.0", -time.Hour) // dead: not counted
	r, err := reaper.New(passConfig(), rdb.Client, db.Pool, nil)
	require.NoError(t, err)
	target := Target{Inspect: func(ctx context.Context) (*reaper.Inspection, error) { return r.Inspect(ctx, reaper.InspectOptions{}) }}

	res := runCheck(t, checkRedisWorker, target)
	require.Equal(t, Warn, res.Status, res.Evidence)
	require.Contains(t, res.Evidence, "2 Pulp workers heartbeat in core_appstatus, but Redis holds no Redis-worker lock and pulp:active_owners lists no owner")
	require.Contains(t, res.Evidence, `WORKER_TYPE "pulpcore"`)
	require.Contains(t, res.Fix, `WORKER_TYPE = "redis"`)
	require.Contains(t, res.Fix, "spec.custom_pulp_settings")

	require.NoError(t, rdb.Client.SAdd(ctx, redislocks.ActiveOwnersKey, "1@pulp-worker-0").Err())
	res = runCheck(t, checkRedisWorker, target)
	require.Equal(t, OK, res.Status, res.Evidence)

	require.NoError(t, rdb.Client.Del(ctx, redislocks.ActiveOwnersKey).Err())
	registeredLock(t, rdb.Client, "1@pulp-worker-0")
	res = runCheck(t, checkRedisWorker, target)
	require.Equal(t, OK, res.Status, res.Evidence)
	require.Contains(t, res.Evidence, "1 holdings, 1 owners in pulp:active_owners")
}

// passConfig is the default configuration with the tests' heartbeat_recheck.
func passConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	return cfg
}

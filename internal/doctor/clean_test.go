package doctor_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/cli"
	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestCleanDeploymentEveryCheckOK runs `lock-reaper doctor` against a
// deployment set up as docs/doctor.md and docs/security.md say: a Redis that never evicts locks and
// appends to an AOF, the documented ACL user and PostgreSQL role, pulpcore
// 3.117 workers on time holding registered locks. Every check is ok, and
// the exit code is 0.
func TestCleanDeploymentEveryCheckOK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redisserver.Start(t, "--maxmemory-policy", "noeviction", "--appendonly", "yes")
	db := testenv.NewDatabase(t)

	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	role, user := "lr_clean_"+hex.EncodeToString(suffix), "lr-clean-"+hex.EncodeToString(suffix)
	_, err := db.Pool.Exec(ctx, privilege.PostgresSQLFor(role, "pw"))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
		_, _ = db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
	})
	require.NoError(t, s.Client.Do(ctx, privilege.RedisSetUser(user, "pw")...).Err())

	_, err = db.Pool.Exec(ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, versions, ttl, last_heartbeat)
		VALUES (gen_random_uuid(), 'worker', '1@clean', hstore('core', '3.117.0'), '30 seconds', now())`)
	require.NoError(t, err)
	key := judge.TaskKeyPrefix + "6f1c4a52-7a3e-4c59-9d1a-0f6e2b8f1c11"
	require.NoError(t, s.Client.Set(ctx, key, "1@clean", 0).Err())
	require.NoError(t, s.Client.SAdd(ctx, redislocks.OwnerLocksPrefix+"1@clean", key).Err())
	require.NoError(t, s.Client.SAdd(ctx, redislocks.ActiveOwnersKey, "1@clean").Err())

	du, err := url.Parse(db.URL)
	require.NoError(t, err)
	du.User = url.UserPassword(role, "pw")
	ru := &url.URL{Scheme: "redis", Host: s.Addr, Path: "/0", User: url.UserPassword(user, "pw")}
	env := map[string]string{"REAPER_REDIS_URL": ru.String(), "REAPER_DATABASE_URL": du.String(), "REAPER_LOG_FORMAT": "json"}
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, cli.Env{
		Args: []string{"doctor", "--output", "json"}, Stdout: &stdout, Stderr: &stderr, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	var rep doctor.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	for _, c := range rep.Checks {
		require.Equal(t, doctor.OK, c.Status, "%s: %s", c.Check, c.Evidence)
	}
	require.Len(t, rep.Checks, len(doctor.CheckNames))
	require.Equal(t, exitcode.OK, code)
	require.NotContains(t, stdout.String()+stderr.String(), ":pw@")

	// The text form says the same, one line per check.
	stdout.Reset()
	code = cli.Main(ctx, cli.Env{
		Args: []string{"doctor"}, Stdout: &stdout, Stderr: &stderr, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	require.Equal(t, exitcode.OK, code)
	require.Contains(t, stdout.String(), "lock-reaper doctor: 13 ok, 0 warnings, 0 failures")
}

// TestDoctorExitCodes: a failure is exit 1 and names its fix, warnings
// alone are exit 3, a stray argument is a usage error.
func TestDoctorExitCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	run := func(redisURL string, args ...string) (int, string) {
		env := map[string]string{"REAPER_REDIS_URL": redisURL, "REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json"}
		var stdout, stderr bytes.Buffer
		code := cli.Main(ctx, cli.Env{
			Args: append([]string{"doctor"}, args...), Stdout: &stdout, Stderr: &stderr, Version: "test",
			LookupEnv: testenv.LookupEnv(env),
		})
		return code, stdout.String() + stderr.String()
	}
	evicting := redisserver.Start(t, "--maxmemory-policy", "allkeys-lfu")
	code, out := run(evicting.URL(0))
	require.Equal(t, exitcode.Failed, code, out)
	require.Contains(t, out, "FAIL  redis-eviction")
	require.Contains(t, out, "fix: set maxmemory-policy noeviction")

	// A superuser and the default Redis user: more than a pass needs.
	code, out = run(redisserver.Start(t, "--appendonly", "yes").URL(0))
	require.Equal(t, exitcode.Warnings, code, out)
	require.Contains(t, out, "WARN  postgres-grants")
	require.Contains(t, out, "WARN  redis-acl")

	code, _ = run(evicting.URL(0), "extra")
	require.Equal(t, 2, code)
}

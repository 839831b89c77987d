package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/doctor"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestDoctorWithRedisDown points doctor at a Redis address nobody listens
// on: the reachability check fails once with the dial error, the checks
// that need Redis are skipped (a status of their own, in the text, its
// summary line and the JSON), and the dial error is written once to the
// logs as well. Stderr is a file, as a process's is, so that go-redis's own
// messages go through the command's logger (process-wide: this test does
// not run in parallel).
func TestDoctorWithRedisDown(t *testing.T) {
	db := testenv.NewDatabase(t)
	env := map[string]string{
		"REAPER_REDIS_URL": "redis://" + closedAddr(t) + "/0", "REAPER_REDIS_TIMEOUT": "1s",
		"REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json",
	}
	stderrFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderrFile.Close()
	var out bytes.Buffer
	code := Main(context.Background(), Env{
		Args: []string{"doctor"}, Stdout: &out, Stderr: stderrFile, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	require.Equal(t, exitcode.Failed, code, out.String())
	text := out.String()
	require.Regexp(t, `^lock-reaper doctor: \d+ ok, \d+ warnings?, 1 failure, 7 skipped \(not run: their service is unreachable\)\n`, text)
	require.Equal(t, 1, strings.Count(text, "connection refused"), "the dial error once:\n%s", text)
	require.Regexp(t, `\n  SKIP  redis-eviction +not run: Redis is unreachable \(see redis-reachable\)\n`, text)
	require.NotContains(t, text, "WARN  redis-eviction")

	logs, err := os.ReadFile(stderrFile.Name())
	require.NoError(t, err)
	warned := 0
	for _, line := range strings.Split(strings.TrimSpace(string(logs)), "\n") {
		if strings.Contains(line, `"msg":"redis client"`) && strings.Contains(line, `"level":"WARN"`) {
			warned++
		}
	}
	require.LessOrEqual(t, warned, 1, "go-redis's dial error at most once:\n%s", logs)

	code, stdout, _ := run(t, env, "doctor", "--output", "json")
	require.Equal(t, exitcode.Failed, code)
	var rep doctor.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, doctor.Fail, rep.Status)
	require.Equal(t, 7, rep.Counts[doctor.Skipped])
	require.Contains(t, stdout, `"skipped":7`)
	for _, c := range rep.Checks {
		switch c.Check {
		case doctor.CheckRedisReachable:
			require.Equal(t, doctor.Fail, c.Status)
		case doctor.CheckRedisEviction, doctor.CheckRedisACL, doctor.CheckLegacyOwners:
			require.Equal(t, doctor.Skipped, c.Status, c.Check)
			require.Empty(t, c.Fix, c.Check)
		}
	}
}

// TestAuditNamesTheMissingGrant: a role without SELECT on core_appstatus
// (created and dropped here, in the test's own database) fails the pass
// with the grant it lacks, the doctor check that lists every one, and the
// least-privilege file.
func TestAuditNamesTheMissingGrant(t *testing.T) {
	t.Parallel()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	ctx := context.Background()
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	role := "lr_cli_grant_" + hex.EncodeToString(suffix)
	ident := pgx.Identifier{role}.Sanitize()
	_, err := db.Pool.Exec(ctx, privilege.PostgresSQLFor(role, "pw"))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), "DROP OWNED BY "+ident)
		_, _ = db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+ident)
	})
	_, err = db.Pool.Exec(ctx, "REVOKE SELECT ON core_appstatus FROM "+ident)
	require.NoError(t, err)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "pw")

	code, out, stderr := run(t, map[string]string{"REAPER_REDIS_URL": r.URL, "REAPER_DATABASE_URL": u.String()}, "audit")
	require.Equal(t, exitcode.Usage, code, out+stderr)
	for _, want := range []string{
		"from PostgreSQL at ", ", user " + role + ": ",
		"permission denied for table core_appstatus",
		"The role \"" + role + "\" of database.url lacks a privilege lock-reaper needs on core_appstatus",
		// The role database.url logs in as, not the documentation's.
		"GRANT SELECT (pulp_id, name, app_type, ttl, last_heartbeat, versions) ON core_appstatus TO " + role + ";",
		"to the role \"" + role + "\" of database.url;",
		"`lock-reaper doctor` (its postgres-grants check)", "docs/security.md (internal/privilege/postgres.sql)",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out+stderr, "pw@")
}

// TestAuditNamesTheMissingACLCommand: a Redis user (on a redis-server of
// the test's own) whose ACL lacks SCAN fails the pass with the rule it
// lacks and where the rules are.
func TestAuditNamesTheMissingACLCommand(t *testing.T) {
	t.Parallel()
	s := redisserver.Start(t)
	db := testenv.NewDatabase(t)
	args := privilege.RedisSetUser("lr-cli", "pw")
	require.NoError(t, s.Client.Do(context.Background(), append(args, "-scan")...).Err())
	code, out, stderr := run(t, map[string]string{"REAPER_REDIS_URL": "redis://lr-cli:pw@" + s.Addr + "/0", "REAPER_DATABASE_URL": db.URL}, "audit")
	require.Equal(t, exitcode.Usage, code, out+stderr)
	for _, want := range []string{"NOPERM", "its ACL needs +scan", "`lock-reaper doctor` (its redis-acl check)", "internal/privilege/redis.acl"} {
		require.Contains(t, out, want)
	}
}

package cli

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// A port nobody listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func withDatabase(t *testing.T, raw, name, user string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.Path = "/" + name
	if user != "" {
		u.User = url.UserPassword(user, "s3cretpw")
	}
	return u.String()
}

func TestFailuresNameTheTargetAndTheActivity(t *testing.T) {
	t.Parallel()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	port := closedPort(t)

	code, out, _ := run(t, map[string]string{"REAPER_REDIS_URL": fmt.Sprintf("redis://127.0.0.1:%d/0", port), "REAPER_DATABASE_URL": db.URL, "REAPER_REDIS_TIMEOUT": "1s"}, "audit")
	require.Equal(t, exitcode.Failed, code, out)
	require.Contains(t, out, fmt.Sprintf("reading the remembered suspects from Redis at 127.0.0.1:%d (database 0): ", port))
	require.Contains(t, out, "is the address right and reachable from here?")

	// Configuration-shaped failures exit 2, and say what to check.
	u, err := url.Parse(r.URL)
	require.NoError(t, err)
	u.Path = "/99"
	code, out, _ = run(t, map[string]string{"REAPER_REDIS_URL": u.String(), "REAPER_DATABASE_URL": db.URL}, "audit")
	require.Equal(t, exitcode.Usage, code, out)
	require.Contains(t, out, "(database 99): ")
	require.Contains(t, out, "higher than this Redis has")

	for name, c := range map[string]struct{ url, want string }{
		"no such database": {withDatabase(t, db.URL, "lr_no_such_database", ""), "No such database"},
		"not pulp's":       {testenv.DatabaseURL(), "is this Pulp's database?"},
		"authentication":   {withDatabase(t, db.URL, db.Name, "lr_no_such_role"), "Authentication failed"},
	} {
		code, out, stderr := run(t, map[string]string{"REAPER_REDIS_URL": r.URL, "REAPER_DATABASE_URL": c.url}, "audit")
		require.Equal(t, exitcode.Usage, code, "%s: %s%s", name, out, stderr)
		require.Contains(t, out, "reading Pulp's workers and tasks from PostgreSQL at ", name)
		require.Contains(t, out, c.want, name)
		require.NotContains(t, out+stderr, "s3cretpw", name)
		// The commands that only read say the same.
		code, _, stderr = run(t, map[string]string{"REAPER_REDIS_URL": r.URL, "REAPER_DATABASE_URL": c.url}, "locks")
		require.Equal(t, exitcode.Usage, code, name)
		require.Contains(t, stderr, c.want, name)
	}
}

func TestRefusedTLSAttemptIsDropped(t *testing.T) {
	t.Parallel()
	msg := "begin snapshot transaction: failed to connect to `user=pulp database=pulp`:\n" +
		"\t10.0.0.5:5432 (db): tls error: server refused TLS connection\n" +
		"\t10.0.0.5:5432 (db): server error: FATAL: password authentication failed for user \"pulp\" (SQLSTATE 28P01)"
	got := dropRefusedTLS(msg)
	require.NotContains(t, got, "refused TLS")
	require.Equal(t, "begin snapshot transaction: failed to connect to `user=pulp database=pulp`: 10.0.0.5:5432 (db): server error: FATAL: password authentication failed for user \"pulp\" (SQLSTATE 28P01)", got)
	// Alone, the refusal is the error (sslmode=require against a server without TLS).
	alone := "failed to connect to `user=pulp database=pulp`: 10.0.0.5:5432 (db): tls error: server refused TLS connection"
	require.Equal(t, alone, dropRefusedTLS(alone))
}

func TestConfigShowsWhatTheDatabaseResolvesTo(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, map[string]string{"REAPER_DATABASE_URL": "postgres://pulp:s3cretpw@db.example:5433/pulp?sslmode=prefer"}, "config")
	require.Equal(t, exitcode.OK, code, stderr)
	for _, want := range []string{"#     host: db.example:5433", "#     database: pulp", "#     user: pulp", "#     password: xxxxx (set)", "sslmode=prefer", "#   redis: localhost:6379 (database 0)"} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "s3cretpw")
	require.False(t, strings.Contains(stderr, "s3cretpw"))
}

// TestFailureNamesTheStepThatFailed: a database that takes no writes is
// reported as that, at the database, not as a failure to read Redis.
func TestFailureNamesTheStepThatFailed(t *testing.T) {
	t.Parallel()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	code, out, stderr := run(t, map[string]string{"REAPER_REDIS_URL": r.URL, "REAPER_DATABASE_URL": u.String()}, "once")
	require.Equal(t, exitcode.Failed, code, out+stderr)
	require.Contains(t, out+stderr, "checking that the database takes writes in PostgreSQL at ")
	require.Contains(t, out+stderr, "gives read-only transactions")
	require.NotContains(t, out+stderr, "from Redis")
}

package cli

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/stretchr/testify/require"
)

// TestConfigRedactsDiscretePasswords: `lock-reaper config` shows the
// discrete connection settings but never their passwords, whether given as
// variables or as files.
func TestConfigRedactsDiscretePasswords(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"REAPER_DATABASE_HOST": "pulp-database-svc", "REAPER_DATABASE_USER": "pulp",
		"REAPER_DATABASE_PASSWORD": "hunter2-db", "REAPER_REDIS_HOST": "pulp-redis-svc",
		"REAPER_REDIS_PASSWORD": "hunter2-redis",
	}
	code, out, stderr := run(t, env, "config")
	require.Equal(t, exitcode.OK, code, stderr)
	require.NotContains(t, out+stderr, "hunter2")
	require.Contains(t, out, "host: pulp-database-svc")
	require.Contains(t, out, "host: pulp-redis-svc")
	require.Contains(t, out, "password: xxxxx")

	env["REAPER_DATABASE_PORT"] = "five"
	code, out, stderr = run(t, env, "config")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "REAPER_DATABASE_PORT")
	require.NotContains(t, out+stderr, "hunter2")
}

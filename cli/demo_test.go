package cli

import (
	"context"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestDemo runs the demo end to end and checks it removed what it created.
func TestDemo(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, nil, "demo", "--redis-url", testenv.RedisURL(), "--database-url", testenv.DatabaseURL())
	require.Equal(t, reaper.ExitOK, code, "%s\n%s", out, stderr)
	require.Contains(t, out, "still holds 543 task locks")
	require.Contains(t, out, "and 524 resource locks")
	require.Contains(t, out, "released 1067 holdings")
	require.Contains(t, out, "Removed the demo database")

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DatabaseURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	name := regexp.MustCompile(`lock_reaper_demo_[0-9a-f]+`).FindString(out)
	require.NotEmpty(t, name)
	var left int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&left))
	require.Zero(t, left, "the demo database was dropped")
}

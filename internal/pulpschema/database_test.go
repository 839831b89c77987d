package pulpschema_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestCreateAndDropDatabase: the demo's and the benchmark's throwaway
// database holds pulpcore's tables, and is gone once dropped.
func TestCreateAndDropDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name, dbURL, err := pulpschema.CreateDatabase(ctx, testenv.DatabaseURL(), "lr_schema_test_")
	require.NoError(t, err)
	t.Cleanup(func() { testenv.DropDatabase(name) })

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	var tasks int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM core_task").Scan(&tasks))
	require.Zero(t, tasks)
	require.NoError(t, conn.Close(ctx))

	require.NoError(t, pulpschema.DropDatabase(ctx, testenv.DatabaseURL(), name))
	admin, err := pgx.Connect(ctx, testenv.DatabaseURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	var exists bool
	require.NoError(t, admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists))
	require.False(t, exists)
}

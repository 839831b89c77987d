package cli

import (
	"context"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
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
	require.Contains(t, out, "so the audit reads 547 task locks and 532 resource holdings in all")
	require.Contains(t, out, "BLOCKS", "explain shows the queued task blocked before the pass")
	require.Contains(t, out, "Conclusion: ready to run", "and free after it")
	// The dead worker's one shared membership of the domain goes with one of
	// its task locks that reserve it, a running task's or a finished one's
	// as the task ids fall: 36 or 37 owner-dead holdings.
	dead := regexp.MustCompile(`owner-dead: (36|37) holdings`).FindStringIndex(out)
	finished := regexp.MustCompile(`task-finished: (1031|1030) holdings`).FindStringIndex(out)
	require.NotNil(t, dead, "the running tasks' locks")
	require.NotNil(t, finished, "the finished tasks' leftovers")
	require.Less(t, dead[0], finished[0], "the running tasks' locks come first")
	require.Regexp(t, `task:\S+\s+task\s+running\n\s+pulp:resource_lock:prn:rpm\.rpmrepository:\S+\s+exclusive`, out,
		"a running task and its repository lock come first")
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

// demo --keep leaves its state and says how to explore and remove it.
func TestDemoKeep(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, nil, "demo", "--keep", "--redis-url", testenv.RedisURL(), "--database-url", testenv.DatabaseURL())
	require.Equal(t, reaper.ExitOK, code, "%s\n%s", out, stderr)
	require.Contains(t, out, "The demo's state is kept (--keep)")
	name := regexp.MustCompile(`lock_reaper_demo_[0-9a-f]+`).FindString(out)
	require.NotEmpty(t, name)
	redisURL := regexp.MustCompile(`redis-cli -u '([^']+)' FLUSHDB`).FindStringSubmatch(out)
	require.Len(t, redisURL, 2, out)
	t.Cleanup(func() {
		testenv.DropDatabase(name)
		opts, err := redis.ParseURL(redisURL[1])
		if err == nil {
			c := redis.NewClient(opts)
			_ = c.FlushDB(context.Background()).Err()
			_ = c.Close()
		}
	})
	// The kept state answers the commands it prints.
	code, locks, stderr := run(t, nil, "locks", "--by-owner", "--redis-url", redisURL[1], "--database-url",
		regexp.MustCompile(`--database-url '([^']+)'`).FindStringSubmatch(out)[1])
	require.Equal(t, reaper.ExitOK, code, stderr)
	require.Contains(t, locks, "1@pulp-worker-incident-1")
}

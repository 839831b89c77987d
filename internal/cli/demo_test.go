package cli

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
)

// usedServers are a Redis and a PostgreSQL holding someone's data, as a
// production Redis and PostgreSQL would, started by the test.
type usedServers struct {
	redis *redisserver.Server
	pg    *pgcluster.Cluster
}

func startUsedServers(t *testing.T) *usedServers {
	t.Helper()
	s := &usedServers{redis: redisserver.Start(t), pg: pgcluster.StartPrimary(t)}
	require.NoError(t, s.redis.Client.Set(context.Background(), "pulp:resource_lock:prn:core.domain:x", "[]", 0).Err())
	s.pg.Exec(t, "postgres", "CREATE DATABASE pulp")
	return s
}

func (s *usedServers) env() map[string]string {
	return map[string]string{"REAPER_REDIS_URL": s.redis.URL(0), "REAPER_DATABASE_URL": s.pg.URL("pulp")}
}

// requireUntouched checks the servers hold just what startUsedServers put there.
func (s *usedServers) requireUntouched(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	keyspace, err := s.redis.Client.Info(ctx, "keyspace").Result()
	require.NoError(t, err)
	dbs := regexp.MustCompile(`(?m)^db\d+:keys=\d+`).FindAllString(keyspace, -1)
	require.Equal(t, []string{"db0:keys=1"}, dbs, "no key written in any database of the Redis:\n%s", keyspace)
	conn, err := pgx.Connect(ctx, s.pg.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var names []string
	require.NoError(t, conn.QueryRow(ctx, "SELECT array_agg(datname ORDER BY datname) FROM pg_database").Scan(&names))
	require.Equal(t, []string{"postgres", "pulp", "template0", "template1"}, names, "no database created on the PostgreSQL")
}

// TestDemo runs the demo end to end with REAPER_REDIS_URL and
// REAPER_DATABASE_URL pointing at servers that hold data: it builds the
// incident on servers of its own, writes nothing where the variables point,
// and removes what it created.
func TestDemo(t *testing.T) {
	t.Parallel()
	used := startUsedServers(t)
	code, out, stderr := run(t, used.env(), "demo")
	require.Equal(t, exitcode.OK, code, "%s\n%s", out, stderr)
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
	require.Contains(t, out, "blocked tasks wait on locks of finished tasks", "the page's words before the pass")
	require.Regexp(t, `As the status page reads the queue now, none of the \d+ waiting tasks is blocked by a stale or suspect lock`, out,
		"and after it")
	require.Contains(t, out, "Removed the demo database, flushed the demo's Redis database and stopped the servers it started.")
	for _, port := range []int{used.redis.Port, used.pg.Port} {
		require.NotContains(t, out, ":"+strconv.Itoa(port), "the demo never names the servers of the variables")
	}
	used.requireUntouched(t)
	dir := regexp.MustCompile(`/\S*lock-reaper-demo-\w+`).FindString(out + stderr)
	require.Empty(t, dir, "the throwaway servers' directory is not left behind nor shown")
}

// A server named by a demo flag that holds data the demo did not make is
// refused before anything is written to it.
func TestDemoRefusesServersWithData(t *testing.T) {
	t.Parallel()
	used := startUsedServers(t)
	empty := redisserver.Start(t)
	code, out, stderr := run(t, nil, "demo", "--redis-url", used.redis.URL(0), "--database-url", used.pg.URL("postgres"))
	require.Equal(t, exitcode.Failed, code, "%s\n%s", out, stderr)
	require.Contains(t, stderr, "database 0) holds 1 keys the demo did not make")

	code, out, stderr = run(t, nil, "demo", "--redis-url", empty.URL(3), "--database-url", used.pg.URL("postgres"))
	require.Equal(t, exitcode.Failed, code, "%s\n%s", out, stderr)
	require.Contains(t, stderr, "holds 1 databases the demo did not make (pulp)")
	require.NotContains(t, out, "Removed", "nothing was made, so nothing is said removed")
	used.requireUntouched(t)
	n, err := empty.Client.Do(context.Background(), "INFO", "keyspace").Text()
	require.NoError(t, err)
	require.NotContains(t, n, "keys=", "nothing left in the empty Redis")
}

// demo -h lists the flags that name its servers and says the variables are never used.
func TestDemoHelpNamesTargets(t *testing.T) {
	t.Parallel()
	_, out, stderr := run(t, nil, "demo", "-h")
	help := out + stderr
	for _, want := range []string{"-redis-url", "-database-url", "REAPER_REDIS_URL is never used", "REAPER_DATABASE_URL is never used", "-no-reap", "-keep"} {
		require.Contains(t, help, want)
	}
}

// demo --keep on servers given by its flags leaves its state and says how
// to explore and remove it.
func TestDemoKeep(t *testing.T) {
	t.Parallel()
	rs, pg := redisserver.Start(t), pgcluster.StartPrimary(t)
	code, out, stderr := run(t, nil, "demo", "--keep", "--redis-url", rs.URL(5), "--database-url", pg.URL("postgres"))
	require.Equal(t, exitcode.OK, code, "%s\n%s", out, stderr)
	require.Contains(t, out, "The demo's state is kept (--keep)")
	name := regexp.MustCompile(`lock_reaper_demo_[0-9a-f]+`).FindString(out)
	require.NotEmpty(t, name)
	redisURL := regexp.MustCompile(`redis-cli -u '([^']+)' FLUSHDB`).FindStringSubmatch(out)
	require.Len(t, redisURL, 2, out)
	require.Equal(t, rs.URL(5), redisURL[1], "the database the flag named")
	keyspace, err := rs.Client.Info(context.Background(), "keyspace").Result()
	require.NoError(t, err)
	require.False(t, strings.Contains(keyspace, "db0:"), "nothing written outside database 5:\n%s", keyspace)
	// The kept state answers the commands it prints.
	code, locks, stderr := run(t, nil, "locks", "--by-owner", "--redis-url", redisURL[1], "--database-url",
		regexp.MustCompile(`--database-url '([^']+)'`).FindStringSubmatch(out)[1])
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, locks, "1@pulp-worker-incident-1")
}

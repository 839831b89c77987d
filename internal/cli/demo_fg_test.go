package cli

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/config"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/redisserver"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/status"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// foreground is a demo running in the foreground, as `demo --no-reap
// --keep` does until Ctrl-C (stop).
type foreground struct {
	out, errOut *testenv.SyncBuffer
	stop        context.CancelFunc
	done        chan int
}

// startForeground runs the demo with fn on its own goroutine and waits
// until it says it keeps the workers beating, or has returned.
func startForeground(t *testing.T, fn func(ctx context.Context, env Env) int) *foreground {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &foreground{out: &testenv.SyncBuffer{}, errOut: &testenv.SyncBuffer{}, stop: cancel, done: make(chan int, 1)}
	t.Cleanup(cancel)
	env := Env{Stdout: f.out, Stderr: f.errOut, Version: "test", LookupEnv: testenv.LookupEnv(nil)}
	go func() { f.done <- fn(ctx, env) }()
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(f.out.String(), "press Ctrl-C") {
		select {
		case code := <-f.done:
			t.Fatalf("the demo returned %d before holding the incident:\n%s\n%s", code, f.out, f.errOut)
		case <-time.After(200 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the demo never held the incident:\n%s", f.out)
	}
	return f
}

// interrupt is Ctrl-C: the demo returns.
func (f *foreground) interrupt(t *testing.T) int {
	t.Helper()
	f.stop()
	select {
	case code := <-f.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("the demo did not return after Ctrl-C:\n%s", f.out)
		return -1
	}
}

// keptURLs are the Redis and PostgreSQL URLs of a kept demo's printed commands.
func keptURLs(t *testing.T, out string) (redisURL, dbURL string) {
	t.Helper()
	r := regexp.MustCompile(`--redis-url '([^']+)'`).FindStringSubmatch(out)
	d := regexp.MustCompile(`--database-url '([^']+)'`).FindStringSubmatch(out)
	require.Len(t, r, 2, out)
	require.Len(t, d, 2, out)
	return r[1], d[1]
}

// pageCounts reads the kept state as the status page does and returns its
// headline's counts: blocked and waiting tasks, and the blocked tasks by
// the verdict of the lock in their way.
func pageCounts(t *testing.T, redisURL, dbURL string) (blocked, waiting int, byVerdict map[judge.Verdict]int) {
	t.Helper()
	ctx := context.Background()
	opts, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	r, err := reaper.New(config.Default().Pass, rdb, pool, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	in, err := r.Inspect(ctx, reaper.InspectOptions{})
	require.NoError(t, err)
	pages := status.New(r, status.Options{})
	pages.Publish(ctx, in, 0, time.Time{})
	v := pages.View()
	byVerdict = map[judge.Verdict]int{}
	for _, c := range v.BlockingCauses() {
		for _, n := range c.Verdicts {
			byVerdict[n.Verdict] += n.Count
		}
	}
	return v.Blocked, v.QueueTotal, byVerdict
}

// liveBeatAge is how long ago, on the database clock, the live worker that
// beat least recently beat.
func liveBeatAge(t *testing.T, pool *pgxpool.Pool, dead string) time.Duration {
	t.Helper()
	var age time.Duration
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT max(now() - last_heartbeat) FROM core_appstatus WHERE name <> $1`, dead).Scan(&age))
	return age
}

// The demo's words on what blocks the queue are the status page's: its
// counts by verdict of the lock in the way, most tasks first, and on the
// incident most blocked tasks wait on locks of finished tasks.
func requireDemoWordsMatchPage(t *testing.T, out, redisURL, dbURL string) {
	t.Helper()
	blocked, waiting, byVerdict := pageCounts(t, redisURL, dbURL)
	finished, dead := byVerdict[judge.VerdictTaskFinished], byVerdict[judge.VerdictOwnerDead]
	require.Positive(t, dead, "a dead worker's running tasks block some queued tasks")
	require.Greater(t, finished, dead, "most blocked tasks wait on locks of finished tasks")
	require.Equal(t, blocked, finished+dead, "no other cause in the incident")
	require.Contains(t, out, fmt.Sprintf("%d of %d waiting tasks are blocked;\n%d of %d blocked tasks wait on locks of finished tasks, %d on a dead worker's locks.",
		blocked, waiting, finished, blocked, dead))
	require.NotContains(t, out, "The ones that\nblock the queue now are the owner-dead ones", "the words the page contradicted")
}

// demo --no-reap --keep keeps the live workers beating in the foreground
// for longer than their TTL, so the kept incident does not decay into a
// mass death; Ctrl-C stops them, says so, and keeps the state.
func TestDemoNoReapKeepBeats(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts servers and waits out three TTLs")
	}
	rs, pg := redisserver.Start(t).URL(5), pgcluster.StartPrimary(t).URL("postgres")
	spec := sim.SmallIncident()
	spec.TTL = 2 * time.Second
	f := startForeground(t, func(ctx context.Context, env Env) int {
		return runDemo(ctx, env, demoOptions{redisURL: rs, adminURL: pg, limit: 8, keep: true, noReap: true, spec: spec})
	})
	_, dbURL := keptURLs(t, f.out.String())
	require.NotContains(t, f.out.String(), "heartbeats stopped with the demo")
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	dead := "1@pulp-worker-incident-0"
	for end := time.Now().Add(3 * spec.TTL); time.Now().Before(end); time.Sleep(spec.TTL / 4) {
		require.Less(t, liveBeatAge(t, pool, dead), spec.TTL, "every live worker beat within its TTL")
	}
	require.Equal(t, exitcode.OK, f.interrupt(t), f.errOut.String())
	out := f.out.String()
	require.Contains(t, out, "Stopped the live workers' heartbeats; the state is kept. After their TTL (2s)")
	require.NotContains(t, out, "Removed the demo database")
	time.Sleep(spec.TTL + spec.TTL/2)
	require.GreaterOrEqual(t, liveBeatAge(t, pool, dead), spec.TTL, "no beat after Ctrl-C")
}

// A demo refused at setup claims to have removed nothing: it made nothing.
func TestDemoSetupFailureClaimsNothing(t *testing.T) {
	t.Parallel()
	used := startUsedServers(t)
	empty := redisserver.Start(t)
	code, out, stderr := run(t, nil, "demo", "--redis-url", empty.URL(5), "--database-url", used.pg.URL("postgres"))
	require.Equal(t, exitcode.Failed, code, "%s\n%s", out, stderr)
	require.Contains(t, stderr, "holds 1 databases the demo did not make")
	for _, claim := range []string{"Removed", "removed", "flushed", "stopped"} {
		require.NotContains(t, out+stderr, claim, "nothing was made, so nothing is said removed")
	}
}

// The headline's words: most tasks first, "all" for one verdict, none blocked.
func TestDemoQueueCausesHeadline(t *testing.T) {
	t.Parallel()
	q := queueCauses{waiting: 201, blocked: 101, byVerdict: []status.VerdictCount{
		{Verdict: judge.VerdictTaskFinished, Count: 83}, {Verdict: judge.VerdictOwnerDead, Count: 18}}}
	require.Equal(t, "83 of 101 blocked tasks wait on locks of finished tasks, 18 on a dead worker's locks", q.headline())
	p := q.paragraph()
	require.Contains(t, p, "101 of 201 waiting tasks are blocked")
	require.Less(t, strings.Index(p, "(task-finished)"), strings.Index(p, "(owner-dead)"), "the cause of most first")
	q = queueCauses{waiting: 5, blocked: 2, byVerdict: []status.VerdictCount{{Verdict: judge.VerdictOwnerDead, Count: 2}}}
	require.Equal(t, "all 2 blocked tasks wait on a dead worker's locks", q.headline())
	require.Equal(t, "none of the 5 waiting tasks is blocked by a stale or suspect lock", queueCauses{waiting: 5}.headline())
}

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/promtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// runFleet is a small incident in real Redis and PostgreSQL whose live
// workers stay alive for the test.
type runFleet struct {
	redis *testenv.Redis
	db    *testenv.Database
	inc   *sim.Incident
}

func newRunFleet(t *testing.T) *runFleet {
	t.Helper()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, sim.IncidentSpec{
		DeadTaskLocks: 10, DeadResourceLocks: 5, DeadRunning: 2, DeadClaimed: 1,
		LegacyFraction: 0.3, LiveWorkers: 3, QueuedTasks: 3,
	})
	require.NoError(t, err)
	stop := inc.KeepAliveInBackground(ctx, db.Pool)
	t.Cleanup(func() { require.NoError(t, stop()) })
	return &runFleet{redis: r, db: db, inc: inc}
}

// runLogs collects the JSON log records a command writes to stderr, so a
// test can wait for one: the daemon's logs are its signals.
type runLogs struct {
	mu      sync.Mutex
	partial bytes.Buffer
	records []map[string]any
	changed chan struct{} // closed and replaced on every new record
}

func newRunLogs() *runLogs { return &runLogs{changed: make(chan struct{})} }

func (l *runLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial.Write(p)
	for {
		line, err := l.partial.ReadBytes('\n')
		if err == io.EOF {
			l.partial.Write(line) // an incomplete line waits for its end
			return len(p), nil
		}
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			rec = map[string]any{"msg": "(not JSON) " + string(line)}
		}
		l.records = append(l.records, rec)
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// waitFor returns the first record at or after *from that match accepts, and
// moves *from past it. The deadline only keeps a broken test from hanging.
func (l *runLogs) waitFor(t *testing.T, from *int, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		l.mu.Lock()
		for ; *from < len(l.records); *from++ {
			if rec := l.records[*from]; match(rec) {
				*from++
				l.mu.Unlock()
				return rec
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no matching log record within a minute; logs:\n%s", l.String())
		}
	}
}

func (l *runLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.records {
		j, _ := json.Marshal(r)
		b.Write(append(j, '\n'))
	}
	return b.String()
}

func msgIs(msg string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["msg"] == msg }
}

// startedRun is `lock-reaper run` started through Main in the background.
type startedRun struct {
	logs   *runLogs
	base   string // http://host:port it listens on
	cancel context.CancelFunc
	exit   chan int
	seen   int // records looked at by waitFor so far
}

// startRun starts `lock-reaper run args...` with the environment env and
// waits for the address it listens on, which the "daemon started" record
// names (the tests bind port 0).
func startRun(t *testing.T, env map[string]string, args ...string) *startedRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &startedRun{logs: newRunLogs(), cancel: cancel, exit: make(chan int, 1)}
	go func() {
		r.exit <- Main(ctx, Env{
			Args: append([]string{"run"}, args...), Stdout: io.Discard, Stderr: r.logs, Version: "test",
			LookupEnv: testenv.LookupEnv(env),
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-r.exit
	})
	started := r.waitFor(t, msgIs("daemon started"))
	r.base = "http://" + started["addr"].(string)
	return r
}

func (r *startedRun) waitFor(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	return r.logs.waitFor(t, &r.seen, match)
}

// stop cancels the daemon as SIGTERM would and returns its exit code.
func (r *startedRun) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.exit:
		r.exit <- code // for the cleanup
		return code
	case <-time.After(time.Minute):
		t.Fatal("run did not stop within a minute")
		return -1
	}
}

func (r *startedRun) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func (r *startedRun) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	return promtest.Scrape(t, r.base+"/metrics")
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestRunReapsAndServesMetrics runs `lock-reaper run` as an operator would,
// configured through flags and the environment: its first pass scans the
// keyspace and releases every stale lock, /readyz and /livez answer 200,
// /metrics shows what was released and the build, the next passes read only
// the registry, and a cancel (SIGTERM) stops it with exit code 0.
func TestRunReapsAndServesMetrics(t *testing.T) {
	t.Parallel()
	f := newRunFleet(t)
	env := servicesEnv(f.redis, f.db)
	env["REAPER_LOG_LEVEL"] = "debug"
	env["REAPER_FULL_SCAN_INTERVAL"] = "1h"
	r := startRun(t, env, "--schedule", "@every 1s", "--jitter", "0s", "--listen", "127.0.0.1:0")

	first := r.waitFor(t, msgIs("pass completed"))
	require.Equal(t, "success", first["result"])
	require.Equal(t, true, first["full_scan"])
	require.Equal(t, float64(len(f.inc.Stale)), first["released"])
	holdings, err := sim.ScanHoldings(context.Background(), f.redis.Client)
	require.NoError(t, err)
	require.ElementsMatch(t, f.inc.Healthy, holdings, "exactly the healthy holdings remain")

	code, body := r.get(t, "/readyz")
	require.Equal(t, http.StatusOK, code, body)
	code, _ = r.get(t, "/livez")
	require.Equal(t, http.StatusOK, code)
	m := r.scrape(t)
	require.Contains(t, m, `lock_reaper_build_info{goversion="`+runtime.Version()+`",version="test"}`)
	released := 0.0
	for key, v := range m {
		if strings.HasPrefix(key, "lock_reaper_holdings_released_total{") {
			require.True(t, strings.Contains(key, `verdict="owner-dead"`) || strings.Contains(key, `verdict="task-finished"`) || v == 0, key)
			released += v
		}
	}
	require.Equal(t, float64(len(f.inc.Stale)), released)
	require.Positive(t, m[`lock_reaper_holdings_released_total{kind="task",verdict="owner-dead"}`])
	require.Equal(t, float64(len(f.inc.Cancel)), m[`lock_reaper_tasks_updated_total{verdict="lost"}`])
	require.GreaterOrEqual(t, m[`lock_reaper_passes_total{result="success"}`], 1.0)

	next := r.waitFor(t, msgIs("pass completed"))
	require.Equal(t, false, next["full_scan"], "between full scans a pass reads only the registry")
	require.Equal(t, float64(0), next["released"])

	require.Equal(t, exitcode.OK, r.stop(t))
	r.waitFor(t, msgIs("daemon stopped"))
	_, err = http.Get(r.base + "/livez")
	require.Error(t, err, "the listener is closed")
}

// TestRunSurvivesAnUnreachableRedis points the daemon at a closed port:
// every pass fails and is counted, the daemon stays up, alive and unready,
// and stops cleanly.
func TestRunSurvivesAnUnreachableRedis(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	env := map[string]string{
		"REAPER_REDIS_URL": "redis://" + closedAddr(t) + "/0", "REAPER_REDIS_TIMEOUT": "1s",
		"REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json",
		"REAPER_SCHEDULE": "@every 1s", "REAPER_JITTER": "0s", "REAPER_LISTEN": "127.0.0.1:0",
	}
	r := startRun(t, env)

	// The first pass may fail before "daemon started" is logged: look from
	// the first record.
	first := 0
	retry := r.logs.waitFor(t, &first, msgIs("pass will be retried"))
	require.Equal(t, "failed", retry["result"])
	require.Equal(t, float64(1), retry["consecutive_failures"])
	code, body := r.get(t, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "no pass has completed yet\n", body)
	code, _ = r.get(t, "/livez")
	require.Equal(t, http.StatusOK, code)
	m := r.scrape(t)
	require.GreaterOrEqual(t, m[`lock_reaper_passes_total{result="failed"}`], 1.0)
	require.Zero(t, m[`lock_reaper_passes_total{result="success"}`])
	require.NotContains(t, m, "lock_reaper_last_success_timestamp_seconds")

	r.logs.waitFor(t, &first, msgIs("pass will be retried"))
	require.Equal(t, exitcode.OK, r.stop(t), "failed passes never end the daemon; a cancel ends it with 0")
}

func TestRunRefusesBadConfigurationAndBusyPort(t *testing.T) {
	t.Parallel()
	code, _, stderr := run(t, map[string]string{"REAPER_SCHEDULE": "every minute"}, "run")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "schedule")

	code, _, _ = run(t, nil, "run", "--force")
	require.Equal(t, exitcode.Usage, code, "run has no --force")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	db := testenv.NewDatabase(t)
	code, _, stderr = run(t, map[string]string{"REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json"},
		"run", "--listen", busy.Addr().String())
	require.Equal(t, exitcode.Failed, code)
	require.Contains(t, stderr, "daemon did not start")
	require.Contains(t, stderr, busy.Addr().String())
}

func TestUsageListsRun(t *testing.T) {
	t.Parallel()
	code, stderr, _ := run(t, nil, "help")
	require.Equal(t, exitcode.OK, code)
	sc := bufio.NewScanner(strings.NewReader(stderr))
	found := false
	for sc.Scan() {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "run ") {
			found = true
		}
	}
	require.True(t, found, stderr)
}

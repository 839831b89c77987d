// Package browser tests the status page in a real browser: Playwright
// (playwright-core) driving Debian's chromium, with axe-core, over the
// demo's incident, first through `lock-reaper status` before the reap, then
// through the daemon of `lock-reaper run` after it.
//
// It needs node, /usr/bin/chromium (or $CHROMIUM) and `npm ci` run in this
// folder; .ci/run installs them. Without them the test is skipped, except
// under CI, where it fails.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/cli"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/status"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// browserCase is what check.mjs is told about the incident.
type browserCase struct {
	Blocked    string   `json:"blocked"`
	Resource   string   `json:"resource"`
	DeadOwner  string   `json:"deadOwner"`
	LiveOwner  string   `json:"liveOwner"`
	Queued     []string `json:"queued"`
	ProfileDir string   `json:"profileDir"`
	Shots      string   `json:"shots"`
}

func TestStatusPageInABrowser(t *testing.T) {
	chromium := envOr("CHROMIUM", "/usr/bin/chromium")
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node"
	case !exists(chromium):
		missing = chromium
	case !exists("node_modules/playwright-core") || !exists("node_modules/axe-core"):
		missing = "node_modules (run npm ci in e2e/browser)"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the browser test needs %s; .ci/run installs it", missing)
		}
		t.Skipf("the browser test needs %s", missing)
	}
	ctx := context.Background()
	rdb, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	inc, err := sim.BuildIncident(ctx, rdb.Client, db.Pool, sim.DemoIncident())
	require.NoError(t, err)
	stopBeat := inc.KeepAliveInBackground(context.WithoutCancel(ctx), db.Pool)
	t.Cleanup(func() { _ = stopBeat() })

	c := browserCase{DeadOwner: inc.DeadOwner, LiveOwner: inc.LiveOwners[0], Queued: inc.Queued, ProfileDir: t.TempDir(),
		Shots: envOr("STATUS_SCREENSHOTS", t.TempDir())}
	record := pickBlocked(t, rdb, db, &c)
	env := map[string]string{"REAPER_REDIS_URL": rdb.URL, "REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json",
		"REAPER_KUBERNETES_ENABLED": "false"}

	// Before the reap: `lock-reaper status`, read-only.
	addr := freeAddr(t)
	stop := runCommand(t, env, "status", "--listen", addr, "--every", "1s")
	waitFor(t, "http://"+addr+"/", http.StatusOK)
	runCheck(t, node, chromium, "before", "http://"+addr, c)
	runCheck(t, node, chromium, "phone", "http://"+addr, c)
	stop()

	// The daemon reaps on its first pass; then the task runs, as a worker
	// would run it: pulpcore's own acquire script takes its locks, which
	// only succeeds once nothing holds them, and the worker claims it.
	addr = freeAddr(t)
	env["REAPER_LISTEN"], env["REAPER_SCHEDULE"] = addr, "@every 1s"
	stop = runCommand(t, env, "run")
	defer stop()
	waitFor(t, "http://"+addr+"/", http.StatusOK)
	exclusive, shared := sim.SplitReserved(record)
	require.Eventually(t, func() bool {
		blocked, err := sim.Acquire(ctx, rdb.Client, c.Blocked, inc.LiveOwners[0], exclusive, shared)
		return err == nil && len(blocked) == 0
	}, 30*time.Second, 200*time.Millisecond, "the blocked task's locks are free after the reap")
	_, err = db.Pool.Exec(ctx, `UPDATE core_task SET state = 'running', app_lock_id = $2, started_at = now() WHERE pulp_id = $1`, c.Blocked, inc.LiveAppStatusIDs[0])
	require.NoError(t, err)
	// Until a pass has read Redis after the claim, the page shows the reaping
	// pass's view, whose Redis read came before the release, beside the task
	// rows it reads fresh: the task then looks unprotected. A fixed sleep of
	// two passes was too short on a loaded machine.
	require.Eventually(t, func() bool {
		return strings.Contains(get(t, "http://"+addr+"/tasks/"+c.Blocked), `id="task-status"><strong>running</strong>`)
	}, time.Minute, 200*time.Millisecond, "the task page shows the task running")
	runCheck(t, node, chromium, "after", "http://"+addr, c)
}

// pickBlocked finds, as the page does, the oldest queued task a stale lock
// blocks, and the first resource in its way; it returns its record.
func pickBlocked(t *testing.T, rdb *testenv.Redis, db *testenv.Database, c *browserCase) []string {
	t.Helper()
	r, err := reaper.New(passConfig(), rdb.Client, db.Pool, nil)
	require.NoError(t, err)
	in, err := r.Inspect(context.Background(), reaper.InspectOptions{})
	require.NoError(t, err)
	s := status.New(r, status.Options{})
	s.Publish(context.Background(), in, 0, time.Time{})
	for _, q := range s.View().Queue {
		if q.Blocked() && q.Chain[0].Resource != "" {
			c.Blocked, c.Resource = q.Row.ID, q.Chain[0].Resource
			return q.Row.Reserved
		}
	}
	t.Fatal("no queued task is blocked by the dead owner")
	return nil
}

// runCommand runs a lock-reaper command in this process, as main does, and
// returns what stops it and waits for it.
func runCommand(t *testing.T, env map[string]string, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	var mu sync.Mutex
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, cli.Env{Args: args, Stdout: &lockedWriter{&mu, &out}, Stderr: &lockedWriter{&mu, &out},
			LookupEnv: testenv.LookupEnv(env)})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			code := <-done
			mu.Lock()
			defer mu.Unlock()
			if code != 0 {
				t.Errorf("lock-reaper %s exited %d:\n%s", strings.Join(args, " "), code, out.String())
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func runCheck(t *testing.T, node, chromium, phase, base string, c browserCase) {
	t.Helper()
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs", phase, base, string(raw))
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "browser checks of phase %s failed", phase)
}

// waitFor polls url until it answers want.
// get is the body of url, "" when it cannot be read.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return ""
	}
	return string(body)
}

func waitFor(t *testing.T, url string, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == want
	}, time.Minute, 100*time.Millisecond, "%s answers %d", url, want)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// passConfig is the default configuration with the tests' heartbeat_recheck.
func passConfig() reaper.Config {
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	return cfg
}

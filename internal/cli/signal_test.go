package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/faultproxy"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// The signal tests build the real binary and stop it in the middle of a pass
// the ways an operator or Kubernetes does: SIGTERM or SIGINT (the pass
// finishes the batch in flight, records nothing half-done and exits 1) and
// SIGKILL (nothing runs at all). Either way the next pass converges, and no
// healthy lock is ever lost.

// sgBatch is the batch size of the interrupted passes: small, so that a pass
// has many batches to be interrupted between.
const sgBatch = 10

// sgBuild builds lock-reaper as `go build` does and returns its path.
func sgBuild(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "lock-reaper")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// sgFleet is an incident big enough for a pass of many batches, and its
// services; its live workers keep beating until the test ends.
type sgFleet struct {
	redis *testenv.Redis
	db    *testenv.Database
	inc   *sim.Incident
}

func sgBuildFleet(t *testing.T) *sgFleet {
	t.Helper()
	ctx := context.Background()
	fl := &sgFleet{redis: testenv.NewRedis(t), db: testenv.NewDatabase(t)}
	spec := sim.IncidentSpec{
		DeadTaskLocks: 300, DeadResourceLocks: 200, DeadRunning: 20, DeadClaimed: 20, DeadUnclaimed: 5, DeadMissing: 5,
		LegacyFraction: 0.1, LiveWorkers: 4, QueuedTasks: 20,
	}
	var err error
	fl.inc, err = sim.BuildIncident(ctx, fl.redis.Client, fl.db.Pool, spec)
	require.NoError(t, err)
	stop := fl.inc.KeepAliveInBackground(ctx, fl.db.Pool)
	t.Cleanup(func() { _ = stop() })
	return fl
}

// env is the environment of a lock-reaper process on this fleet; redisAddr,
// when set, replaces the Redis server's address (a fault proxy).
func (fl *sgFleet) env(redisAddr string) []string {
	redisURL := fl.redis.URL
	if redisAddr != "" {
		redisURL = fmt.Sprintf("redis://%s/%d", redisAddr, fl.redis.DB)
	}
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"REAPER_REDIS_URL=" + redisURL, "REAPER_DATABASE_URL=" + fl.db.URL,
		"REAPER_LOG_FORMAT=json", "REAPER_OUTPUT=json", fmt.Sprintf("REAPER_REDIS_BATCH_SIZE=%d", sgBatch),
		"REAPER_HEARTBEAT_RECHECK=" + testenv.HeartbeatRecheckEnv,
	}
}

// stale reports whether each stale holding is still held.
func (fl *sgFleet) held(t *testing.T) map[sim.Holding]bool {
	t.Helper()
	hs, err := sim.ScanHoldings(context.Background(), fl.redis.Client)
	require.NoError(t, err)
	held := map[sim.Holding]bool{}
	for _, h := range hs {
		h.Registered = false
		held[h] = true
	}
	return held
}

func (fl *sgFleet) requireHealthy(t *testing.T) {
	t.Helper()
	held := fl.held(t)
	for _, h := range fl.inc.Healthy {
		h.Registered = false
		require.True(t, held[h], "healthy holding lost: %+v", h)
	}
}

// requireConverged checks what a complete pass leaves: exactly the healthy
// holdings, the dead worker's tasks canceled or requeued, the rest as it was.
func (fl *sgFleet) requireConverged(t *testing.T) {
	t.Helper()
	hs, err := sim.ScanHoldings(context.Background(), fl.redis.Client)
	require.NoError(t, err)
	require.ElementsMatch(t, fl.inc.Healthy, hs)
	states := taskStates(t, fl.db)
	for _, id := range fl.inc.Cancel {
		require.Equal(t, "canceled", states[id].state, id)
	}
	for _, id := range fl.inc.Requeue {
		require.Equal(t, taskState{"waiting", false}, states[id], id)
	}
	for _, id := range fl.inc.Running {
		require.Equal(t, "running", states[id].state, id)
	}
}

// sgStartPass starts `lock-reaper once` and returns once it has released its
// first batch, with its stdout so far and a channel that yields its exit.
func sgStartPass(t *testing.T, bin string, env []string) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(bin, "once")
	cmd.Env = env
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	releasing := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		lines := bufio.NewScanner(stderr)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		signaled := false
		for lines.Scan() {
			if !signaled && strings.Contains(lines.Text(), `"msg":"released holding"`) {
				signaled = true
				close(releasing)
			}
		}
		if !signaled {
			close(releasing)
		}
	}()
	<-releasing
	exited := make(chan error, 1)
	go func() {
		<-drained // Wait closes the pipe: read it to the end first
		exited <- cmd.Wait()
	}()
	return cmd, &stdout, exited
}

// sgRun runs the binary to its end and returns its exit code and report.
func sgRun(t *testing.T, bin string, env []string, args ...string) (int, reaper.Report) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	var rep reaper.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	return cmd.ProcessState.ExitCode(), rep
}

// sgAwaitPassLockFree waits until PostgreSQL has let go of the pass lock of a
// killed process: the server frees it once it notices the session ended, and
// until then a new pass rightly skips.
func sgAwaitPassLockFree(t *testing.T, db *testenv.Database) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got bool
		// A session lock, taken and given back on the same connection.
		err := db.Pool.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
			if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", pulpdb.PassLockKey).Scan(&got); err != nil || !got {
				return err
			}
			_, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", pulpdb.PassLockKey)
			return err
		})
		require.NoError(t, err)
		if got {
			return
		}
		require.True(t, time.Now().Before(deadline), "the server kept a dead process's pass lock")
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSignalStopsBetweenBatches: SIGTERM (Kubernetes stopping a pod) and
// SIGINT (Ctrl-C) during the releases let the batch in flight finish, start
// no other, update no task, report every holding as released or failed (a
// failed one untouched), and exit 1. The next pass finishes the work.
func TestSignalStopsBetweenBatches(t *testing.T) {
	t.Parallel()
	bin := sgBuild(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			fl := sgBuildFleet(t)
			// Slow Redis down, so that the pass is still releasing when the
			// signal lands whatever the machine's speed.
			proxy, err := faultproxy.Start(fl.redis.Client.Options().Addr)
			require.NoError(t, err)
			defer proxy.Close()
			proxy.SetDelay(2 * time.Millisecond)
			before := taskStates(t, fl.db)

			cmd, stdout, exited := sgStartPass(t, bin, fl.env(proxy.Addr()))
			require.NoError(t, cmd.Process.Signal(sig))
			var exit *exec.ExitError
			require.ErrorAs(t, <-exited, &exit)
			require.Equal(t, exitcode.Failed, exit.ExitCode())

			var rep reaper.Report
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
			require.Contains(t, rep.Error, "context canceled")
			require.Contains(t, rep.Error, "stopped while releasing locks in Redis at ", "the error names the step and the system")
			require.NotContains(t, rep.Error, "reading Pulp's locks")
			held := fl.held(t)
			released, failed := 0, 0
			for _, f := range rep.Findings {
				h := sim.Holding{Key: f.Key, Owner: f.Owner, Kind: sim.HoldingKind(f.Kind.String())}
				switch f.Result {
				case reaper.ResultReleased:
					released++
					require.False(t, held[h], "reported released, still held: %+v", h)
				case reaper.ResultFailed:
					failed++
					require.True(t, held[h], "reported failed, but gone: %+v", h)
				default:
					require.Failf(t, "unexpected result", "%s: %s", f.Key, f.Result)
				}
			}
			require.Positive(t, released, "the batch in flight finished")
			require.Positive(t, failed, "the pass stopped before its end")
			require.Zero(t, released%sgBatch, "only whole batches were released")
			for _, tf := range rep.Tasks {
				require.Equal(t, reaper.ResultFailed, tf.Result, "no task updated after the signal")
			}
			require.Equal(t, before, taskStates(t, fl.db))
			fl.requireHealthy(t)

			code, rep := sgRun(t, bin, fl.env(""), "once")
			require.Equal(t, exitcode.OK, code, rep.Error)
			require.Equal(t, failed, rep.Summary.Released)
			fl.requireConverged(t)
			code, _ = sgRun(t, bin, fl.env(""), "audit")
			require.Equal(t, exitcode.OK, code)
		})
	}
}

// TestSignalKillThenRerun: SIGKILL in the middle of the releases leaves each
// batch either applied whole or not at all (one atomic script each), loses
// no healthy lock, and the next pass converges.
func TestSignalKillThenRerun(t *testing.T) {
	t.Parallel()
	bin := sgBuild(t)
	fl := sgBuildFleet(t)
	proxy, err := faultproxy.Start(fl.redis.Client.Options().Addr)
	require.NoError(t, err)
	defer proxy.Close()
	proxy.SetDelay(2 * time.Millisecond)

	cmd, _, exited := sgStartPass(t, bin, fl.env(proxy.Addr()))
	require.NoError(t, cmd.Process.Kill())
	<-exited
	fl.requireHealthy(t)

	sgAwaitPassLockFree(t, fl.db)
	code, rep := sgRun(t, bin, fl.env(""), "once")
	require.Equal(t, exitcode.OK, code, rep.Error)
	require.Empty(t, rep.Skipped)
	fl.requireConverged(t)
	code, _ = sgRun(t, bin, fl.env(""), "audit")
	require.Equal(t, exitcode.OK, code)
}

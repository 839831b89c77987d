package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestJSONLogDurationsInSeconds: a duration in a JSON log is a number of
// seconds, as in the report, under a name ending in _seconds; text logs keep
// Go's duration text under the plain name.
func TestJSONLogDurationsInSeconds(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	logger, err := newLogger(&b, "json", "info")
	require.NoError(t, err)
	logger.Info("released holding", slog.Duration("heartbeat_age", 90*time.Minute+1500*time.Microsecond),
		slog.Group("pass", slog.Duration("took", 250*time.Millisecond)))
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &rec))
	require.Equal(t, 5400.002, rec["heartbeat_age_seconds"])
	require.NotContains(t, rec, "heartbeat_age")
	require.Equal(t, map[string]any{"took_seconds": 0.25}, rec["pass"])

	b.Reset()
	logger.Info("named already", slog.Duration("grace_seconds", 2*time.Second))
	require.Contains(t, b.String(), `"grace_seconds":2`)

	b.Reset()
	logger, err = newLogger(&b, "text", "info")
	require.NoError(t, err)
	logger.Info("released holding", slog.Duration("heartbeat_age", 90*time.Minute))
	require.Contains(t, b.String(), "heartbeat_age=1h30m0s")
}

// TestJSONLogsWithRedisDown: with Redis unreachable every line a pass writes
// to stderr is one JSON object, go-redis's own complaints included. Stderr is
// a file, as a process's is (go-redis's logger is process-wide, so only a
// command logging to a file takes it); the test does not run in parallel, so
// that no other command takes it meanwhile.
func TestJSONLogsWithRedisDown(t *testing.T) {
	env := map[string]string{
		"REAPER_REDIS_URL":     "redis://" + closedAddr(t) + "/0",
		"REAPER_REDIS_TIMEOUT": "1s",
		"REAPER_DATABASE_URL":  "postgres://postgres@" + closedAddr(t) + "/pulp?sslmode=disable",
		"REAPER_LOG_FORMAT":    "json",
	}
	stderrFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderrFile.Close()
	var out bytes.Buffer
	code := Main(context.Background(), Env{
		Args: []string{"audit", "--output", "json"}, Stdout: &out, Stderr: stderrFile, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
	})
	raw, err := os.ReadFile(stderrFile.Name())
	require.NoError(t, err)
	stderr := string(raw)
	require.Equal(t, exitcode.Failed, code, stderr)
	require.Equal(t, 1, strings.Count(out.String(), "\n"), "the report is one line")
	var rep reaper.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.NotEmpty(t, rep.Error)

	msgs := map[string]int{}
	s := bufio.NewScanner(strings.NewReader(stderr))
	for s.Scan() {
		var rec struct {
			Msg    string `json:"msg"`
			Detail string `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(s.Bytes(), &rec), "every log line is JSON: %q", s.Text())
		msgs[rec.Msg]++
	}
	require.Positive(t, msgs["pass failed"], stderr)
	require.Positive(t, msgs["redis client"], "go-redis's own messages go through slog: %s", stderr)
}

// TestConfigurationErrorIsAJSONRecord: under --log-format json (flag,
// environment or config file) a configuration error is one JSON record on
// stderr, not a plain line; otherwise it stays a plain line.
func TestConfigurationErrorIsAJSONRecord(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte("log:\n  format: json\nredis:\n  timeout: soon\n"), 0o600))
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"flag":        {map[string]string{"REAPER_REDIS_TIMEOUT": "soon"}, []string{"once", "--log-format", "json"}},
		"environment": {map[string]string{"REAPER_REDIS_TIMEOUT": "soon", "REAPER_LOG_FORMAT": "json"}, []string{"once"}},
		"config file": {map[string]string{"REAPER_CONFIG": file}, []string{"audit"}},
		"bad url":     {map[string]string{"REAPER_LOG_FORMAT": "json", "REAPER_REDIS_URL": "http://nowhere"}, []string{"once"}},
	} {
		code, _, stderr := run(t, c.env, c.args...)
		require.Equal(t, exitcode.Usage, code, name)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		require.Len(t, lines, 1, "%s: one record: %s", name, stderr)
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec), "%s: %s", name, stderr)
		require.Equal(t, "ERROR", rec["level"], name)
		require.Equal(t, "configuration error", rec["msg"], name)
		require.Equal(t, "lock-reaper", rec["command"], name)
		require.NotEmpty(t, rec["error"], name)
	}
	code, _, stderr := run(t, map[string]string{"REAPER_REDIS_TIMEOUT": "soon"}, "once", "--log-format", "text")
	require.Equal(t, exitcode.Usage, code)
	require.True(t, strings.HasPrefix(stderr, "lock-reaper: configuration: "), stderr)
}

// TestRedisClientRepeatsAtDebug: go-redis's same message again, within the
// window, is a debug line, not another warning; a new message, or the same
// one after the window, warns again.
func TestRedisClientRepeatsAtDebug(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	logger, err := newLogger(&b, "json", "debug")
	require.NoError(t, err)
	now := time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC)
	l := &redisLogger{log: logger, now: func() time.Time { return now }}
	ctx := context.Background()
	dial := "redis: connection pool: failed to dial after %d attempts: %s"
	for range 4 {
		l.Printf(ctx, dial, 5, "connection refused")
		now = now.Add(400 * time.Millisecond)
	}
	l.Printf(ctx, dial, 5, "i/o timeout")
	now = now.Add(redisRepeatWindow)
	l.Printf(ctx, dial, 5, "i/o timeout")
	var levels []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var rec struct{ Level string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		levels = append(levels, rec.Level)
	}
	require.Equal(t, []string{"WARN", "DEBUG", "DEBUG", "DEBUG", "WARN", "WARN"}, levels)
}

// TestTextLogsTallyReleases: text logs above debug count the released
// holdings per owner and write one line each at flush, the owner with the
// most first; a holding whose owner changed keeps its warning; other lines
// pass as they are.
func TestTextLogsTallyReleases(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	logger, err := newLogger(&b, "text", "info")
	require.NoError(t, err)
	tally, ok := logger.Handler().(*releaseTally)
	require.True(t, ok)
	held := func(owner string, res reaper.Result) {
		level := slog.LevelInfo
		if res == reaper.ResultOwnerChanged {
			level = slog.LevelWarn
		}
		logger.LogAttrs(context.Background(), level, reaper.LogReleasedHolding, slog.String("key", "k"), slog.String("owner", owner), slog.String("result", string(res)))
	}
	held("1@b", reaper.ResultReleased)
	for range 3 {
		held("1@a", reaper.ResultReleased)
	}
	held("1@b", reaper.ResultAlreadyGone)
	held("1@c", reaper.ResultOwnerChanged)
	logger.Info("updated task", slog.String("task", "t"))
	tally.flush(context.Background())
	tally.flush(context.Background()) // counted once
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4, b.String())
	require.Contains(t, lines[0], "WRN released holding key=k owner=1@c result=owner-changed")
	require.Contains(t, lines[1], "INF updated task")
	require.Contains(t, lines[2], "INF released holdings owner=1@a holdings=3")
	require.Contains(t, lines[3], "INF released holdings owner=1@b holdings=1 already_gone=1")

	debug, err := newLogger(&b, "text", "debug")
	require.NoError(t, err)
	_, tallied := debug.Handler().(*releaseTally)
	require.False(t, tallied, "debug level keeps the line per holding")
	jsonLogger, err := newLogger(&b, "json", "info")
	require.NoError(t, err)
	_, tallied = jsonLogger.Handler().(*releaseTally)
	require.False(t, tallied, "JSON logs keep the line per holding")
}

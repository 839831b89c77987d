package reaper_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/stretchr/testify/require"
)

// TestReleaseLogComesBeforeThePassEnds: the release lines are written on a
// goroutine of their own while the next batch runs; by the time RunOnce
// returns, every released holding has its line, once.
func TestReleaseLogComesBeforeThePassEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const dead = "1@dead"
	f.Worker(dead, time.Hour)
	var want []string
	for range 12 {
		id := f.Task(judge.StateRunning, "", nil, -1)
		f.Acquire(dead, id, []string{repo()}, false)
	}
	log := &lineLog{}
	cfg := reaper.DefaultConfig()
	cfg.HeartbeatRecheck = testenv.HeartbeatRecheck
	cfg.BatchSize = 5 // five batches, logged while the next one runs
	r, err := reaper.New(cfg, f.Redis.Client, f.DB.Pool, slog.New(slog.NewJSONHandler(log, nil)))
	require.NoError(t, err)
	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.NoError(t, err)
	require.Equal(t, 24, rep.Summary.Released)
	for _, fd := range rep.Findings {
		if fd.Result == reaper.ResultReleased {
			want = append(want, fd.Key)
		}
	}
	got := log.keys("released holding")
	require.ElementsMatch(t, want, got, "a line for each released holding")
	require.Len(t, got, len(want))
}

// lineLog collects JSON log lines, safely from several goroutines.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// keys returns the "key" attribute of every line whose message is msg.
func (l *lineLog) keys(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range bytes.Split(l.buf.Bytes(), []byte("\n")) {
		var rec struct{ Msg, Key string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == msg {
			out = append(out, rec.Key)
		}
	}
	return out
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScaleScenarioSmall runs two rows of the scale scenario on a few
// thousand keys: each row's walk and passes are measured on a server of its
// own, the passes' reports agree with the fleet (else the run fails), and
// the server's accounts name the commands the passes sent.
func TestScaleScenarioSmall(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "scale.json")
	o, err := parseOptions([]string{"-scenario", "scale", "-unrelated", "2000", "-task-locks", "200", "-owners", "10", "-runs", "1",
		"-cases", "^(incident|backlog-20k)$", "-json", out}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, run(context.Background(), o, io.Discard, io.Discard))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res ScaleResults
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Len(t, res.Rows, 2)
	for _, r := range res.Rows {
		require.Positive(t, r.WalkMS, r.Name)
		require.GreaterOrEqual(t, r.LockKeys, 400, "%s: 200 task locks with one exclusive lock each, and the shared sets", r.Name)
		for _, p := range []ScalePass{r.Audit, r.Once} {
			require.Positive(t, p.WallMS, r.Name)
			require.Positive(t, p.PeakRSSBytes, r.Name)
			require.Positive(t, p.RedisLoad.ScanCalls, r.Name)
			require.NotEmpty(t, p.Server.Commands, r.Name)
		}
		require.Positive(t, r.Once.Released, r.Name)
		rc := r.Once.Server.ReleaseCalls
		require.NotNil(t, rc, "%s: the once pass called the release script", r.Name)
		require.Positive(t, int64(rc.Logged)+rc.ScriptCallsUnder, r.Name)
	}
	require.Equal(t, 20_000, res.Rows[1].Fleet.QueuedTasks)
}

// TestIdleScenarioShort runs the idle scenario for a few seconds: the
// process is read from outside until it is stopped.
func TestIdleScenarioShort(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "idle.json")
	o, err := parseOptions([]string{"-scenario", "idle", "-idle-span", "5s", "-json", out}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, run(context.Background(), o, io.Discard, io.Discard))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res IdleResults
	require.NoError(t, json.Unmarshal(raw, &res))
	require.NotEmpty(t, res.Samples)
	require.Positive(t, res.PeakRSSBytes)
	require.Positive(t, res.SteadyRSSBytes)
	require.Positive(t, res.CPUSeconds)
}

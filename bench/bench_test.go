package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// smallFleet is the benchmark's fleet cut down to a few thousand keys.
func smallFleet(t *testing.T, taskLocks int, extra ...string) options {
	t.Helper()
	args := append([]string{"-unrelated", "1000", "-task-locks", strconv.Itoa(taskLocks), "-owners", "10",
		"-domains", "3", "-runs", "1", "-scale-factor", "2"}, extra...)
	o, err := parseOptions(args, io.Discard)
	require.NoError(t, err)
	return o
}

// TestBenchmarkSmallFleet runs every phase on a small fleet: the passes
// check themselves against the fleet's manifest, and the results carry
// every figure the table and the targets need.
func TestBenchmarkSmallFleet(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "results.json")
	o := smallFleet(t, 200, "-json", out)
	require.NoError(t, run(context.Background(), o, io.Discard, io.Discard))

	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res Results
	require.NoError(t, json.Unmarshal(raw, &res))
	var names []string
	for _, m := range res.Measurements {
		names = append(names, m.Name)
		require.Positive(t, m.WallMS, m.Name)
		require.Positive(t, m.RedisRoundTrips, m.Name)
	}
	require.Equal(t, []string{phaseBaseline, phaseAudit, phaseRegistry, phaseOnce, phaseRegistryReaped, phaseBaselineScaled, phaseRegistryScaled}, names)
	once := res.Measurements[3]
	require.Equal(t, res.Fleet.StaleHoldings, once.Released)
	require.Equal(t, res.Fleet.LostTasks, once.TasksUpdated)
	require.Positive(t, res.Measurements[1].RatioToBaseline)
	require.Len(t, res.Targets, 5)
	require.Equal(t, 2*res.Fleet.UnrelatedKeys, res.Measurements[6].UnrelatedKeysInRedis)
}

// TestQueriesIndependentOfLocks: four times the locks, the same statements.
func TestQueriesIndependentOfLocks(t *testing.T) {
	t.Parallel()
	queries := func(taskLocks int) map[string]int64 {
		o := smallFleet(t, taskLocks, "-scale-factor", "1")
		res, err := benchmark(context.Background(), o, t.Logf)
		require.NoError(t, err)
		out := map[string]int64{}
		for _, m := range res.Measurements {
			out[m.Name] = m.DBQueries
		}
		return out
	}
	small, large := queries(100), queries(400)
	require.Equal(t, small, large)
	require.Equal(t, small[phaseAudit], small[phaseRegistry])
}

// TestDeadOwnerScenarioSmall runs the dead-owner scenario on a few thousand
// holdings: every command exits as a correct pass does, the JSON reports
// are one line and agree with the fleet, the logs are JSON, and the peak
// RSS of each child is measured.
func TestDeadOwnerScenarioSmall(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "dead-owner.json")
	o, err := parseOptions([]string{"-scenario", "dead-owner", "-task-locks", "500", "-unrelated", "100", "-json", out}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, run(context.Background(), o, io.Discard, io.Discard))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res DeadOwnerResults
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Equal(t, 1001, res.Fleet.StaleHoldings)
	require.Len(t, res.Runs, 8)
	for _, r := range res.Runs {
		require.Positive(t, r.PeakRSSBytes, r.Name)
		require.Positive(t, r.StdoutBytes, r.Name)
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
		require.Positive(t, m.RedisServerMS, m.Name)
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
// are one line and agree with the fleet, the logs are JSON, the peak RSS
// of each child is measured, and so is the longest Redis command of a pass,
// with and without stale registry entries. run and status are measured
// over a few seconds each and stopped by SIGTERM, as a pod is; run's first
// pass reaps the fleet.
func TestDeadOwnerScenarioSmall(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "dead-owner.json")
	o, err := parseOptions([]string{"-scenario", "dead-owner", "-task-locks", "500", "-unrelated", "100", "-stale-registry", "20000", "-daemon-span", "8s", "-json", out}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, run(context.Background(), o, io.Discard, io.Discard))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res DeadOwnerResults
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Equal(t, 1001, res.Fleet.StaleHoldings)
	require.Len(t, res.Runs, 18, "12 commands, and run, status and run with the shipped limits at a whole CPU and at half of one")
	require.Len(t, res.MetBy, 3)
	require.Len(t, res.Longest, 2)
	for _, l := range res.Longest {
		require.Positive(t, l.LongestUS, l.Case)
		require.NotEmpty(t, l.Command, l.Case)
	}
	require.Zero(t, res.Longest[0].RegistryWalkUS, "no stale entries: no walk")
	require.Positive(t, res.Longest[1].RegistryWalkUS, "the walk of the registry the pass is compared with")
	require.GreaterOrEqual(t, res.Longest[1].RegistryWalked, int64(20_000))
	for _, r := range res.Runs {
		require.Positive(t, r.PeakRSSBytes, r.Name)
		require.Positive(t, r.PeakAnonBytes, r.Name)
		require.LessOrEqual(t, r.PeakAnonBytes, r.PeakRSSBytes, "%s: anonymous memory is part of the resident", r.Name)
		if strings.HasPrefix(r.Command, "lock-reaper run") || strings.HasPrefix(r.Command, "lock-reaper status") {
			require.GreaterOrEqual(t, r.WallMS, 8_000.0, "%s ran until SIGTERM", r.Name)
			require.NotNil(t, r.Pages, "%s: its pages were fetched", r.Name)
			require.Positive(t, r.Pages.Fetched, r.Name)
			require.Zero(t, r.Pages.Failed, r.Name)
			continue
		}
		require.Positive(t, r.StdoutBytes, r.Name)
	}
}

// TestUnjamScenarioSmall runs the unjam scenario once per case at 60× time
// (a pass every second) with a one-minute hung_worker_grace: every death is
// released by a real pass and its blocked task starts, whether the watch
// works, stalls or is forbidden; a worker alive by Kubernetes keeps its
// locks until the grace has passed and then aborts on the cancel signal;
// each release is dated from the moment the rules allowed it.
func TestUnjamScenarioSmall(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "unjam.json")
	o, err := parseOptions([]string{"-scenario", "unjam", "-time-scale", "60", "-trials", "1", "-alive-trials", "1",
		"-hung-worker-grace", "1m", "-watch-time-scale", "60", "-watch-trials", "1", "-json", out}, io.Discard)
	require.NoError(t, err)
	require.NoError(t, run(context.Background(), o, io.Discard, io.Discard))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res UnjamResults
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Len(t, res.Cases, len(unjamCases))
	for _, c := range res.Cases {
		require.Len(t, c.Trials, 1, c.Death)
		tr := c.Trials[0]
		require.Positive(t, tr.ReleasedS, c.Death)
		// Production seconds at the test's time scale: a real millisecond of
		// scheduling between the two readings is most of a second here.
		require.GreaterOrEqual(t, tr.StartedS, tr.ReleasedS-3, "%s: the blocked task starts after the release", c.Death)
		require.Positive(t, tr.Passes, c.Death)
		if c.Death == deathAlive {
			require.True(t, tr.StoppedOnSignal, "the live worker aborts its task on the cancel signal")
		}
		if c.Death == deathAlive && c.Kubernetes {
			require.Equal(t, "hung-too-long", tr.Rule)
			require.GreaterOrEqual(t, tr.ReleasedS, 120.0, "kept for ttl + grace + hung_worker_grace")
		}
		if !c.Kubernetes {
			require.Equal(t, "heartbeats", tr.Rule)
		}
		if c.Watch && (c.Death == deathPodDeleted || c.Death == deathRestarted) {
			require.True(t, tr.Reported, "%s: the kubelet's report of the container's end reached the API server", c.Death)
		}
		require.NotEmpty(t, tr.Contract, c.Death)
		if !c.Kubernetes {
			require.Equal(t, contractHeartbeat, tr.Contract, "without Kubernetes the heartbeat rule is the contract")
			require.Equal(t, tr.AfterContractS, tr.AfterDeadlineS)
		}
	}
}

func TestUnjamOptions(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-time-scale", "7"}, {"-time-scale", "120"}, {"-trials", "0"}, {"-restart-delay", "-1s"},
		{"-unjam-cases", "some"}, {"-watch-time-scale", "7"}, {"-watch-trials", "0"}} {
		_, err := parseOptions(append([]string{"-scenario", "unjam"}, args...), io.Discard)
		require.Error(t, err, args)
	}
}

// TestIncidentScenarioSmall runs the incident scenario on a small keyspace:
// two rounds of the real binary's audit and once, A/B with the same binary,
// the incident put back between them, each report checked against the
// incident, and the in-process passes with their phases.
func TestIncidentScenarioSmall(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "incident.json")
	bin := filepath.Join(t.TempDir(), "lock-reaper")
	build := exec.Command("go", "build", "-o", bin, "github.com/lock-reaper/lock-reaper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	require.NoError(t, build.Run())
	o, err := parseOptions([]string{"-scenario", "incident", "-binary", bin, "-binary-b", bin, "-task-locks", "200", "-unrelated", "100", "-runs", "2", "-json", out}, io.Discard)
	require.NoError(t, err)
	var md strings.Builder
	require.NoError(t, run(context.Background(), o, &md, io.Discard))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var res IncidentResults
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Equal(t, 1067, res.Stale)
	require.Len(t, res.Rounds, 2)
	for _, rd := range res.Rounds {
		require.Positive(t, rd.WalkMS)
		require.Positive(t, rd.Once.WallMS)
		require.NotNil(t, rd.B, "binary B ran in the round")
		require.Positive(t, rd.B.Once.WallMS)
		require.Positive(t, rd.Once.WaitMS, "the dead owner's rows are read a second time")
		require.Positive(t, rd.Audit.WaitMS)
		require.NotEmpty(t, rd.Once.Phases, "the binary's report times its phases")
		require.NotEmpty(t, rd.B.Audit.Phases)
	}
	require.Len(t, res.Phases, 4, "an audit and a once in process, each round")
	require.Contains(t, md.String(), "Where binary A's time went")
	require.Contains(t, md.String(), "| second read |")
}

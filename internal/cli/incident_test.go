package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// run calls the command line as a user would, with only the given
// environment, and returns the exit code, stdout and stderr.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), Env{
		Args: args, Stdout: &stdout, Stderr: &stderr, Version: "test",
		LookupEnv: testenv.LookupEnv(env),
		Environ:   func() []string { return environOf(env) },
	})
	return code, stdout.String(), stderr.String()
}

func environOf(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func servicesEnv(r *testenv.Redis, db *testenv.Database) map[string]string {
	return map[string]string{"REAPER_REDIS_URL": r.URL, "REAPER_DATABASE_URL": db.URL, "REAPER_LOG_FORMAT": "json"}
}

// TestIncident reproduces 2026-07-24: one dead worker holding 543 task locks
// and 524 resource locks, registered and legacy, beside live workers with
// healthy locks and a queue. After `once` only the dead worker's locks are
// gone, its running tasks are canceled, its claimed waiting tasks requeued,
// every healthy lock is intact, and a second audit exits 0.
func TestIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	spec := sim.IncidentOf20260724()
	spec.DeadRunning, spec.DeadClaimed, spec.DeadUnclaimed, spec.DeadMissing = 20, 15, 5, 3
	inc, err := sim.BuildIncident(ctx, r.Client, db.Pool, spec)
	require.NoError(t, err)
	require.Equal(t, 543, sim.Count(inc.Stale, inc.DeadOwner, sim.KindTask))
	require.Equal(t, 524, len(inc.Stale)-543)
	env := servicesEnv(r, db)

	code, out, stderr := run(t, env, "audit", "--output", "json")
	require.Equal(t, exitcode.Findings, code, stderr)
	var audit reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &audit))
	require.Equal(t, "audit", audit.Mode)
	require.Equal(t, len(inc.Stale), audit.Summary.FindingsByResult[reaper.ResultWouldRelease])
	require.Len(t, audit.Findings, len(inc.Stale))

	code, out, stderr = run(t, env, "once", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	var once reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &once))
	require.Equal(t, len(inc.Stale), once.Summary.Released)
	for _, f := range once.Findings {
		require.Equal(t, inc.DeadOwner, f.Owner, "only the dead worker's holdings are findings")
		require.Contains(t, []judge.Verdict{judge.VerdictOwnerDead, judge.VerdictTaskFinished}, f.Verdict)
	}

	holdings, err := sim.ScanHoldings(ctx, r.Client)
	require.NoError(t, err)
	require.ElementsMatch(t, inc.Healthy, holdings, "exactly the healthy holdings remain")

	states := taskStates(t, db)
	for _, id := range inc.Cancel {
		require.Equal(t, "canceled", states[id].state, id)
	}
	for _, id := range inc.Requeue {
		require.Equal(t, "waiting", states[id].state, id)
		require.False(t, states[id].claimed, "requeued task keeps no claim")
	}
	for _, id := range append(append([]string{}, inc.Running...), inc.Queued...) {
		require.NotEqual(t, "canceled", states[id].state, id)
	}
	require.Equal(t, len(inc.Cancel)+len(inc.Requeue), once.Summary.TasksUpdated)

	code, out, stderr = run(t, env, "audit")
	require.Equal(t, exitcode.OK, code, "second audit: %s\n%s", out, stderr)
}

type taskState struct {
	state   string
	claimed bool
}

func taskStates(t *testing.T, db *testenv.Database) map[string]taskState {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), "SELECT pulp_id::text, state, app_lock_id IS NOT NULL FROM core_task")
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]taskState{}
	for rows.Next() {
		var id string
		var s taskState
		require.NoError(t, rows.Scan(&id, &s.state, &s.claimed))
		out[id] = s
	}
	require.NoError(t, rows.Err())
	return out
}

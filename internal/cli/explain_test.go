package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/history"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// opsFleet is a real Redis and PostgreSQL with helpers that write what Pulp
// writes, for the operator commands' tests. Helpers are prefixed with ops so
// that they cannot collide with other tests of the package.
type opsFleet struct {
	t   *testing.T
	ctx context.Context
	r   *testenv.Redis
	db  *testenv.Database
	env map[string]string
}

func newOpsFleet(t *testing.T) *opsFleet {
	t.Helper()
	r, db := testenv.NewRedis(t), testenv.NewDatabase(t)
	return &opsFleet{t: t, ctx: context.Background(), r: r, db: db, env: servicesEnv(r, db)}
}

// worker inserts a worker row that last beat age ago. A live worker (age 0)
// gets a ttl long enough to stay alive however slowly the test runs.
func (f *opsFleet) worker(name string, age time.Duration) string {
	f.t.Helper()
	ttl := 30 * time.Second
	if age == 0 {
		ttl = time.Hour
	}
	id := sim.NewUUID()
	_, err := f.db.Pool.Exec(f.ctx, `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat)
		VALUES ($1, 'worker', $2, make_interval(secs => $3), now() - make_interval(secs => $4))`, id, name, ttl.Seconds(), age.Seconds())
	require.NoError(f.t, err)
	return id
}

// task inserts a core_task row created ago before now; appLock "" is NULL.
func (f *opsFleet) task(state, appLock string, reserved []string, ago time.Duration) string {
	f.t.Helper()
	id := sim.NewUUID()
	var lock any
	if appLock != "" {
		lock = appLock
	}
	_, err := f.db.Pool.Exec(f.ctx, `INSERT INTO core_task (pulp_id, pulp_created, state, name, app_lock_id, reserved_resources_record, pulp_domain_id, finished_at)
		VALUES ($1, now() - make_interval(secs => $2), $3, 'pulp_rpm.app.tasks.synchronize', $4, $5, '00000000-0000-4000-8000-000000000001',
		        CASE WHEN $3 IN ('completed', 'failed', 'canceled', 'skipped') THEN now() - interval '1 hour' END)`,
		id, ago.Seconds(), state, lock, reserved)
	require.NoError(f.t, err)
	return id
}

// acquire writes a task's locks as Pulp's acquire script does, registered.
func (f *opsFleet) acquire(owner, taskID string, reserved ...string) {
	f.t.Helper()
	rdb := f.r.Client
	keys := []string{"task:" + taskID}
	require.NoError(f.t, rdb.Set(f.ctx, "task:"+taskID, owner, 0).Err())
	for _, r := range reserved {
		if name, shared := strings.CutPrefix(r, "shared:"); shared {
			require.NoError(f.t, rdb.SAdd(f.ctx, "pulp:resource_lock:"+name, owner).Err())
			keys = append(keys, "pulp:resource_lock:"+name)
		} else {
			require.NoError(f.t, rdb.Set(f.ctx, "pulp:resource_lock:"+r, owner, 0).Err())
			keys = append(keys, "pulp:resource_lock:"+r)
		}
	}
	for _, k := range keys {
		require.NoError(f.t, rdb.SAdd(f.ctx, "pulp:owner_locks:"+owner, k).Err())
	}
	require.NoError(f.t, rdb.SAdd(f.ctx, "pulp:active_owners", owner).Err())
}

func (f *opsFleet) get(key string) string {
	v, _ := f.r.Client.Get(f.ctx, key).Result()
	return v
}

func (f *opsFleet) members(key string) []string {
	v, _ := f.r.Client.SMembers(f.ctx, key).Result()
	return v
}

func (f *opsFleet) state(taskID string) (string, bool) {
	f.t.Helper()
	var state string
	var claimed bool
	require.NoError(f.t, f.db.Pool.QueryRow(f.ctx, `SELECT state, app_lock_id IS NOT NULL FROM core_task WHERE pulp_id = $1`, taskID).Scan(&state, &claimed))
	return state, claimed
}

// explain runs `explain --output json` and decodes the explanation.
func (f *opsFleet) explain(taskID string) explain.Explanation {
	f.t.Helper()
	code, out, stderr := run(f.t, f.env, "explain", taskID, "--output", "json")
	require.Equal(f.t, exitcode.OK, code, stderr)
	var ex explain.Explanation
	require.NoError(f.t, json.Unmarshal([]byte(out), &ex), out)
	return ex
}

func TestExplainBlockedByDeadOwner(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	dead := f.worker("1@pulp-worker-0", time.Hour)
	repo := passtest.Repo()
	lost := f.task("running", dead, []string{repo, "shared:" + passtest.Domain}, 2*time.Hour)
	f.acquire("1@pulp-worker-0", lost, repo, "shared:"+passtest.Domain)
	target := f.task("waiting", "", []string{repo, "shared:" + passtest.Domain}, time.Minute)

	// No reaper has recorded a pass within the hour (the last, two hours
	// ago): none is promised, and the conclusion says how to get one.
	require.NoError(t, history.Record(f.ctx, f.r.Client, history.DefaultPrefix, history.Entry{At: time.Now().Add(-2 * time.Hour), Mode: "once"}))
	ex := f.explain(target)
	require.Equal(t, explain.StatusBlocked, ex.Status)
	require.Equal(t, "blocked by a stale lock of dead worker 1@pulp-worker-0 (owner-dead, heartbeat 1 h ago): a reaper's pass, once one runs, releases it; "+
		"no reaper has recorded a pass in the last 1 h: run `lock-reaper once` or install the chart", ex.Conclusion)
	require.Equal(t, &explain.Passes{Within: reaper.Seconds(time.Hour)}, ex.Passes)

	// Once a reaper has recorded a pass, the next one is promised.
	require.NoError(t, history.Record(f.ctx, f.r.Client, history.DefaultPrefix, history.Entry{At: time.Now().Add(-5 * time.Minute), Mode: "once"}))
	ex = f.explain(target)
	require.Equal(t, "blocked by a stale lock of dead worker 1@pulp-worker-0 (owner-dead, heartbeat 1 h ago): the next pass releases it", ex.Conclusion)
	require.True(t, ex.Passes.Recorded)
	require.Equal(t, "waiting", ex.Task.State)
	require.Nil(t, ex.Claim)
	require.Empty(t, ex.TaskLocks)
	require.Len(t, ex.Resources, 2)
	h := ex.Resources[0].Holders[0]
	require.Equal(t, repo, ex.Resources[0].Resource)
	require.Equal(t, "1@pulp-worker-0", h.Owner)
	require.Equal(t, heartbeat.Dead, h.Liveness)
	require.Equal(t, lost, h.Task.ID)
	require.Equal(t, "running", h.Task.State)
	require.Equal(t, judge.VerdictOwnerDead, h.Verdict)
	require.Equal(t, judge.ActionRelease, h.Action)
	require.True(t, h.Blocks)
	require.False(t, ex.Resources[1].Holders[0].Blocks, "shared with shared does not block")
	require.Empty(t, ex.Ahead, "an older running task holds locks, it does not go first")

	// The text form says the same, ending with the conclusion.
	code, out, stderr := run(t, f.env, "explain", "--output", "text", strings.ToUpper(target))
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, out, "Task "+target)
	require.Contains(t, out, "for task "+lost+" (running)")
	require.Contains(t, out, "owner-dead -> release")
	require.Contains(t, out, "BLOCKS")
	require.True(t, strings.HasSuffix(out, "Conclusion: "+ex.Conclusion+"\n"), out)

	// The lost task itself.
	ex = f.explain(lost)
	require.Equal(t, explain.StatusLost, ex.Status)
	require.Equal(t, "lost: claimed by dead worker 1@pulp-worker-0 (heartbeat 1 h ago); the next pass cancels it", ex.Conclusion)
	require.Equal(t, "1@pulp-worker-0", ex.Claim.Name)
	require.Equal(t, judge.VerdictLost, ex.TaskVerdict.Verdict)
}

func TestExplainBlockedByLiveOwner(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	live := f.worker("1@pulp-worker-1", 0)
	repo := passtest.Repo()
	running := f.task("running", live, []string{repo, "shared:" + passtest.Domain}, 2*time.Minute)
	f.acquire("1@pulp-worker-1", running, repo, "shared:"+passtest.Domain)
	target := f.task("waiting", "", []string{repo, "shared:" + passtest.Domain}, time.Minute)

	ex := f.explain(target)
	require.Equal(t, explain.StatusWaiting, ex.Status)
	require.Regexp(t, `^waiting behind task `+running+` \(pulp_rpm.app.tasks.synchronize\), running on live worker 1@pulp-worker-1 \(heartbeat [0-9]+ m?s ago\)$`, ex.Conclusion)
	h := ex.Resources[0].Holders[0]
	require.Equal(t, judge.VerdictJustified, h.Verdict)
	require.Equal(t, judge.ActionKeep, h.Action)
	require.True(t, h.Blocks)

	ex = f.explain(running)
	require.Equal(t, explain.StatusRunning, ex.Status)
	require.True(t, strings.HasPrefix(ex.Conclusion, "running on live worker 1@pulp-worker-1 (heartbeat "), ex.Conclusion)
	require.Len(t, ex.TaskLocks, 1)
	require.True(t, ex.TaskLocks[0].Own)
	require.Equal(t, judge.VerdictHealthy, ex.TaskLocks[0].Verdict)
}

func TestExplainBehindOlderTask(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	repo := passtest.Repo()
	older := f.task("waiting", "", []string{repo, "shared:" + passtest.Domain}, 2*time.Minute)
	f.task("waiting", "", []string{"shared:" + repo, "shared:" + passtest.Domain}, 90*time.Second) // shares: no conflict
	target := f.task("waiting", "", []string{"shared:" + repo, "shared:" + passtest.Domain}, time.Minute)

	ex := f.explain(target)
	require.Equal(t, explain.StatusWaiting, ex.Status)
	require.Equal(t, fmt.Sprintf("waiting behind older task %s (pulp_rpm.app.tasks.synchronize), waiting, unclaimed, which needs %s first", older, repo), ex.Conclusion)
	require.Len(t, ex.Ahead, 1)
	require.Equal(t, 1, ex.AheadTotal)
	require.Equal(t, []string{repo}, ex.Ahead[0].Conflicts)

	code, out, _ := run(t, f.env, "explain", target)
	require.Equal(t, exitcode.OK, code)
	require.Contains(t, out, "Older tasks that need the same resources and go first (1)")

	// The text lists at most --limit of them.
	f.task("waiting", "", []string{repo}, 3*time.Minute)
	code, out, _ = run(t, f.env, "explain", target, "--limit", "1")
	require.Equal(t, exitcode.OK, code)
	require.Contains(t, out, "Older tasks that need the same resources and go first (2)")
	require.Contains(t, out, "… and 1 more (--limit 0 shows")
	require.Contains(t, out, "(and 1 more older task)")
}

func TestExplainReadyToRun(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	live := f.worker("1@pulp-worker-1", 0)
	other := f.task("running", live, []string{passtest.Repo(), "shared:" + passtest.Domain}, 2*time.Minute)
	f.acquire("1@pulp-worker-1", other, "shared:"+passtest.Domain)
	target := f.task("waiting", "", []string{passtest.Repo(), "shared:" + passtest.Domain}, time.Minute)
	finished := f.task("completed", live, []string{passtest.Repo()}, time.Hour)

	ex := f.explain(target)
	require.Equal(t, explain.StatusReady, ex.Status)
	require.Equal(t, "ready to run: nothing holds its resources and no older task needs them", ex.Conclusion)

	ex = f.explain(finished)
	require.Equal(t, explain.StatusFinished, ex.Status)
	require.Equal(t, "finished (completed)", ex.Conclusion)
}

func TestExplainUsageAndMissingTask(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	missing := sim.NewUUID()
	code, out, _ := run(t, f.env, "explain", missing, "--output", "json")
	require.Equal(t, exitcode.Failed, code, "a task that does not exist")
	var ex explain.Explanation
	require.NoError(t, json.Unmarshal([]byte(out), &ex))
	require.Equal(t, explain.StatusNotFound, ex.Status)

	code, _, stderr := run(t, f.env, "explain")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "missing TASK_ID")
	code, _, stderr = run(t, f.env, "explain", "not-a-uuid")
	require.Equal(t, exitcode.Usage, code)
	require.Contains(t, stderr, "is not a task UUID")
	code, _, _ = run(t, f.env, "explain", missing, missing)
	require.Equal(t, exitcode.Usage, code)

	// A pass that cannot read the database fails with 1.
	env := servicesEnv(f.r, f.db)
	env["REAPER_DATABASE_URL"] = "postgres://postgres@127.0.0.1:1/nowhere?connect_timeout=1"
	code, _, stderr = run(t, env, "explain", missing)
	require.Equal(t, exitcode.Failed, code)
	require.Contains(t, stderr, "lock-reaper explain:")
}

// An audit of a database whose workers heartbeat while Redis holds no
// Redis-worker key says Pulp most likely runs pulpcore's default worker,
// and where WORKER_TYPE is set in the Pulp CR.
func TestAuditNotesRedisWorkerNotInUse(t *testing.T) {
	t.Parallel()
	f := newOpsFleet(t)
	w := f.worker("1@pulp-worker-0", 0)
	code, out, stderr := run(t, f.env, "audit")
	require.Equal(t, exitcode.OK, code, stderr)
	require.Contains(t, out, "Note: 1 Pulp workers heartbeat in core_appstatus, but Redis holds no Redis-worker lock")
	require.Contains(t, out, "spec.custom_pulp_settings")

	code, out, stderr = run(t, f.env, "audit", "--output", "json")
	require.Equal(t, exitcode.OK, code, stderr)
	var rep reaper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Notes, 1)
	require.Contains(t, rep.Notes[0], `WORKER_TYPE = "redis"`)

	f.acquire("1@pulp-worker-0", f.task("running", w, nil, time.Minute))
	code, out, stderr = run(t, f.env, "audit")
	require.Equal(t, exitcode.OK, code, stderr)
	require.NotContains(t, out, "Note:")
}

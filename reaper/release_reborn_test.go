package reaper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestRebornNameKeepsItsNewTaskMembership: a dead worker 1@pod (its row dead
// for 90 s) holds a running task's locks, the domain's shared membership
// among them. Between the pass's judging and its releases the same pod
// restarts: a new row under the same name, which takes a new task reserving
// the domain shared (its acquire adds 1@pod to the domain's set, where it is
// already). The pass releases the dead task's own locks but leaves the
// membership, which the new task needs (owner-changed), with the owner
// registry (pulpcore 3.117 and later) and without it.
func TestRebornNameKeepsItsNewTaskMembership(t *testing.T) {
	t.Parallel()
	for name, legacy := range map[string]bool{"registry": false, "no registry": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			const owner = "1@pod"
			dead := f.Worker(owner, 90*time.Second)
			domain, repo := "domain-reborn", "repo-reborn"
			reserved := []string{"shared:" + domain, repo}
			lost := f.Task(judge.StateRunning, dead, reserved, -1)
			f.Acquire(owner, lost, reserved, legacy)
			r := f.reaper(nil)

			var next string
			rep, err := r.RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
				reborn := f.Worker(owner, 0)
				next = f.Task(judge.StateRunning, reborn, []string{"shared:" + domain}, -1)
				f.Acquire(owner, next, []string{"shared:" + domain}, legacy)
			})
			require.NoError(t, err)
			require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.TaskKeyPrefix+lost, owner).Result)
			require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.ResourceKeyPrefix+repo, owner).Result)
			require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, judge.ResourceKeyPrefix+domain, owner).Result)
			require.Contains(t, f.Members(judge.ResourceKeyPrefix+domain), owner, "the new task's membership")
			require.Equal(t, owner, f.Get(judge.TaskKeyPrefix+next))

			// The next pass sees the name alive, running the new task: the
			// membership is justified and kept.
			rep = f.pass(r, reaper.ModeOnce)
			require.Nil(t, findingFor(rep, judge.ResourceKeyPrefix+domain, owner))
			require.Contains(t, f.Members(judge.ResourceKeyPrefix+domain), owner)
		})
	}
}

// TestRebornNameBeforeItsFirstTask: the dead worker's name is reborn during
// the pass, but its new process has taken no task yet. Its row says the
// name lives again, and a worker writes its row before it fetches: the
// membership is left for the next pass to judge under the live name.
func TestRebornNameBeforeItsFirstTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const owner = "1@pod-b"
	dead := f.Worker(owner, 90*time.Second)
	reserved := []string{"shared:domain-b"}
	lost := f.Task(judge.StateRunning, dead, reserved, -1)
	f.Acquire(owner, lost, reserved, true)

	rep, err := f.reaper(nil).RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		f.Worker(owner, 0)
	})
	require.NoError(t, err)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.TaskKeyPrefix+lost, owner).Result)
	require.Equal(t, reaper.ResultOwnerChanged, findingFor(rep, judge.ResourceKeyPrefix+"domain-b", owner).Result)
	require.Contains(t, f.Members(judge.ResourceKeyPrefix+"domain-b"), owner)
}

// TestDeadOwnerMembershipReleased: without a reborn name the dead worker's
// shared membership is released as before, its own lost task's lock
// (released or deferred in the same pass) being no new task.
func TestDeadOwnerMembershipReleased(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const owner = "1@pod-c"
	dead := f.Worker(owner, 90*time.Second)
	reserved := []string{"shared:domain-c"}
	lost := f.Task(judge.StateRunning, dead, reserved, -1)
	f.Acquire(owner, lost, reserved, false)
	rep := f.pass(f.reaper(nil), reaper.ModeOnce)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.ResourceKeyPrefix+"domain-c", owner).Result)
	require.NotContains(t, f.Members(judge.ResourceKeyPrefix+"domain-c"), owner)
}

// TestUncommittedImmediateTaskKeepsItsMembership: a live API process leaked
// a finished task's lock and its domain membership (pulpcore before 3.117:
// no registry). During the pass it dispatches an immediate task inside a
// transaction (a plugin's or a request's atomic block): the task row is
// inserted but not committed, and the task's locks are taken, the domain
// membership among them. The reservers' read cannot see the row; the
// uncommitted write to core_task leaves the membership for the next pass,
// deferred by the uncommitted-task-write guard, which names the session.
func TestUncommittedImmediateTaskKeepsItsMembership(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const owner = "7@api-0"
	api := f.AppStatus(owner, "api", 120*time.Second, time.Second)
	reserved := []string{"shared:domain-imm"}
	finished := f.Task(judge.StateCompleted, api, reserved, 10*time.Minute)
	f.Acquire(owner, finished, reserved, true)
	domain := judge.ResourceKeyPrefix + "domain-imm"

	tx, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(f.Ctx) }()
	rep, err := f.reaper(nil).RunOnceAdjusted(f.Ctx, reaper.Options{Mode: reaper.ModeOnce}, func(*judge.Plan) {
		immediate := sim.NewUUID()
		_, err := tx.Exec(f.Ctx, `INSERT INTO core_task (pulp_id, state, name, app_lock_id, reserved_resources_record, pulp_domain_id, immediate)
			VALUES ($1, 'running', 'pulpcore.app.tasks.base.general_update', $2, $3, '00000000-0000-4000-8000-000000000001', true)`,
			immediate, api, reserved)
		require.NoError(t, err)
		f.Acquire(owner, immediate, reserved, true)
	})
	require.NoError(t, err)
	require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.TaskKeyPrefix+finished, owner).Result)
	require.Equal(t, reaper.ResultDeferred, findingFor(rep, domain, owner).Result)
	require.Equal(t, judge.DeferredUncommittedTaskWrite, findingFor(rep, domain, owner).Deferred)
	require.Contains(t, f.Members(domain), owner, "the immediate task's membership")
	var pid int32
	require.NoError(t, tx.QueryRow(f.Ctx, "SELECT pg_backend_pid()").Scan(&pid))
	g := guardNamed(rep, judge.GuardUncommittedTaskWrite)
	require.NotNil(t, g, "%+v", rep.Guards)
	require.Equal(t, pid, g.UncommittedWrite.PID)
}

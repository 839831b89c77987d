package reaper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// openTaskWrite opens a transaction on a connection of its own that writes
// core_task and stays idle in it, as a psql or Django shell left open does:
// an INSERT of a new task row, or an UPDATE of an existing one. It returns
// the session's backend pid; the transaction is rolled back at the test's
// end, or by the returned function.
func openTaskWrite(f *fixture, update bool) (pid int32, rollback func()) {
	f.T.Helper()
	tx, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(f.T, err)
	if update {
		other := f.Task(judge.StateWaiting, "", []string{"shared:unrelated"}, -1)
		_, err = tx.Exec(f.Ctx, `UPDATE core_task SET name = 'edited' WHERE pulp_id = $1`, other)
	} else {
		_, err = tx.Exec(f.Ctx, `INSERT INTO core_task (pulp_id, state, name, reserved_resources_record, pulp_domain_id)
			VALUES ($1, 'waiting', 'pulpcore.app.tasks.base.general_update', '{}', '00000000-0000-4000-8000-000000000001')`, sim.NewUUID())
	}
	require.NoError(f.T, err)
	require.NoError(f.T, tx.QueryRow(f.Ctx, "SELECT pg_backend_pid()").Scan(&pid))
	rollback = func() { _ = tx.Rollback(context.Background()) }
	f.T.Cleanup(rollback)
	return pid, rollback
}

func guardNamed(rep *reaper.Report, name string) *reaper.Guard {
	for i := range rep.Guards {
		if rep.Guards[i].Name == name {
			return &rep.Guards[i]
		}
	}
	return nil
}

// TestUncommittedWriteLeavesNoDeadOwnerMembership: another session sits idle
// in a transaction that inserted or updated a task row. A dead worker's
// shared membership is released all the same: a dead owner cannot be
// dispatching, so the open transaction cannot hold a task of its.
func TestUncommittedWriteLeavesNoDeadOwnerMembership(t *testing.T) {
	t.Parallel()
	for name, update := range map[string]bool{"insert": false, "update": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			const owner = "1@pod-idle"
			dead := f.Worker(owner, 90*time.Second)
			domain := "domain-idle-" + name
			reserved := []string{"shared:" + domain}
			lost := f.Task(judge.StateRunning, dead, reserved, -1)
			f.Acquire(owner, lost, reserved, true)
			openTaskWrite(f, update)

			r := f.reaper(nil)
			audit := f.pass(r, reaper.ModeAudit)
			require.Equal(t, reaper.ResultWouldRelease, findingFor(audit, judge.ResourceKeyPrefix+domain, owner).Result)
			require.Nil(t, guardNamed(audit, judge.GuardUncommittedTaskWrite))

			rep := f.pass(r, reaper.ModeOnce)
			require.Equal(t, reaper.ResultReleased, findingFor(rep, judge.ResourceKeyPrefix+domain, owner).Result)
			require.NotContains(t, f.Members(judge.ResourceKeyPrefix+domain), owner)
			require.Nil(t, guardNamed(rep, judge.GuardUncommittedTaskWrite))
		})
	}
}

// TestUncommittedWriteHoldsMaybeDispatchingOwner: the same idle transaction
// holds the membership of an owner that may be dispatching (a live API
// process that leaked a finished task's membership; an immediate-<T> owner),
// and says so: the holding deferred by the uncommitted-task-write guard, the
// guard naming the session's pid and its transaction's age, in the audit as
// in the pass. Once the transaction ends the membership goes.
func TestUncommittedWriteHoldsMaybeDispatchingOwner(t *testing.T) {
	t.Parallel()
	for name, immediate := range map[string]bool{"live api process": false, "immediate owner": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			owner := "7@api-idle"
			api := f.AppStatus(owner, "api", 120*time.Second, time.Second)
			reserved := []string{"shared:domain-held"}
			finished := f.Task(judge.StateCompleted, api, reserved, 10*time.Minute)
			if immediate {
				owner = judge.ImmediateOwnerPrefix + finished
			}
			f.Acquire(owner, finished, reserved, true)
			domain := judge.ResourceKeyPrefix + "domain-held"
			pid, rollback := openTaskWrite(f, false)

			r := f.reaper(nil)
			for _, mode := range []string{reaper.ModeAudit, reaper.ModeOnce} {
				rep := f.pass(r, mode)
				held := findingFor(rep, domain, owner)
				require.Equal(t, reaper.ResultDeferred, held.Result, mode)
				require.Equal(t, judge.DeferredUncommittedTaskWrite, held.Deferred, mode)
				g := guardNamed(rep, judge.GuardUncommittedTaskWrite)
				require.NotNil(t, g, "%s: %+v", mode, rep.Guards)
				require.Equal(t, pid, g.UncommittedWrite.PID, mode)
				require.Equal(t, reaper.AgeFromActivity, g.UncommittedWrite.AgeFrom, mode)
				require.Positive(t, g.UncommittedWrite.TransactionAge, mode)
				require.Equal(t, 1, g.UncommittedWrite.Held, mode)
				require.Contains(t, g.Reason, fmt.Sprintf("session pid %d holds an uncommitted write to core_task, its transaction open for %s (pg_stat_activity)",
					pid, g.UncommittedWrite.TransactionAge), mode)
				require.Contains(t, f.Members(domain), owner, mode)
			}

			rollback()
			rep := f.pass(r, reaper.ModeOnce)
			require.Nil(t, guardNamed(rep, judge.GuardUncommittedTaskWrite))
			if findingFor(rep, domain, owner).Result == reaper.ResultSuspected {
				// The live owner's membership, its finished task's lock
				// released by the pass before, is now judged by itself.
				f.ageSuspects(reaper.DefaultConfirmAfter)
				rep = f.pass(r, reaper.ModeOnce)
			}
			require.Equal(t, reaper.ResultReleased, findingFor(rep, domain, owner).Result)
			require.NotContains(t, f.Members(domain), owner)
		})
	}
}

// TestUncommittedWriteHoldIsBounded: a transaction open for confirm_after
// no longer holds anything, by its age (pg_stat_activity, the role's own
// session here) or, for a role that may not see it (no pg_read_all_stats),
// since earlier passes first saw it in pg_locks, remembered in Redis.
func TestUncommittedWriteHoldIsBounded(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*fixture, string, string) {
		// An immediate-<T> owner whose task finished: owner-gone pass after
		// pass, whatever became of its task lock.
		f := newFixture(t)
		api := f.AppStatus("7@api-bound", "api", 120*time.Second, time.Second)
		reserved := []string{"shared:domain-bound"}
		finished := f.Task(judge.StateCompleted, api, reserved, 10*time.Minute)
		owner := judge.ImmediateOwnerPrefix + finished
		f.Acquire(owner, finished, reserved, true)
		return f, owner, judge.ResourceKeyPrefix + "domain-bound"
	}

	t.Run("age", func(t *testing.T) {
		t.Parallel()
		f, owner, domain := setup(t)
		openTaskWrite(f, false)
		const bound = 1500 * time.Millisecond
		r := f.reaper(func(c *reaper.Config) { c.Policy.ConfirmAfter = bound })
		require.Equal(t, reaper.ResultDeferred, findingFor(f.pass(r, reaper.ModeAudit), domain, owner).Result)
		time.Sleep(bound)
		rep := f.pass(r, reaper.ModeOnce)
		require.Equal(t, reaper.ResultReleased, findingFor(rep, domain, owner).Result)
		require.Nil(t, guardNamed(rep, judge.GuardUncommittedTaskWrite))
	})

	t.Run("first sighting", func(t *testing.T) {
		t.Parallel()
		f, owner, domain := setup(t)
		pid, _ := openTaskWrite(f, false)
		p := pvRestrict(t, f.Redis, f.DB)
		_, err := f.DB.Pool.Exec(f.Ctx, "REVOKE pg_read_all_stats FROM "+pgx.Identifier{p.role}.Sanitize())
		require.NoError(t, err)
		pool, err := pgxpool.New(f.Ctx, p.database)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		r, err := reaper.New(reaper.DefaultConfig(), f.Redis.Client, pool, passtest.Logger())
		require.NoError(t, err)

		for range 2 {
			rep := f.pass(r, reaper.ModeOnce)
			require.Equal(t, reaper.ResultDeferred, findingFor(rep, domain, owner).Result)
			g := guardNamed(rep, judge.GuardUncommittedTaskWrite)
			require.NotNil(t, g)
			require.Equal(t, pid, g.UncommittedWrite.PID)
			require.Equal(t, reaper.AgeFromLocks, g.UncommittedWrite.AgeFrom)
			require.Contains(t, g.Reason, "grant pg_read_all_stats")
		}
		// As if confirm_after had passed since the first sighting.
		seen, err := redislocks.ReadOpenWrites(f.Ctx, f.Redis.Client, time.Second)
		require.NoError(t, err)
		require.Len(t, seen, 1)
		for k, at := range seen {
			seen[k] = at.Add(-reaper.DefaultConfirmAfter)
		}
		require.NoError(t, redislocks.WriteOpenWrites(f.Ctx, f.Redis.Client, time.Second, time.Hour, seen))
		rep := f.pass(r, reaper.ModeOnce)
		require.Equal(t, reaper.ResultReleased, findingFor(rep, domain, owner).Result)
		require.Nil(t, guardNamed(rep, judge.GuardUncommittedTaskWrite))
	})
}

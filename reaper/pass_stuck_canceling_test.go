package reaper_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestPassStuckCanceling: a canceling task its live worker claimed, never
// started and holds no lock of is canceled once confirmed, and the lock its
// owner leaked on a resource it reserves is no longer justified by it; a
// canceling task whose worker holds its task lock, and one that started,
// are left alone.
func TestPassStuckCanceling(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.Worker("1@w", time.Second)
	leaked, held, ran := passtest.Repo(), passtest.Repo(), passtest.Repo()
	stuck := f.Task(judge.StateCanceling, w, []string{leaked}, -1)
	locked := f.Task(judge.StateCanceling, w, []string{held}, -1)
	f.Acquire("1@w", locked, []string{held}, false)
	started := f.Task(judge.StateCanceling, w, []string{ran}, -1)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET started_at = now() - interval '1 minute' WHERE pulp_id = $1`, started)
	require.NoError(t, err)
	// A finished task of the same worker leaked its lock on the resource
	// the stuck task reserves.
	require.NoError(t, f.Redis.Client.Set(f.Ctx, judge.ResourceKeyPrefix+leaked, "1@w", 0).Err())

	r := f.reaper(nil)
	rep := f.pass(r, reaper.ModeOnce)
	tf := taskFindingFor(rep, stuck)
	require.NotNil(t, tf)
	require.Equal(t, judge.VerdictStuckCanceling, tf.Verdict)
	require.Equal(t, judge.ActionSuspect, tf.Action)
	state, _, _, _ := f.TaskRow(stuck)
	require.Equal(t, judge.StateCanceling, state, "not before confirmation")
	lf := findingFor(rep, judge.ResourceKeyPrefix+leaked, "1@w")
	require.NotNil(t, lf)
	require.Equal(t, judge.VerdictNoTask, lf.Verdict, "a stuck canceling row justifies nothing")

	f.ageSuspects(time.Hour)
	rep = f.pass(r, reaper.ModeOnce)
	tf = taskFindingFor(rep, stuck)
	require.NotNil(t, tf)
	require.Equal(t, reaper.ResultUpdated, tf.Result)
	state, appLock, reason, finished := f.TaskRow(stuck)
	require.Equal(t, judge.StateCanceled, state)
	require.NotNil(t, appLock)
	require.NotNil(t, finished)
	require.NotNil(t, reason)
	require.Contains(t, *reason, "never started")
	require.Equal(t, "", f.Get(judge.ResourceKeyPrefix+leaked), "the leaked lock is released")

	for _, id := range []string{locked, started} {
		require.Nil(t, taskFindingFor(rep, id))
		state, _, _, _ := f.TaskRow(id)
		require.Equal(t, judge.StateCanceling, state)
	}
	require.Equal(t, "1@w", f.Get(judge.TaskKeyPrefix+locked))
	require.Equal(t, "1@w", f.Get(judge.ResourceKeyPrefix+held))
}

// TestPassStuckCancelingWithoutStartedAtGrant: under a role that may not
// read started_at, a stuck canceling task is reported, held with the grant
// it lacks, and never written, however long it has been seen.
func TestPassStuckCancelingWithoutStartedAtGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.Worker("1@w", time.Second)
	stuck := f.Task(judge.StateCanceling, w, []string{passtest.Repo()}, -1)

	role := "lr_nostart_" + strings.ReplaceAll(stuck[:8], "-", "")
	_, err := f.DB.Pool.Exec(f.Ctx, privilege.PostgresSQLFor(role, "secret"))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = f.DB.Pool.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
		_, _ = f.DB.Pool.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
	})
	_, err = f.DB.Pool.Exec(f.Ctx, "REVOKE SELECT (started_at) ON core_task FROM "+pgx.Identifier{role}.Sanitize())
	require.NoError(t, err)
	du, err := url.Parse(f.DB.URL)
	require.NoError(t, err)
	du.User = url.UserPassword(role, "secret")
	pool, err := pgxpool.New(f.Ctx, du.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	r, err := reaper.New(passConfig(), f.Redis.Client, pool, passtest.Logger())
	require.NoError(t, err)

	for range 2 {
		rep := f.pass(r, reaper.ModeOnce)
		tf := taskFindingFor(rep, stuck)
		require.NotNil(t, tf)
		require.Equal(t, judge.VerdictStuckCanceling, tf.Verdict)
		require.Equal(t, judge.ActionReport, tf.Action)
		require.Equal(t, reaper.ResultReported, tf.Result)
		require.Equal(t, judge.DeferredStartsUnread, tf.Deferred)
		require.Contains(t, tf.Deferred, "started_at")
		f.ageSuspects(time.Hour)
	}
	state, _, _, _ := f.TaskRow(stuck)
	require.Equal(t, judge.StateCanceling, state)
}

package pulpdb

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/pgcluster"
	"github.com/lock-reaper/lock-reaper/internal/pulpschema"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// secret is the password the tests put in database URLs: no error may
// print it.
const secret = "pw-never-printed-7f3a"

// withPassword is the URL with secret as its password. The test server
// trusts loopback connections, so it is accepted and never checked.
func withPassword(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), secret)
	return u.String()
}

// TestNotWritableNamesWhereNeverThePassword: every way a pass meets a
// database whose transactions are read-only (the snapshot's mark, the pass
// lock's check, a task update's check) names the host, the database and the
// user, says how to let the role write, and never prints the password.
func TestNotWritableNamesWhereNeverThePassword(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	id := f.Task(judge.StateRunning, w, nil, -1)
	readOnlyPool(t, f) // sets the database read-only
	pool := poolOf(t, withPassword(t, f.DB.URL), nil)
	cc := pool.Config().ConnConfig
	require.Equal(t, secret, cc.Password)

	snap, err := ReadSnapshot(f.Ctx, pool, testTimeout, TaskRefs{})
	require.NoError(t, err)
	require.NotNil(t, snap.NotWritable)
	_, _, lockErr := AcquirePassLock(f.Ctx, pool, testTimeout, false)
	_, updateErr := (&TaskUpdater{Pool: pool, Timeout: testTimeout, Log: passtest.Logger()}).
		UpdateBatch(f.Ctx, []judge.TaskJudgement{lost(id, w, judge.StateRunning, judge.StateCanceled)})
	for _, err := range []error{snap.NotWritable, lockErr, updateErr} {
		require.Error(t, err)
		msg := err.Error()
		require.Contains(t, msg, fmt.Sprintf(`database %q on %s:%d as user %q`, f.DB.Name, cc.Host, cc.Port, cc.User))
		require.Contains(t, msg, "read-only transactions")
		require.Contains(t, msg, `ALTER ROLE "postgres" SET default_transaction_read_only = off`)
		require.NotContains(t, msg, secret)
	}
}

// TestUnreachableDatabaseErrorsNeverThePassword: every read and write of a
// pass against a server that does not answer fails naming the host (and,
// where the driver says it, the user and database), never the password.
func TestUnreachableDatabaseErrorsNeverThePassword(t *testing.T) {
	t.Parallel()
	// A port just freed: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	raw := withPassword(t, "postgres://lock_reaper@127.0.0.1:"+strconv.Itoa(port)+"/pulp?sslmode=disable&connect_timeout=2")
	pool := poolOf(t, raw, nil)
	ctx := context.Background()
	host := "127.0.0.1:" + strconv.Itoa(port)

	_, snapErr := ReadSnapshot(ctx, pool, testTimeout, TaskRefs{})
	_, hbErr := ReadHeartbeats(ctx, pool, testTimeout)
	_, _, lockErr := AcquirePassLock(ctx, pool, testTimeout, false)
	secondErr := CheckSecondConnection(ctx, pool, testTimeout)
	_, updateErr := (&TaskUpdater{Pool: pool, Timeout: testTimeout, Log: passtest.Logger()}).
		UpdateBatch(ctx, []judge.TaskJudgement{lost(sim.NewUUID(), "", judge.StateRunning, judge.StateCanceled)})
	_, checkErr := ReadSharedCheck(ctx, pool, testTimeout, []string{"repo-1"}, []string{"1@w"}, time.Second, nil,
		func([]judge.OpenWrite, time.Time) bool { return false })
	for i, err := range []error{snapErr, hbErr, lockErr, secondErr, updateErr, checkErr} {
		require.Error(t, err, "call %d", i)
		msg := err.Error()
		require.Contains(t, msg, host, "call %d", i)
		require.NotContains(t, msg, secret, "call %d", i)
	}
	require.Contains(t, snapErr.Error(), "user=lock_reaper database=pulp")
}

// TestHotStandbyIsNotWritable: on a real hot standby (pg_basebackup of a
// primary the test starts) the snapshot is read and marked, and the pass
// lock and a task update stop before they write, saying to point the
// reaper at the primary.
func TestHotStandbyIsNotWritable(t *testing.T) {
	t.Parallel()
	primary := pgcluster.StartPrimary(t)
	primary.Exec(t, "postgres", "CREATE DATABASE pulp")
	primary.Exec(t, "pulp", pulpschema.SQL)
	onPrimary := &passtest.Fixture{T: t, Ctx: context.Background(), DB: primaryDatabase(t, primary.URL("pulp"))}
	w := onPrimary.Worker("1@w", 10*time.Minute)
	id := onPrimary.Task(judge.StateRunning, w, nil, -1)
	standby := primary.StartStandby(t)
	standby.WaitReplayed(t, primary)
	pool := poolOf(t, withPassword(t, standby.URL("pulp")), nil)
	cc := pool.Config().ConnConfig

	snap, err := ReadSnapshot(onPrimary.Ctx, pool, testTimeout, TaskRefs{})
	require.NoError(t, err)
	require.Contains(t, snap.Tasks, id, "the standby replays the primary")
	require.Equal(t, &NotWritableError{Host: fmt.Sprintf("%s:%d", cc.Host, cc.Port), Database: "pulp", User: "postgres", Standby: true}, snap.NotWritable)

	_, got, lockErr := AcquirePassLock(onPrimary.Ctx, pool, testTimeout, true)
	require.False(t, got)
	_, updateErr := (&TaskUpdater{Pool: pool, Timeout: testTimeout, Log: passtest.Logger()}).
		UpdateBatch(onPrimary.Ctx, []judge.TaskJudgement{lost(id, w, judge.StateRunning, judge.StateCanceled)})
	for _, err := range []error{snap.NotWritable, lockErr, updateErr} {
		var nw *NotWritableError
		require.ErrorAs(t, err, &nw)
		require.True(t, nw.Standby)
		require.Contains(t, err.Error(), "is a hot standby (pg_is_in_recovery() is true)")
		require.Contains(t, err.Error(), "point database.url at the primary")
		require.NotContains(t, err.Error(), secret)
	}
}

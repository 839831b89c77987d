package pulpdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestReadSnapshot: one read returns every heartbeat row, the open tasks and
// the tasks the holdings name, with the database's now to measure them
// against; a database that takes writes is not marked.
func TestReadSnapshot(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Second)
	f.AppStatus("api@h", "api", 45*time.Second, time.Minute)
	running := f.Task(judge.StateRunning, w, []string{"repo-1", "shared:" + passtest.Domain}, -1)
	named := f.Task(judge.StateCompleted, w, []string{"repo-2"}, time.Hour)
	f.Task(judge.StateCompleted, w, []string{"repo-3"}, time.Hour) // neither open nor named
	refs := TaskRefsOf([]judge.Holding{{Key: judge.TaskKeyPrefix + named, Kind: judge.KindTask, Owner: "1@w"}})

	before := dbNow(t, f)
	snap, err := ReadSnapshot(f.Ctx, f.DB.Pool, testTimeout, refs)
	require.NoError(t, err)
	after := dbNow(t, f)

	require.Nil(t, snap.NotWritable)
	require.False(t, snap.Now.Before(before) || snap.Now.After(after), "the database's now, %v, between %v and %v", snap.Now, before, after)
	ages := map[string]time.Duration{}
	for _, r := range snap.AppStatuses {
		ages[r.Name] = snap.Now.Sub(r.LastHeartbeat).Round(time.Second)
	}
	require.Equal(t, map[string]time.Duration{"1@w": 10 * time.Second, "api@h": time.Minute}, ages)
	require.ElementsMatch(t, []string{running, named}, keysOf(snap.Tasks))
	require.Equal(t, judge.Task{ID: running, Name: "pulp_rpm.app.tasks.synchronize", State: judge.StateRunning, AppLockID: w,
		Reserved: []string{"repo-1", "shared:" + passtest.Domain}}, snap.Tasks[running])
}

// TestReadSnapshotIsOneRepeatableReadTransaction: the fleet and the tasks
// are read in one read-only REPEATABLE READ transaction on one connection,
// so that every row is judged at one instant, and in the same number of
// statements whether the holdings name one task or two hundred.
func TestReadSnapshotIsOneRepeatableReadTransaction(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 0)
	var holdings []judge.Holding
	for range 200 {
		id := f.Task(judge.StateCompleted, w, nil, time.Hour)
		holdings = append(holdings, judge.Holding{Key: judge.TaskKeyPrefix + id, Kind: judge.KindTask, Owner: "1@w"})
	}
	pool, log := tracedPool(t, f)

	counts := map[int]int{}
	for _, n := range []int{1, 200} {
		snap, err := ReadSnapshot(f.Ctx, pool, testTimeout, TaskRefsOf(holdings[:n]))
		require.NoError(t, err)
		require.Len(t, snap.Tasks, n)
		pids, sqls := log.take()
		requireOneTransaction(t, pids, sqls, "begin isolation level repeatable read read only")
		counts[n] = len(sqls)
	}
	require.Equal(t, counts[1], counts[200], "statements for 1 and for 200 named tasks")
}

// TestReadSnapshotNotWritable: a database whose transactions are read-only
// by default is still read, and marked with what names it (host, database,
// user); the snapshot's own transaction, read-only by request, does not
// mark a writable one (TestReadSnapshot).
func TestReadSnapshotNotWritable(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 0)
	running := f.Task(judge.StateRunning, w, nil, -1)
	pool := readOnlyPool(t, f)

	snap, err := ReadSnapshot(f.Ctx, pool, testTimeout, TaskRefs{})
	require.NoError(t, err)
	require.Contains(t, snap.Tasks, running)
	require.Len(t, snap.AppStatuses, 1)
	cc := pool.Config().ConnConfig
	require.Equal(t, &NotWritableError{Host: fmt.Sprintf("%s:%d", cc.Host, cc.Port), Database: f.DB.Name, User: cc.User, ReadOnly: true}, snap.NotWritable)
}

// TestReadSnapshotTimeout: a read the database cannot answer in time (a
// table locked by another session) fails within its timeout, naming the
// table, rather than holding the pass.
func TestReadSnapshotTimeout(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	tx, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(f.Ctx)) // error dropped: the lock's only purpose
	_, err = tx.Exec(f.Ctx, "LOCK TABLE core_appstatus IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	start := time.Now()
	_, err = ReadSnapshot(f.Ctx, f.DB.Pool, 300*time.Millisecond, TaskRefs{})
	require.ErrorContains(t, err, "read core_appstatus")
	require.Less(t, time.Since(start), 3*time.Second)
}

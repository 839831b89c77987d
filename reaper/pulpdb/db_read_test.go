package pulpdb

import (
	"testing"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/stretchr/testify/require"
)

// TestReadTasksAsPlainScan: the two statements and the interning scanners
// return exactly the rows, and the values, that one plain query scanned the
// ordinary way does: each task once, NULL and empty arrays and NULL
// elements as pgx gives them, nothing that is neither named nor open.
func TestReadTasksAsPlainScan(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	w := f.Worker("1@w", 0)
	open := f.Task(judge.StateRunning, w, []string{"prn:rpm.rpmrepository:r1", "shared:prn:core.domain:d1"}, -1)
	openNamed := f.Task(judge.StateRunning, w, []string{"prn:rpm.rpmrepository:r2", "shared:prn:core.domain:d1"}, -1)
	unclaimedRunning := f.Task(judge.StateRunning, "", nil, -1)
	finishedEmpty := f.Task(judge.StateCompleted, w, []string{}, time.Hour)
	waitingNull := f.Task(judge.StateWaiting, "", nil, -1)
	nullElements := f.Task(judge.StateCanceled, "", nil, time.Minute)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET reserved_resources_record = ARRAY[NULL, 'x', NULL, 'shared:y']::text[] WHERE pulp_id = $1`, nullElements)
	require.NoError(t, err)
	f.Task(judge.StateCompleted, w, []string{"prn:rpm.rpmrepository:elsewhere"}, time.Hour) // neither named nor open
	ids := []string{openNamed, finishedEmpty, waitingNull, nullElements, finishedEmpty, sim.NewUUID()}

	tx, err := f.DB.Pool.BeginTx(f.Ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer tx.Rollback(f.Ctx) // error dropped: read-only
	got, err := readTasks(f.Ctx, tx, TaskRefs{ids: ids})
	require.NoError(t, err)

	rows, err := tx.Query(f.Ctx, `SELECT pulp_id::text, name, state, app_lock_id::text,
	       array_remove(reserved_resources_record, NULL), finished_at
	FROM core_task WHERE pulp_id = ANY($1::uuid[])
	   OR (state IN ('waiting', 'running', 'canceling') AND (app_lock_id IS NOT NULL OR state <> 'waiting'))`, ids)
	require.NoError(t, err)
	want := map[string]judge.Task{}
	for rows.Next() {
		var task judge.Task
		var lock *string
		require.NoError(t, rows.Scan(&task.ID, &task.Name, &task.State, &lock, &task.Reserved, &task.FinishedAt))
		if lock != nil {
			task.AppLockID = *lock
		}
		want[task.ID] = task
	}
	require.NoError(t, rows.Err())

	require.Equal(t, want, got)
	require.ElementsMatch(t, []string{open, openNamed, unclaimedRunning, finishedEmpty, waitingNull, nullElements}, keysOf(got))
	require.Equal(t, []string{"x", "shared:y"}, got[nullElements].Reserved)
	require.NotNil(t, got[finishedEmpty].Reserved, "an empty array is not NULL")
	require.Empty(t, got[finishedEmpty].Reserved)
	require.Nil(t, got[waitingNull].Reserved)
	require.Equal(t, w, got[open].AppLockID)
}

func keysOf(m map[string]judge.Task) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestReadTasksSharesHoldingStrings: a task row keeps the task id and the
// exclusive resources of the holdings that name them, not copies of its own,
// which is most of what a hundred thousand task rows would cost.
func TestReadTasksSharesHoldingStrings(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	w := f.Worker("1@w", 0)
	own := "prn:rpm.rpmrepository:" + sim.NewUUID()
	id := f.Task(judge.StateRunning, w, []string{own, "shared:prn:core.domain:d1", "prn:rpm.rpmrepository:unlocked"}, -1)
	holdings := []judge.Holding{
		{Key: judge.TaskKeyPrefix + id, Kind: judge.KindTask, Owner: "1@w"},
		{Key: judge.ResourceKeyPrefix + own, Kind: judge.KindExclusive, Owner: "1@w"},
	}
	refs := TaskRefsOf(holdings)

	tx, err := f.DB.Pool.BeginTx(f.Ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	require.NoError(t, err)
	defer tx.Rollback(f.Ctx) // error dropped: read-only
	got, err := readTasks(f.Ctx, tx, refs)
	require.NoError(t, err)

	task := got[id]
	require.Equal(t, id, task.ID)
	require.Equal(t, []string{own, "shared:prn:core.domain:d1", "prn:rpm.rpmrepository:unlocked"}, task.Reserved)
	require.Same(t, unsafe.StringData(holdings[0].TaskID()), unsafe.StringData(task.ID), "the task id is the task lock's")
	require.Same(t, unsafe.StringData(holdings[1].Resource()), unsafe.StringData(task.Reserved[0]), "the exclusive resource is the lock's")
}

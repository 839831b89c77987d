package pulpdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// The task rows explain and the status page read beside a pass's snapshot,
// each in a read-only transaction of its own. Nothing here writes.

// TaskRow is a core_task row with its creation time, which decides the order
// in which Pulp's workers fetch waiting tasks.
type TaskRow struct {
	judge.Task

	Created time.Time
}

// ExplainedTask holds the rows explain needs beyond a pass's snapshot. They
// are read in a read-only transaction of their own right after the snapshot.
type ExplainedTask struct {
	TaskID string
	// Row is nil when no core_task row has TaskID.
	Row *TaskRow
	// Ahead are the waiting tasks created before it whose reservations
	// conflict with its own, oldest first, at most MaxAhead of them. Older
	// running tasks are not among them: they hold their locks, which the
	// snapshot already shows.
	Ahead []TaskRow
	// AheadTotal counts all of them.
	AheadTotal int
}

// MaxAhead bounds how many older conflicting tasks an inspection loads.
const MaxAhead = 50

// explainTaskSQL and explainAheadSQL name only columns of pulp-protocol.md §3.
const (
	explainTaskSQL = `
SELECT pulp_id::text, name, state, app_lock_id::text,
       coalesce(array_remove(reserved_resources_record, NULL), '{}'), finished_at, pulp_created
FROM core_task WHERE pulp_id = $1::uuid`

	// explainAheadSQL finds the older waiting tasks that reserve one of the
	// names in $2: Pulp's workers fetch waiting tasks in pulp_created order
	// and never start one before an older one it conflicts with. The caller
	// passes exactly the forms that conflict with the task (see
	// conflictingForms), so the limit never cuts off a conflicting task in
	// favour of a harmless one.
	explainAheadSQL = `
SELECT pulp_id::text, name, state, app_lock_id::text,
       coalesce(array_remove(reserved_resources_record, NULL), '{}'), finished_at, pulp_created,
       count(*) OVER ()
FROM core_task
WHERE state = 'waiting'
  AND pulp_created < $1
  AND pulp_id <> $3::uuid
  AND reserved_resources_record && $2::text[]
ORDER BY pulp_created, pulp_id
LIMIT $4`
)

// ReadExplainedTask reads a task and the older waiting tasks that must go
// before it, in one read-only transaction.
func ReadExplainedTask(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, taskID string) (*ExplainedTask, error) {
	out := &ExplainedTask{TaskID: taskID}
	if !judge.IsTaskUUID(taskID) {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin explain transaction: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // error dropped: read-only

	rows, err := tx.Query(ctx, explainTaskSQL, taskID)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", taskID, err)
	}
	found, _, err := scanTaskRows(rows)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", taskID, err)
	}
	if len(found) == 0 {
		return out, nil
	}
	out.Row = &found[0]
	forms := ConflictingEntries(out.Row.Reserved)
	if len(forms) == 0 || judge.Final(out.Row.State) {
		return out, nil
	}
	rows, err = tx.Query(ctx, explainAheadSQL, out.Row.Created, forms, taskID, MaxAhead)
	if err != nil {
		return nil, fmt.Errorf("read tasks ahead of %s: %w", taskID, err)
	}
	if out.Ahead, out.AheadTotal, err = scanTaskRows(rows); err != nil {
		return nil, fmt.Errorf("read tasks ahead of %s: %w", taskID, err)
	}
	return out, nil
}

// scanTaskRows reads rows of explainTaskSQL or explainAheadSQL; the total is
// the window count of the latter.
func scanTaskRows(rows pgx.Rows) ([]TaskRow, int, error) {
	defer rows.Close()
	var out []TaskRow
	total := 0
	withTotal := len(rows.FieldDescriptions()) == 8
	for rows.Next() {
		var t TaskRow
		var appLock *string
		dest := []any{&t.ID, &t.Name, &t.State, &appLock, &t.Reserved, &t.FinishedAt, &t.Created}
		if withTotal {
			dest = append(dest, &total)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		if appLock != nil {
			t.AppLockID = *appLock
		}
		out = append(out, t)
	}
	return out, total, rows.Err()
}

// waitingTasksSQL lists the waiting, unclaimed tasks in the order Pulp's
// workers fetch them (pulp-protocol.md §4: pulp_created order), with their
// total. It names only columns of pulp-protocol.md §3.
const waitingTasksSQL = `
SELECT pulp_id::text, name, state, app_lock_id::text,
       coalesce(array_remove(reserved_resources_record, NULL), '{}'), finished_at, pulp_created,
       count(*) OVER ()
FROM core_task
WHERE state = 'waiting' AND app_lock_id IS NULL
ORDER BY pulp_created, pulp_id
LIMIT $1`

// ReadWaitingTasks reads the first limit waiting, unclaimed tasks in Pulp's own
// fetch order, and how many there are, in one read-only transaction.
func ReadWaitingTasks(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, limit int) ([]TaskRow, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, fmt.Errorf("begin waiting tasks transaction: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // error dropped: read-only
	rows, err := tx.Query(ctx, waitingTasksSQL, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("read waiting tasks: %w", err)
	}
	out, total, err := scanTaskRows(rows)
	if err != nil {
		return nil, 0, fmt.Errorf("read waiting tasks: %w", err)
	}
	return out, total, nil
}

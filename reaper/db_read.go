package reaper

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// dbSnapshot is what one read of the database found.
type dbSnapshot struct {
	now         time.Time
	appStatuses []heartbeat.AppStatus
	tasks       map[string]Task
}

// readTasksSQL loads, in one statement, the tasks named by task locks or by
// immediate-<uuid> owners ($1), and the incomplete tasks that are claimed or
// are running/canceling without a claim (about one per worker). It names only
// the columns lock-reaper relies on; NULL array elements are dropped so that
// an odd record cannot fail the read.
const readTasksSQL = `
SELECT pulp_id::text, name, state, app_lock_id::text,
       array_remove(reserved_resources_record, NULL), finished_at
FROM core_task WHERE pulp_id = ANY($1::uuid[])
UNION
SELECT pulp_id::text, name, state, app_lock_id::text,
       array_remove(reserved_resources_record, NULL), finished_at
FROM core_task
WHERE state IN ('waiting', 'running', 'canceling')
  AND (app_lock_id IS NOT NULL OR state <> 'waiting')`

// readDatabase reads the fleet and the tasks in one read-only REPEATABLE READ
// transaction, so that every row is judged against the same instant: the
// database's now(), never the reaper's clock. It runs a fixed number of
// statements whatever the number of locks.
func readDatabase(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, taskIDs []string) (dbSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return dbSnapshot{}, fmt.Errorf("begin snapshot transaction: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only

	var snap dbSnapshot
	if err := tx.QueryRow(ctx, "SELECT now()").Scan(&snap.now); err != nil {
		return dbSnapshot{}, fmt.Errorf("read database clock: %w", err)
	}
	if snap.appStatuses, err = heartbeat.Read(ctx, tx); err != nil {
		return dbSnapshot{}, err
	}
	if snap.tasks, err = readTasks(ctx, tx, taskIDs); err != nil {
		return dbSnapshot{}, err
	}
	return snap, nil
}

func readTasks(ctx context.Context, tx pgx.Tx, ids []string) (map[string]Task, error) {
	if ids == nil {
		ids = []string{}
	}
	rows, err := tx.Query(ctx, readTasksSQL, ids)
	if err != nil {
		return nil, fmt.Errorf("read core_task: %w", err)
	}
	defer rows.Close()
	tasks := make(map[string]Task, len(ids))
	for rows.Next() {
		var t Task
		var appLock *string
		if err := rows.Scan(&t.ID, &t.Name, &t.State, &appLock, &t.Reserved, &t.FinishedAt); err != nil {
			return nil, fmt.Errorf("read core_task: %w", err)
		}
		if appLock != nil {
			t.AppLockID = *appLock
		}
		tasks[t.ID] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read core_task: %w", err)
	}
	return tasks, nil
}

// taskIDsOf lists the tasks a set of holdings refers to: the task of every
// task lock and the task of every immediate-<uuid> owner.
func taskIDsOf(holdings []Holding) []string {
	seen := make(map[string]struct{}, len(holdings))
	var ids []string
	add := func(id string) {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			ids = append(ids, id)
		}
	}
	for _, h := range holdings {
		if h.TaskID != "" {
			add(h.TaskID)
		}
		if id, ok := immediateTaskID(h.Owner); ok {
			add(id)
		}
	}
	return ids
}

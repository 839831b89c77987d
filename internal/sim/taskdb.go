package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
)

// querier is what the fleet's statements run on: the pool, or the transaction
// of an immediate task dispatched inside a request transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// The statements below are pulpcore's task life cycle. Each update is
// conditional on the state and claim it expects, as pulpcore's are, so a
// statement that lost a race changes nothing and says so (zero rows).
const (
	// Pulp's fetch: waiting tasks nobody claimed, oldest first.
	sqlWaitingTasks = `SELECT pulp_id::text, coalesce(reserved_resources_record, '{}'), hstore_to_array(versions)
FROM core_task WHERE state = 'waiting' AND app_lock_id IS NULL ORDER BY pulp_created LIMIT $1`

	sqlClaim = `UPDATE core_task SET app_lock_id = $2, pulp_last_updated = now()
WHERE pulp_id = $1 AND state = 'waiting' AND app_lock_id IS NULL`

	// set_running also starts a progress report, so that a reaper that
	// fails a lost task has a running report to move along with it.
	sqlSetRunning = `WITH t AS (
  UPDATE core_task SET state = 'running', started_at = now(), pulp_last_updated = now()
  WHERE pulp_id = $1 AND state = 'waiting' AND app_lock_id = $2 RETURNING pulp_id)
INSERT INTO core_progressreport (pulp_id, message, code, state, task_id)
SELECT $3, 'Simulated work', 'sim.work', 'running', pulp_id FROM t`

	sqlSetCanceling = `UPDATE core_task SET state = 'canceling', pulp_last_updated = now()
WHERE pulp_id = $1 AND state IN ('waiting', 'running') AND app_lock_id = $2`

	// pulpcore's set_canceling of a task a worker claimed: cancel_task then
	// only signals, and the worker finishes the cancel, if it ever runs it.
	// (An immediate task its API process claimed only gets the signal: the
	// simulated API runs it to its end.)
	sqlSetCancelingClaimed = `UPDATE core_task SET state = 'canceling', pulp_last_updated = now()
WHERE pulp_id = $1 AND state = 'waiting'
  AND app_lock_id IN (SELECT pulp_id FROM core_appstatus WHERE app_type = 'worker')`

	// The API's cancel of a waiting task takes the claim itself.
	sqlCancelWaiting = `UPDATE core_task SET state = 'canceling', app_lock_id = $2, pulp_last_updated = now()
WHERE pulp_id = $1 AND state = 'waiting' AND app_lock_id IS NULL`

	// finish moves a task from one of the states $5 to the final state $3,
	// with error {"reason": $4} unless $4 is NULL, and its running progress
	// reports along.
	sqlFinish = `WITH t AS (
  UPDATE core_task SET state = $3, finished_at = now(), pulp_last_updated = now(),
    error = CASE WHEN $4::text IS NULL THEN NULL ELSE jsonb_build_object('reason', $4::text) END
  WHERE pulp_id = $1 AND app_lock_id = $2 AND state = ANY($5::text[]) RETURNING pulp_id),
p AS (
  UPDATE core_progressreport SET state = $3, pulp_last_updated = now()
  WHERE task_id IN (SELECT pulp_id FROM t) AND state = 'running')
SELECT count(*) FROM t`

	// An immediate task the API could not lock waits for a worker.
	sqlDeferImmediate = `UPDATE core_task SET app_lock_id = NULL, pulp_last_updated = now()
WHERE pulp_id = $1 AND state = 'waiting' AND app_lock_id = $2`

	sqlTaskRow = `SELECT state, coalesce(app_lock_id::text, ''), coalesce(reserved_resources_record, '{}')
FROM core_task WHERE pulp_id = $1`

	sqlInsertImmediate = `INSERT INTO core_task
  (pulp_id, pulp_created, pulp_last_updated, state, name, reserved_resources_record, pulp_domain_id, app_lock_id, immediate, deferred)
VALUES ($1, clock_timestamp(), now(), 'waiting', $2, $3, $4, $5, true, false)`

	sqlInsertAppStatus = `INSERT INTO core_appstatus (pulp_id, app_type, name, ttl, last_heartbeat, versions)
VALUES ($1, $2, $3, make_interval(secs => $4), now(), hstore($5::text[], $6::text[]))`

	sqlHeartbeat = `UPDATE core_appstatus SET last_heartbeat = now(), pulp_last_updated = now() WHERE pulp_id = $1`

	sqlRandomIncompleteTask = `SELECT pulp_id::text FROM core_task
WHERE state IN ('waiting', 'running') ORDER BY random() LIMIT 1`
)

// beforeStatement sleeps the simulated database slowness.
func (f *Fleet) beforeStatement(ctx context.Context, who string) error {
	d := time.Duration(f.dbDelay.Load())
	if f.fire(FaultSlowDB) {
		extra := f.faultRates.Load().SlowDBDelay
		d += extra
		f.recordFault(FaultSlowDB, who, "", extra.String())
	}
	if !ctxwait.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// exec runs one statement of process who and returns the rows it changed.
func (f *Fleet) exec(ctx context.Context, q querier, who, sql string, args ...any) (int64, error) {
	if err := f.beforeStatement(ctx, who); err != nil {
		return 0, err
	}
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// finish moves a task to a final state and reports whether it did.
func (f *Fleet) finish(ctx context.Context, q querier, who, taskID, appLock, final string, reason *string, from ...string) (bool, error) {
	if err := f.beforeStatement(ctx, who); err != nil {
		return false, err
	}
	var n int
	if err := q.QueryRow(ctx, sqlFinish, taskID, appLock, final, reason, from).Scan(&n); err != nil {
		return false, fmt.Errorf("set task %s %s: %w", taskID, final, err)
	}
	return n == 1, nil
}

// taskRow reads what a process needs to know about a task; ok is false when
// the row does not exist (or is not visible yet).
func (f *Fleet) taskRow(ctx context.Context, q querier, who, taskID string) (state, appLock string, record []string, ok bool, err error) {
	if err := f.beforeStatement(ctx, who); err != nil {
		return "", "", nil, false, err
	}
	err = q.QueryRow(ctx, sqlTaskRow, taskID).Scan(&state, &appLock, &record)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil, false, nil
	}
	if err != nil {
		return "", "", nil, false, fmt.Errorf("read task %s: %w", taskID, err)
	}
	return state, appLock, record, true, nil
}

func strPtr(s string) *string { return &s }

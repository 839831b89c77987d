package pulpdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// updateTasksSQL applies a batch of task updates in one statement. Each row
// changes only while the task still has the observed state and claim; a row
// that lost a race is simply not returned. A task that is finished (not
// requeued) gets finished_at, the error reason, and its running progress
// reports move to the same state. Data-modifying CTEs run whether or not the
// outer query reads them.
const updateTasksSQL = `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::bool[], $6::text[])
    AS i(id, observed_state, observed_lock, new_state, clear_claim, reason)
), updated AS (
  UPDATE core_task t SET
    state       = i.new_state,
    app_lock_id = CASE WHEN i.clear_claim THEN NULL ELSE t.app_lock_id END,
    finished_at = CASE WHEN i.clear_claim THEN t.finished_at ELSE now() END,
    error       = CASE WHEN i.clear_claim THEN t.error ELSE jsonb_build_object('reason', i.reason) END
  FROM input i
  WHERE t.pulp_id = i.id
    AND t.state = i.observed_state
    AND t.app_lock_id IS NOT DISTINCT FROM i.observed_lock
  RETURNING t.pulp_id, i.new_state, i.clear_claim
), reports AS (
  UPDATE core_progressreport p SET state = u.new_state
  FROM updated u
  WHERE p.task_id = u.pulp_id AND p.state = 'running' AND NOT u.clear_claim
  RETURNING p.pulp_id
)
SELECT pulp_id::text FROM updated`

// updateTasksUnstartedSQL is updateTasksSQL for a batch that finishes a
// stuck canceling task: such a row changes only while it has still never
// started ($7), as it was observed. The plain statement does not name
// started_at, which a role granted before it was required may not read.
var updateTasksUnstartedSQL = strings.Replace(strings.Replace(updateTasksSQL,
	`$6::text[])
    AS i(id, observed_state, observed_lock, new_state, clear_claim, reason)`,
	`$6::text[], $7::bool[])
    AS i(id, observed_state, observed_lock, new_state, clear_claim, reason, unstarted)`, 1),
	`AND t.app_lock_id IS NOT DISTINCT FROM i.observed_lock`,
	`AND t.app_lock_id IS NOT DISTINCT FROM i.observed_lock
    AND (NOT i.unstarted OR t.started_at IS NULL)`, 1)

// TaskUpdater applies the task updates of a plan in batches.
type TaskUpdater struct {
	Pool *pgxpool.Pool
	// Timeout is the deadline of each batch's transaction.
	Timeout time.Duration
	// Log is told when a lost commit reply was read back.
	Log *slog.Logger
}

// UpdateBatch applies the updates and returns, per task, whether it was
// updated; a task not updated lost a race (skipped): nothing changed.
func (u *TaskUpdater) UpdateBatch(ctx context.Context, batch []judge.TaskJudgement) ([]bool, error) {
	n := len(batch)
	ids, states, newStates, reasons := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	locks := make([]*string, n)
	clear, unstarted := make([]bool, n), make([]bool, n)
	anyUnstarted := false
	for i, tj := range batch {
		unstarted[i] = tj.Verdict == judge.VerdictStuckCanceling
		anyUnstarted = anyUnstarted || unstarted[i]
		ids[i], states[i], newStates[i], reasons[i], clear[i] = tj.ID, tj.StateBefore, tj.StateAfter, TaskReason(&tj), tj.ClearClaim
		if tj.AppLockID != "" {
			lock := tj.AppLockID
			locks[i] = &lock
		}
	}
	cctx, cancel := context.WithTimeout(ctx, u.Timeout)
	defer cancel()
	// Each batch is a transaction of its own, committed before the next
	// starts, checked to be writable on the connection that writes it.
	tx, err := beginWithTimeout(cctx, u.Pool, pgx.TxOptions{}, u.Timeout)
	if err != nil {
		return nil, fmt.Errorf("update %d tasks: %w", n, err)
	}
	// Rollback's error is dropped: after Commit, a no-op.
	defer func() { _ = tx.Rollback(context.WithoutCancel(cctx)) }()
	if err := checkWritable(cctx, tx, u.Pool.Config().ConnConfig); err != nil {
		return nil, err
	}
	sql, args := updateTasksSQL, []any{ids, states, locks, newStates, clear, reasons}
	if anyUnstarted {
		sql, args = updateTasksUnstartedSQL, append(args, unstarted)
	}
	done, err := runTaskUpdates(cctx, tx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("update %d tasks: %w", n, err)
	}
	if err := tx.Commit(cctx); err != nil {
		err = fmt.Errorf("update %d tasks: commit: %w", n, err)
		if !commitOutcomeUnknown(err) {
			return nil, err
		}
		// The commit may have been applied, its reply lost: what the
		// database holds decides the results, and so the cancel signals.
		if done, err = u.readBack(ctx, ids, newStates, clear, reasons, err); err != nil {
			return nil, err
		}
	}
	out := make([]bool, n)
	for i, tj := range batch {
		out[i] = done[tj.ID]
	}
	return out, nil
}

// runTaskUpdates runs updateTasksSQL and returns the ids it updated.
func runTaskUpdates(ctx context.Context, tx pgx.Tx, sql string, args ...any) (map[string]bool, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		done[id] = true
	}
	return done, rows.Err()
}

// commitOutcomeUnknown says a failed COMMIT may still have been applied: the
// server answered nothing (the connection broke, the deadline passed) rather
// than an error of its own, after which the transaction is rolled back.
func commitOutcomeUnknown(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr)
}

// readBackTasksSQL finds, of a batch, the tasks that hold what its update
// wrote: the state it set and, for a finished task, its reason, for a
// requeue no claim. Only this pass's update writes a reaper's reason.
const readBackTasksSQL = `
SELECT t.pulp_id::text
FROM unnest($1::uuid[], $2::text[], $3::bool[], $4::text[]) AS i(id, new_state, clear_claim, reason)
JOIN core_task t ON t.pulp_id = i.id
WHERE t.state = i.new_state
  AND CASE WHEN i.clear_claim THEN t.app_lock_id IS NULL ELSE t.error->>'reason' = i.reason END`

// readBack reads the batch's rows after a commit whose outcome is unknown,
// on a new connection, and returns the tasks the commit applied to. When
// none holds what the update wrote, the commit is taken as not applied and
// commitErr returned: the tasks are reported failed, and the next pass
// finds them as they are. When the read fails too, so does the batch.
func (u *TaskUpdater) readBack(ctx context.Context, ids, newStates []string, clear []bool, reasons []string, commitErr error) (map[string]bool, error) {
	cctx, cancel := context.WithTimeout(ctx, u.Timeout)
	defer cancel()
	rows, err := u.Pool.Query(cctx, readBackTasksSQL, ids, newStates, clear, reasons)
	if err != nil {
		return nil, fmt.Errorf("%w; reading the tasks back from PostgreSQL failed too, so whether they were updated is unknown: %w", commitErr, err)
	}
	done, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("%w; reading the tasks back from PostgreSQL failed too, so whether they were updated is unknown: %w", commitErr, err)
	}
	if len(done) == 0 {
		return nil, commitErr
	}
	out := make(map[string]bool, len(done))
	for _, id := range done {
		out[id] = true
	}
	u.Log.Warn("the reply to a task update's commit was lost; the tasks read back show it applied",
		slog.Int("tasks", len(ids)), slog.Int("updated", len(done)), slog.String("error", commitErr.Error()))
	return out, nil
}

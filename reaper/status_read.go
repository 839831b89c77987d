package reaper

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lock-reaper/lock-reaper/judge"
)

// What the status page reads beside a pass's snapshot. Nothing here writes.

// Policy is the policy the reaper judges with.
func (r *Reaper) Policy() judge.Policy { return r.cfg.Policy }

// Judged is the inspection of a snapshot a pass read: every holding judged
// with the policy, as Inspect judges, without reading anything again.
func Judged(snap judge.Snapshot, p judge.Policy, kube *KubernetesReport) *Inspection {
	return &Inspection{Snapshot: snap, Plan: judge.All(snap, p), Policy: p, Kubernetes: kube}
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

// WaitingTasks reads the first limit waiting, unclaimed tasks in Pulp's own
// fetch order, and how many there are, in one read-only transaction.
func (r *Reaper) WaitingTasks(ctx context.Context, limit int) ([]TaskRow, int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DatabaseTimeout)
	defer cancel()
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
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

// ExplainOn says what explain would say of a task, judged on an inspection
// already made: only the task's row and the older tasks that go before it
// are read, not Redis nor the rest of the database. in is not changed.
func (r *Reaper) ExplainOn(ctx context.Context, in *Inspection, taskID string) (Explanation, error) {
	ex, err := readExplainedTask(ctx, r.pool, r.cfg.DatabaseTimeout, taskID)
	if err != nil {
		return Explanation{}, err
	}
	with := *in
	with.Explained = ex
	return Explain(&with, taskID), nil
}

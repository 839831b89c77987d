package reaper

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lock-reaper/lock-reaper/judge"
)

// InspectOptions choose what an inspection reads.
type InspectOptions struct {
	// RegistryOnly skips the keyspace SCAN, as PassOptions.RegistryOnly does.
	RegistryOnly bool
	// TaskID, when set, also reads that task and the older waiting tasks
	// whose reservations conflict with it (see Inspection.Explained).
	TaskID string
	// Progress, when set, is told how many lock keys have been read.
	Progress func(keys int)
}

// Inspection is what a pass would see and decide, without acting: the
// snapshot, the plan Judge makes of it and the policy it was judged with.
// Operator tools (explain, locks, the preview of a break-glass release) read
// it; nothing in it has been written anywhere.
type Inspection struct {
	Snapshot judge.Snapshot
	Plan     judge.Plan
	Policy   judge.Policy
	// Explained is set when InspectOptions.TaskID was.
	Explained *ExplainedTask
	// Kubernetes is what the inspection read from Kubernetes, when that is on.
	Kubernetes *KubernetesReport
	// ActiveOwners counts the owners pulp:active_owners lists: a Redis
	// worker's name stays there from its first lock until its cleanup.
	ActiveOwners int
}

// TaskRow is a core_task row with its creation time, which decides the order
// in which Pulp's workers fetch waiting tasks.
type TaskRow struct {
	judge.Task

	Created time.Time `json:"pulp_created"`
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

// Inspect reads one snapshot exactly as a pass does (Redis, then the
// database) and judges it, without taking the pass lock and without writing
// anything, not even suspects.
func (r *Reaper) Inspect(ctx context.Context, opts InspectOptions) (*Inspection, error) {
	pass := PassOptions{Mode: ModeAudit, RegistryOnly: opts.RegistryOnly, Progress: opts.Progress}
	rep := &Report{}
	snap, err := r.snapshot(ctx, pass, rep)
	if err != nil {
		return nil, err
	}
	in := &Inspection{Snapshot: snap, Plan: judge.All(snap, r.cfg.Policy), Policy: r.cfg.Policy, Kubernetes: rep.Kubernetes,
		ActiveOwners: rep.activeOwners}
	if opts.TaskID != "" {
		if in.Explained, err = readExplainedTask(ctx, r.pool, r.cfg.DatabaseTimeout, opts.TaskID); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Owner returns what the inspection knows of an owner name: the liveness of
// its AppStatus rows, or for an immediate-<uuid> owner that of its task.
func (in *Inspection) Owner(name string) judge.Owner {
	return judge.LockOwner(in.Snapshot.Tasks, in.Fleet(), name)
}

// Fleet returns the liveness of every AppStatus row and name.
func (in *Inspection) Fleet() *judge.Fleet {
	return judge.FleetOf(in.Snapshot, in.Policy)
}

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

// readExplainedTask reads a task and the older waiting tasks that must go
// before it, in one read-only transaction.
func readExplainedTask(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, taskID string) (*ExplainedTask, error) {
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
	forms := judge.ConflictingEntries(out.Row.Reserved)
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

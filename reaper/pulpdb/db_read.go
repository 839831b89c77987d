package pulpdb

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// Snapshot is what one read of the database found.
type Snapshot struct {
	// Now is the database clock every age is measured against.
	Now         time.Time
	AppStatuses []heartbeat.AppStatus
	Tasks       map[string]judge.Task
	// NotWritable is set when a pass could not write to this database (a hot
	// standby, or a session whose transactions are read-only by default).
	NotWritable *NotWritableError
	// StartsUnread says the role may not read core_task.started_at: no
	// task's NeverStarted was read.
	StartsUnread bool
	// Versions says the rows' and the claimed waiting tasks' versions were
	// read: the role has the optional grant on core_task.versions.
	Versions bool
}

// Tasks are read in two statements of the snapshot transaction: first the
// incomplete tasks that are claimed or are running/canceling without a claim
// (about one per worker), then those of the tasks named by task locks or by
// immediate-<uuid> owners that the first did not return. Each row comes
// once, and each statement keeps a plan that suits it when PostgreSQL
// caches a generic one: a UNION would sort every row to drop duplicates,
// and one scan with OR becomes a sequential scan testing each row against
// the whole array of ids. They name only the columns lock-reaper relies on;
// NULL array elements are dropped so that an odd record cannot fail the read.
const (
	taskColumns = `pulp_id, name, state, app_lock_id,
       array_remove(reserved_resources_record, NULL), finished_at`
	openTasksWhere = ` FROM core_task
WHERE state IN ('waiting', 'running', 'canceling')
  AND (app_lock_id IS NOT NULL OR state <> 'waiting')`
	// The ids travel as text, which PostgreSQL parses faster than the
	// driver would.
	tasksByIDWhere = ` FROM core_task
WHERE pulp_id = ANY($1::text[]::uuid[])`
	readOpenTasksSQL = `SELECT ` + taskColumns + openTasksWhere
	readTasksByIDSQL = `SELECT ` + taskColumns + tasksByIDWhere
	// neverStartedColumn is read only when the role may read started_at
	// (an older grant lacks it): naming the column without the privilege
	// fails the whole statement.
	// Only a canceling or waiting task's start is asked for (stuck-canceling,
	// claimed-not-started): no other verdict reads it.
	neverStartedColumn     = `, state IN ('canceling', 'waiting') AND started_at IS NULL`
	readOpenTasksStartsSQL = `SELECT ` + taskColumns + neverStartedColumn + openTasksWhere
	readTasksByIDStartsSQL = `SELECT ` + taskColumns + neverStartedColumn + tasksByIDWhere
)

// ReadSnapshot reads the fleet and the tasks in one read-only REPEATABLE READ
// transaction, so that every row is judged against the same instant: the
// database's now(), never the reaper's clock. It runs a fixed number of
// statements whatever the number of locks.
func ReadSnapshot(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, refs TaskRefs) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := beginWithTimeout(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, timeout)
	if err != nil {
		return Snapshot{}, fmt.Errorf("begin snapshot transaction: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // error dropped: read-only

	var snap Snapshot
	// This transaction is read-only by request: whether a pass could write
	// is the session's default.
	nw := NotWritableError{Host: serverAddr(pool.Config().ConnConfig)}
	var starts bool
	if err := tx.QueryRow(ctx, `SELECT now(), pg_is_in_recovery(), current_setting('default_transaction_read_only') = 'on',
  current_user, current_database(), `+startedAtGrantExpr).Scan(&snap.Now, &nw.Standby, &nw.ReadOnly, &nw.User, &nw.Database, &starts); err != nil {
		return Snapshot{}, fmt.Errorf("read database clock: %w", err)
	}
	if nw.Standby || nw.ReadOnly {
		snap.NotWritable = &nw
	}
	if snap.AppStatuses, err = ReadAppStatuses(ctx, tx); err != nil {
		return Snapshot{}, err
	}
	snap.StartsUnread = !starts
	if snap.Tasks, err = readTasksStarts(ctx, tx, refs, starts); err != nil {
		return Snapshot{}, err
	}
	if snap.Versions, err = readVersions(ctx, tx, snap.AppStatuses, snap.Tasks); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// unread marks a task named by a holding whose row has not been read yet.
// PostgreSQL text cannot hold a NUL byte, so no row has this state.
const unread = "\x00"

// readTasks reads the tasks without their starts.
func readTasks(ctx context.Context, tx pgx.Tx, refs TaskRefs) (map[string]judge.Task, error) {
	return readTasksStarts(ctx, tx, refs, false)
}

// readTasksStarts reads the tasks, and whether each never started when
// starts says the role may read started_at.
func readTasksStarts(ctx context.Context, tx pgx.Tx, refs TaskRefs, starts bool) (map[string]judge.Task, error) {
	openSQL, byIDSQL := readOpenTasksSQL, readTasksByIDSQL
	if starts {
		openSQL, byIDSQL = readOpenTasksStartsSQL, readTasksByIDStartsSQL
	}
	// Each task a holding names gets its entry first, under the holding's
	// own string, which its row then shares (see uuidText.named).
	tasks := make(map[string]judge.Task, len(refs.ids))
	for _, id := range refs.ids {
		tasks[id] = judge.Task{ID: id, State: unread}
	}
	// Names, states, claims and shared resources repeat across thousands of
	// rows; each distinct value is kept once. Exclusive resources are the
	// holdings' own strings when the holdings name them.
	in := interner{claims: map[[16]byte]string{}, text: map[string]string{}, known: refs.resources}
	if err := scanTasks(ctx, tx, in, tasks, openSQL); err != nil {
		return nil, err
	}
	// A walk of the map, not a lookup of each id: one read of memory in
	// order instead of a hundred thousand scattered ones.
	rest := []string{}
	for id, t := range tasks {
		if t.State == unread {
			rest = append(rest, id)
		}
	}
	if err := scanTasks(ctx, tx, in, tasks, byIDSQL, rest); err != nil {
		return nil, err
	}
	maps.DeleteFunc(tasks, func(_ string, t judge.Task) bool { return t.State == unread })
	return tasks, nil
}

func scanTasks(ctx context.Context, tx pgx.Tx, in interner, into map[string]judge.Task, sql string, args ...any) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("read core_task: %w", err)
	}
	defer rows.Close()
	var t judge.Task
	dest := []any{uuidText{dst: &t.ID, named: into}, internedText{&t.Name, in}, internedText{&t.State, in}, uuidText{dst: &t.AppLockID, seen: in.claims},
		&reservedScanner{out: &t.Reserved, elem: reservedElem{in: in}}, &t.FinishedAt}
	if len(rows.FieldDescriptions()) > len(dest) {
		dest = append(dest, &t.NeverStarted)
	}
	for rows.Next() {
		t = judge.Task{}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read core_task: %w", err)
		}
		into[t.ID] = t
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read core_task: %w", err)
	}
	return nil
}

// TaskRefs is what the task read needs of the holdings: the tasks to read,
// and the exclusive resource names the holdings already hold (a shared
// one is interned with the rest of the row's text), so that a task row
// shares them rather than keeping copies of its own: with a hundred
// thousand task locks that is much of a task row's memory.
type TaskRefs struct {
	ids       []string
	resources map[string]string
}

// TaskRefsOf lists the tasks a set of holdings refers to: the task of every
// task lock and the task of every immediate-<uuid> owner. A task may be
// listed twice (a statement reads each row once whatever its argument
// holds); only the many holdings of one immediate owner are folded.
func TaskRefsOf(holdings []judge.Holding) TaskRefs {
	// Sized at once: grown from empty, the map of a hundred thousand
	// resources is rebuilt a dozen times on the way.
	tasks := 0
	for i := range holdings {
		if holdings[i].Kind == judge.KindTask {
			tasks++
		}
	}
	refs := TaskRefs{ids: make([]string, 0, tasks), resources: make(map[string]string, len(holdings)-tasks)}
	var immediate map[string]struct{}
	for i := range holdings {
		h := &holdings[i]
		if h.Kind == judge.KindTask {
			refs.ids = append(refs.ids, h.TaskID())
		} else if r := h.Resource(); h.Kind == judge.KindExclusive && r != "" {
			refs.resources[r] = r
		}
		if id, ok := judge.ImmediateTaskID(h.Owner); ok {
			if _, seen := immediate[id]; !seen {
				if immediate == nil {
					immediate = map[string]struct{}{}
				}
				immediate[id] = struct{}{}
				refs.ids = append(refs.ids, id)
			}
		}
	}
	return refs
}

package pulpdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// sharedReserversSQL lists the incomplete tasks that reserve any of $1
// (shared:<name> entries). The first line of the condition is the one of
// pulpcore's partial GIN index on reserved_resources_record, spelled as
// the index's own so that the planner may use it. $1 is short: && compares
// two arrays element by element.
const sharedReserversSQL = `
SELECT pulp_id::text, array_remove(reserved_resources_record, NULL) FROM core_task
WHERE NOT (state IN ('completed', 'failed', 'canceled', 'skipped'))
  AND state IN ('waiting', 'running', 'canceling')
  AND reserved_resources_record && $1::text[]`

// liveNamesSQL lists which of $1 (owner names) a core_appstatus row alive or
// late carries now, by the database's clock: last_heartbeat within its ttl
// plus the heartbeat grace ($2).
const liveNamesSQL = `
SELECT DISTINCT name FROM core_appstatus
WHERE name = ANY($1::text[]) AND last_heartbeat >= now() - ttl - $2::interval`

// openTaskWritesSQL lists the other sessions that hold a write lock on
// core_task: a transaction that inserted or changed a task row and has not
// committed. PostgreSQL keeps the lock until the transaction ends, and
// pg_locks shows every session's locks to every role, with the transaction
// (virtualtransaction); pg_stat_activity shows since when it is open only
// for the role's own sessions, or with pg_read_all_stats (NULL otherwise).
// A relation's oid is only unique within its database (a database made
// from a template shares its tables' oids), hence the database.
const openTaskWritesSQL = `
SELECT DISTINCT ON (l.pid) l.pid, l.virtualtransaction, extract(epoch FROM now() - a.xact_start)::float8, now()
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' AND l.granted AND l.pid <> pg_backend_pid()
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.relation = to_regclass('core_task')
ORDER BY l.pid`

// Relevant says whether the incomplete task id, which reserves resource
// shared, may have made a membership of resource a new task's.
type Relevant func(resource, id string) bool

// SharedCheck is what the release of shared memberships reads just before
// its call (ReadSharedCheck).
type SharedCheck struct {
	// Reservers lists, by resource, the incomplete tasks reserving it shared.
	Reservers map[string][]string
	// LiveNames are the names asked of that a row alive or late carries now.
	LiveNames map[string]bool
	// OpenWrites are the other sessions' writes to core_task not yet
	// committed, at the last look (none when holds was nil), and Now the
	// database clock of that look.
	OpenWrites []judge.OpenWrite
	Now        time.Time
}

// Holds says whether a look's uncommitted writes to core_task, seen at now
// (the database clock), hold the shared memberships to release.
type Holds func(ws []judge.OpenWrite, now time.Time) bool

// ReadSharedCheck reads what may have made a shared membership a new task's
// since the snapshot: the tasks reserving each of resources shared
// (ReadSharedReservers, keeping those relevant says may matter), which of
// names (owners judged dead or gone) a row alive or late carries now, and,
// unless holds is nil (no owner of the batch may be dispatching), the
// writes to core_task not yet committed (a task whose row other sessions
// cannot see yet).
func ReadSharedCheck(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, resources, names []string, grace time.Duration, relevant Relevant, holds Holds) (SharedCheck, error) {
	var c SharedCheck
	var err error
	// The uncommitted writes first, then the reservers: a task row not yet
	// committed when the writes were looked at would show there, and one
	// committed since shows among the reservers. Autocommit updates of
	// core_task last a millisecond, a dispatch inside a transaction lasts
	// its task: a few looks, apart, find an instant without the former.
	for try := 0; holds != nil && try < uncommittedLooks; try++ {
		if try > 0 {
			if err := sleepCtx(ctx, uncommittedLookGap); err != nil {
				return c, err
			}
		}
		if c.OpenWrites, c.Now, err = ReadOpenTaskWrites(ctx, pool, timeout); err != nil || !holds(c.OpenWrites, c.Now) {
			break
		}
	}
	if err != nil {
		return c, err
	}
	if c.Reservers, err = ReadSharedReservers(ctx, pool, timeout, resources, relevant); err != nil {
		return c, err
	}
	if len(names) == 0 {
		return c, nil
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := pool.Query(qctx, liveNamesSQL, names, grace)
	if err != nil {
		return c, fmt.Errorf("read the rows of %d owners judged dead or gone: %w", len(names), err)
	}
	defer rows.Close()
	c.LiveNames = map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return c, fmt.Errorf("read the rows of owners judged dead or gone: %w", err)
		}
		c.LiveNames[name] = true
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read the rows of owners judged dead or gone: %w", err)
	}
	return c, nil
}

// How often, and how far apart, ReadSharedCheck looks for uncommitted
// writes to core_task before it leaves the shared memberships for the next
// pass.
const (
	uncommittedLooks   = 5
	uncommittedLookGap = 20 * time.Millisecond
)

// ReadOpenTaskWrites lists the other sessions' writes to core_task not yet
// committed, with the database clock.
func ReadOpenTaskWrites(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) ([]judge.OpenWrite, time.Time, error) {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := pool.Query(qctx, openTaskWritesSQL)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read the uncommitted writes to core_task (pg_locks, pg_stat_activity): %w", err)
	}
	defer rows.Close()
	var out []judge.OpenWrite
	var now time.Time
	for rows.Next() {
		var w judge.OpenWrite
		var age *float64
		if err := rows.Scan(&w.PID, &w.Transaction, &age, &now); err != nil {
			return nil, time.Time{}, fmt.Errorf("read the uncommitted writes to core_task: %w", err)
		}
		if age != nil {
			d := judge.Duration(max(*age, 0) * float64(time.Second))
			w.Age = &d
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("read the uncommitted writes to core_task: %w", err)
	}
	return out, now, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ReadSharedReservers reads, for each of resources (names without the lock
// key prefix), the incomplete tasks (waiting, running or canceling) whose
// reserved_resources_record lists it shared. The release phase asks it just
// before it releases a live owner's shared memberships: pulpcore's acquire
// adds an owner already in a shared set without a trace, and takes a task's
// task lock together with its resources, so the task lock of one of these
// tasks held by the owner means the membership may be the new task's.
// (An exclusive lock cannot be taken again while it stands: the acquire
// fails on an existing key.)
//
// A task that relevant says cannot matter to the resource is left out as
// it is read (nil: none is): a dead worker's lost tasks all reserve its
// domain, and kept, their ids were megabytes at the peak of a pass.
func ReadSharedReservers(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, resources []string, relevant Relevant) (map[string][]string, error) {
	if len(resources) == 0 {
		return nil, nil
	}
	wanted := make(map[string]string, len(resources))
	entries := make([]string, 0, len(resources))
	for _, r := range resources {
		e := entry(judge.Reservation{Resource: r, Kind: judge.KindShared})
		if _, dup := wanted[e]; !dup {
			wanted[e] = r
			entries = append(entries, e)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := pool.Query(ctx, sharedReserversSQL, entries)
	if err != nil {
		return nil, fmt.Errorf("read the incomplete tasks reserving %d shared resources: %w", len(entries), err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id string
		var reserved []string
		if err := rows.Scan(&id, &reserved); err != nil {
			return nil, fmt.Errorf("read the incomplete tasks reserving shared resources: %w", err)
		}
		for _, entry := range reserved {
			if r, ok := wanted[entry]; ok && (relevant == nil || relevant(r, id)) {
				out[r] = append(out[r], id)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the incomplete tasks reserving shared resources: %w", err)
	}
	return out, nil
}

package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// DefaultBatchSize is how many Redis commands the bulk builders send per
// pipelined round trip.
const DefaultBatchSize = 10000

// taskRow is one core_task row as the bulk writers create it. Zero times
// and empty strings are NULL, except created, which the writer assigns.
type taskRow struct {
	id, name, state string
	record          []string
	domainID        string
	appLockID       string
	created         time.Time
	startedAt       time.Time
	finishedAt      time.Time
	immediate       bool
	errorReason     string
}

var taskColumns = []string{
	"pulp_id", "pulp_created", "pulp_last_updated", "state", "name", "reserved_resources_record",
	"pulp_domain_id", "app_lock_id", "started_at", "finished_at", "immediate", "error",
}

// copier is where the bulk writers write: the pool, or a transaction.
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// dbNow reads the database clock; the builders date everything from it so
// that ages are right whatever the client's clock says.
func dbNow(ctx context.Context, pool copier) (time.Time, error) {
	var now time.Time
	if err := pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return now, fmt.Errorf("read database clock: %w", err)
	}
	return now, nil
}

// copyTasks writes the rows with one COPY. A row without a creation time gets
// base + its index in microseconds, so rows keep their order in pulp_created;
// a zero base means the database's now.
func copyTasks(ctx context.Context, pool copier, rows []taskRow, base time.Time) error {
	return copyTaskFunc(ctx, pool, len(rows), func(i int) taskRow { return rows[i] }, base)
}

// copyTaskFunc is copyTasks for rows made on the fly, so that a million-task
// benchmark fleet never sits in memory at once.
func copyTaskFunc(ctx context.Context, pool copier, n int, row func(i int) taskRow, base time.Time) error {
	if n == 0 {
		return nil
	}
	if base.IsZero() {
		var err error
		if base, err = dbNow(ctx, pool); err != nil {
			return err
		}
	}
	i := -1
	var conv error
	src := pgx.CopyFromFunc(func() ([]any, error) {
		i++
		if i >= n {
			return nil, conv
		}
		r := row(i)
		if r.created.IsZero() {
			r.created = base.Add(time.Duration(i) * time.Microsecond)
		}
		id, err := pgUUID(r.id)
		if err != nil {
			return nil, err
		}
		domain, err := pgUUID(r.domainID)
		if err != nil {
			return nil, err
		}
		appLock, err := pgUUID(r.appLockID)
		if err != nil {
			return nil, err
		}
		var errJSON any
		if r.errorReason != "" {
			errJSON = map[string]string{"reason": r.errorReason}
		}
		return []any{id, r.created, r.created, r.state, r.name, r.record, domain, appLock,
			nullTime(r.startedAt), nullTime(r.finishedAt), r.immediate, errJSON}, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"core_task"}, taskColumns, src); err != nil {
		return fmt.Errorf("copy %d tasks: %w", n, err)
	}
	return nil
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// appStatusRow is one core_appstatus row for the bulk writers.
type appStatusRow struct {
	id, appType, name string
	ttl               time.Duration
	lastHeartbeat     time.Time
}

func copyAppStatuses(ctx context.Context, pool *pgxpool.Pool, rows []appStatusRow) error {
	src := make([][]any, 0, len(rows))
	for _, r := range rows {
		id, err := pgUUID(r.id)
		if err != nil {
			return err
		}
		src = append(src, []any{id, r.lastHeartbeat, r.lastHeartbeat, r.appType, r.name, r.ttl, r.lastHeartbeat})
	}
	cols := []string{"pulp_id", "pulp_created", "pulp_last_updated", "app_type", "name", "ttl", "last_heartbeat"}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"core_appstatus"}, cols, pgx.CopyFromRows(src)); err != nil {
		return fmt.Errorf("copy %d app statuses: %w", len(rows), err)
	}
	return nil
}

// copyRunningReports gives each running task a running progress report, as
// the fleet's set_running does.
func copyRunningReports(ctx context.Context, pool *pgxpool.Pool, taskIDs []string) error {
	src := make([][]any, 0, len(taskIDs))
	for _, t := range taskIDs {
		id, err := pgUUID(NewUUID())
		if err != nil {
			return err
		}
		task, err := pgUUID(t)
		if err != nil {
			return err
		}
		src = append(src, []any{id, "Simulated work", "sim.work", StateRunning, task})
	}
	cols := []string{"pulp_id", "message", "code", "state", "task_id"}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"core_progressreport"}, cols, pgx.CopyFromRows(src)); err != nil {
		return fmt.Errorf("copy %d progress reports: %w", len(taskIDs), err)
	}
	return nil
}

// pipeWriter queues Redis commands and sends them batch at a time.
type pipeWriter struct {
	rdb   redis.UniversalClient
	batch int
	pipe  redis.Pipeliner
	n     int
}

func newPipeWriter(rdb redis.UniversalClient, batch int) *pipeWriter {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	return &pipeWriter{rdb: rdb, batch: batch, pipe: rdb.Pipeline()}
}

// add queues the commands fn issues (counted as cost) and flushes when a
// batch is full.
func (w *pipeWriter) add(ctx context.Context, cost int, fn func(p redis.Pipeliner)) error {
	fn(w.pipe)
	w.n += cost
	if w.n >= w.batch {
		return w.flush(ctx)
	}
	return nil
}

func (w *pipeWriter) flush(ctx context.Context) error {
	if w.n == 0 {
		return nil
	}
	_, err := w.pipe.Exec(ctx)
	w.pipe, w.n = w.rdb.Pipeline(), 0
	if err != nil {
		return fmt.Errorf("write redis batch: %w", err)
	}
	return nil
}

// lockWriter writes the state a task's acquire leaves, in bulk: the same keys
// and values as Acquire or AcquireLegacy, without the checks.
type lockWriter struct {
	w *pipeWriter
	// active collects registered owners, added to pulp:active_owners once.
	active map[string]bool
}

func newLockWriter(rdb redis.UniversalClient, batch int) *lockWriter {
	return &lockWriter{w: newPipeWriter(rdb, batch), active: map[string]bool{}}
}

// hold records that owner holds a task's locks; registered false writes a
// legacy lock. It returns the holdings it wrote.
func (l *lockWriter) hold(ctx context.Context, owner, taskID string, exclusive, shared []string, registered bool) ([]Holding, error) {
	lay := lockLayout(taskID, exclusive, shared)
	hs := make([]Holding, 0, len(lay.keys))
	err := l.w.add(ctx, len(lay.keys)+1, func(p redis.Pipeliner) {
		for i, k := range lay.keys {
			kind := lay.kind(i)
			if kind == KindShared {
				p.SAdd(ctx, k, owner)
			} else {
				p.Set(ctx, k, owner, 0)
			}
			hs = append(hs, Holding{Key: k, Owner: owner, Kind: kind, Registered: registered})
		}
		if registered {
			p.SAdd(ctx, OwnerLocksKey(owner), toAny(lay.keys)...)
		}
	})
	if registered {
		l.active[owner] = true
	}
	return hs, err
}

// join adds owner to a shared resource's set by itself (with its registry
// entry unless legacy), for memberships not tied to one task's acquire.
func (l *lockWriter) join(ctx context.Context, owner, resource string, registered bool) (Holding, error) {
	k := ResourceKey(resource)
	err := l.w.add(ctx, 2, func(p redis.Pipeliner) {
		p.SAdd(ctx, k, owner)
		if registered {
			p.SAdd(ctx, OwnerLocksKey(owner), k)
		}
	})
	if registered {
		l.active[owner] = true
	}
	return Holding{Key: k, Owner: owner, Kind: KindShared, Registered: registered}, err
}

func (l *lockWriter) flush(ctx context.Context) error {
	if len(l.active) > 0 {
		owners := make([]any, 0, len(l.active))
		for o := range l.active {
			owners = append(owners, o)
		}
		if err := l.w.add(ctx, 1, func(p redis.Pipeliner) { p.SAdd(ctx, ActiveOwnersKey, owners...) }); err != nil {
			return err
		}
		l.active = map[string]bool{}
	}
	return l.w.flush(ctx)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

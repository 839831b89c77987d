package pulpdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// startedAtGrantExpr asks whether the role may read core_task.started_at.
// A pass needs the grant to finish a stuck canceling task (internal/privilege/
// postgres.sql), but roles granted before do not have it, and must go on
// doing everything else.
const startedAtGrantExpr = `has_column_privilege('core_task', 'started_at', 'SELECT')`

const startedAtGrantSQL = `SELECT ` + startedAtGrantExpr

const taskStartsSQL = `
SELECT pulp_id::text, started_at FROM core_task
WHERE pulp_id = ANY($1::uuid[]) AND started_at IS NOT NULL`

// ReadTaskStarts reads when each of the tasks ids started, for the tasks
// that have. granted is false, with nothing read, when the role may not
// read started_at.
func ReadTaskStarts(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, ids []string) (starts map[string]time.Time, granted bool, err error) {
	if len(ids) == 0 {
		return nil, true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.QueryRow(ctx, startedAtGrantSQL).Scan(&granted); err != nil {
		return nil, false, fmt.Errorf("ask whether core_task.started_at may be read: %w", err)
	}
	if !granted {
		return nil, false, nil
	}
	rows, err := pool.Query(ctx, taskStartsSQL, ids)
	if err != nil {
		return nil, true, fmt.Errorf("read core_task.started_at of %d tasks: %w", len(ids), err)
	}
	defer rows.Close()
	starts = make(map[string]time.Time, len(ids))
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, true, fmt.Errorf("read core_task.started_at: %w", err)
		}
		starts[id] = at
	}
	if err := rows.Err(); err != nil {
		return nil, true, fmt.Errorf("read core_task.started_at: %w", err)
	}
	return starts, true, nil
}

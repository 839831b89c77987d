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

// ReadSharedReservers reads, for each of resources (names without the lock
// key prefix), the incomplete tasks (waiting, running or canceling) whose
// reserved_resources_record lists it shared. The release phase asks it just
// before it releases a live owner's shared memberships: pulpcore's acquire
// adds an owner already in a shared set without a trace, and takes a task's
// task lock together with its resources, so the task lock of one of these
// tasks held by the owner means the membership may be the new task's.
// (An exclusive lock cannot be taken again while it stands: the acquire
// fails on an existing key.)
func ReadSharedReservers(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, resources []string) (map[string][]string, error) {
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
			if r, ok := wanted[entry]; ok {
				out[r] = append(out[r], id)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the incomplete tasks reserving shared resources: %w", err)
	}
	return out, nil
}

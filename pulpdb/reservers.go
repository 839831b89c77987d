package pulpdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// reserversSQL lists the incomplete tasks with their reservations. The
// tasks reserving given resources are picked out by the reaper, not by
// the database: PostgreSQL compares two arrays element by element (&& is
// quadratic), and orders a query's conditions by their cost, so a filter
// on the resources would be tried on finished tasks' rows too. The first
// line of the condition is pulpcore's partial indexes' own.
const reserversSQL = `
SELECT pulp_id::text, array_remove(reserved_resources_record, NULL) FROM core_task
WHERE NOT (state IN ('completed', 'failed', 'canceled', 'skipped'))
  AND state IN ('waiting', 'running', 'canceling')`

// ReadReservers reads, for each of resources (names without the lock key
// prefix), the incomplete tasks (waiting, running or canceling) whose
// reserved_resources_record lists it, exclusive or shared. The release
// phase asks it just before it releases a live owner's resource holdings:
// a task the owner took since the snapshot holds its task lock (pulpcore's
// acquire takes the task lock and the resources at once), so such a task
// lock held by the owner means the resource may be in use again.
func ReadReservers(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, resources []string) (map[string][]string, error) {
	if len(resources) == 0 {
		return nil, nil
	}
	wanted := make(map[string]string, 2*len(resources))
	for _, r := range resources {
		if _, dup := wanted[r]; dup {
			continue
		}
		wanted[r], wanted["shared:"+r] = r, r
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := pool.Query(ctx, reserversSQL)
	if err != nil {
		return nil, fmt.Errorf("read the incomplete tasks reserving %d resources: %w", len(wanted)/2, err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id string
		var reserved []string
		if err := rows.Scan(&id, &reserved); err != nil {
			return nil, fmt.Errorf("read the incomplete tasks reserving resources: %w", err)
		}
		for _, entry := range reserved {
			r, ok := wanted[entry]
			if !ok {
				continue
			}
			if ids := out[r]; len(ids) > 0 && ids[len(ids)-1] == id {
				continue // both R and shared:R
			}
			out[r] = append(out[r], id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the incomplete tasks reserving resources: %w", err)
	}
	return out, nil
}

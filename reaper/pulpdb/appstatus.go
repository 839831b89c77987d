// Package pulpdb is lock-reaper's access to pulpcore's PostgreSQL: the
// snapshot's read and decoding, the task updates, the pass lock, the
// checks that the database can be written and takes a second connection,
// and the task rows explain and the status page read.
package pulpdb

import (
	"context"
	"fmt"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Rows is the part of pgx.Rows that ReadAppStatuses needs.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier is the part of pgx.Tx and pgx.Conn that ReadAppStatuses needs; R is inferred
// from the caller's Query (pgx.Rows for pgx).
type Querier[R Rows] interface {
	Query(ctx context.Context, sql string, args ...any) (R, error)
}

// readSQL names only the columns lock-reaper relies on, so it works against a
// real pulpcore database with all its other columns. The interval is returned
// in microseconds so that months and days in odd ttl values cannot overflow.
const readSQL = `SELECT pulp_id::text, name, app_type,
	(EXTRACT(EPOCH FROM ttl) * 1000000)::float8, last_heartbeat
FROM core_appstatus`

// maxTTL caps absurd ttl values so that duration arithmetic never overflows.
const maxTTL = 100 * 365 * 24 * time.Hour

// ReadAppStatuses loads every core_appstatus row.
func ReadAppStatuses[R Rows](ctx context.Context, q Querier[R]) ([]heartbeat.AppStatus, error) {
	rows, err := q.Query(ctx, readSQL)
	if err != nil {
		return nil, fmt.Errorf("read core_appstatus: %w", err)
	}
	defer rows.Close()
	var out []heartbeat.AppStatus
	for rows.Next() {
		var r heartbeat.AppStatus
		var ttlMicros float64
		if err := rows.Scan(&r.ID, &r.Name, &r.AppType, &ttlMicros, &r.LastHeartbeat); err != nil {
			return nil, fmt.Errorf("read core_appstatus: %w", err)
		}
		r.TTL = clampTTL(ttlMicros)
		r.PulpCreated, _ = createdFromID(r.ID)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read core_appstatus: %w", err)
	}
	return out, nil
}

func clampTTL(micros float64) time.Duration {
	switch {
	case micros <= 0:
		return 0
	case micros >= float64(maxTTL/time.Microsecond):
		return maxTTL
	default:
		return time.Duration(micros) * time.Microsecond
	}
}

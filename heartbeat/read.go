package heartbeat

import (
	"context"
	"fmt"
	"time"
)

// Rows is the part of pgx.Rows that Read needs. The package names no driver:
// its liveness rules are the judge's, which imports nothing that does I/O.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier is the part of pgx.Tx and pgx.Conn that Read needs; R is inferred
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

// Read loads every core_appstatus row.
func Read[R Rows](ctx context.Context, q Querier[R]) ([]AppStatus, error) {
	rows, err := q.Query(ctx, readSQL)
	if err != nil {
		return nil, fmt.Errorf("read core_appstatus: %w", err)
	}
	defer rows.Close()
	var out []AppStatus
	for rows.Next() {
		var r AppStatus
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

package pulpdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// Heartbeats is one read of the worker rows and the database's clock.
type Heartbeats = heartbeat.Reading

// setStatementTimeoutSQL bounds the statements after it in the same
// transaction (database.timeout).
const setStatementTimeoutSQL = "SELECT set_config('statement_timeout', $1::text, true)"

// heartbeatsSQL reads every row and the database's now in one statement: one
// snapshot, taken after the now() it is judged against, as a transaction's
// first read would be. The outer join keeps now for a database without a
// row; readSQL's columns otherwise.
const heartbeatsSQL = `SELECT c.now, a.pulp_id::text, a.name, a.app_type,
	(EXTRACT(EPOCH FROM a.ttl) * 1000000)::float8, a.last_heartbeat
FROM (SELECT now()) AS c (now) LEFT JOIN core_appstatus AS a ON true`

// ReadHeartbeats reads every core_appstatus row and the database's now: the
// daemon's look, every few seconds, at whether a row crossed its ttl +
// grace. core_appstatus has a row per Pulp process, so this is a scan of a
// few dozen rows, not of the task table. It is one batch, sent at once and
// answered at once (one round trip once its statements are prepared): the
// statement_timeout and the read, in the one transaction the protocol
// makes of a batch (everything before its Sync), through PgBouncer's
// transaction pooling as well. The daemon makes it every heartbeat_poll,
// and its wake-ups are most of an idle sidecar's CPU (BENCHMARKS.md).
func ReadHeartbeats(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (Heartbeats, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, done, err := queryTimed(ctx, pool, timeout, heartbeatsSQL)
	if err != nil {
		return Heartbeats{}, fmt.Errorf("read core_appstatus: %w", err)
	}
	defer done()
	var hb Heartbeats
	for rows.Next() {
		var (
			id, name, appType *string
			ttlMicros         *float64
			last              *time.Time
		)
		if err := rows.Scan(&hb.Now, &id, &name, &appType, &ttlMicros, &last); err != nil {
			return Heartbeats{}, fmt.Errorf("read core_appstatus: %w", err)
		}
		if id == nil {
			continue // no row: the outer join's now alone
		}
		r := heartbeat.AppStatus{ID: *id, Name: stringOr(name), AppType: stringOr(appType)}
		if ttlMicros != nil {
			r.TTL = clampTTL(*ttlMicros)
		}
		if last != nil {
			r.LastHeartbeat = *last
		}
		r.PulpCreated, _ = createdFromID(r.ID)
		hb.Rows = append(hb.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return Heartbeats{}, fmt.Errorf("read core_appstatus: %w", err)
	}
	if hb.Now.IsZero() {
		return Heartbeats{}, fmt.Errorf("read database clock: no row")
	}
	return hb, nil
}

// queryTimed sends the statement_timeout and sql as one batch and returns
// sql's rows; done closes the batch and must be called.
func queryTimed(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, sql string) (pgx.Rows, func(), error) {
	b := &pgx.Batch{}
	b.Queue(setStatementTimeoutSQL, statementTimeoutMS(timeout))
	b.Queue(sql)
	br := pool.SendBatch(ctx, b)
	done := func() { _ = br.Close() }
	if _, err := br.Exec(); err != nil {
		done()
		return nil, nil, fmt.Errorf("set statement_timeout: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		done()
		return nil, nil, err
	}
	return rows, func() { rows.Close(); done() }, nil
}

// stringOr is *s, "" for NULL.
func stringOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

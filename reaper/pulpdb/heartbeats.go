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

// ReadHeartbeats reads every core_appstatus row and the database's now in
// one short read-only transaction: the daemon's look, every few seconds, at
// whether a row crossed its ttl + grace. core_appstatus has a row per Pulp
// process, so this is a scan of a few dozen rows, not of the task table.
func ReadHeartbeats(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (Heartbeats, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := beginWithTimeout(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, timeout)
	if err != nil {
		return Heartbeats{}, fmt.Errorf("begin heartbeat read: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // error dropped: read-only
	var hb Heartbeats
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&hb.Now); err != nil {
		return Heartbeats{}, fmt.Errorf("read database clock: %w", err)
	}
	if hb.Rows, err = ReadAppStatuses(ctx, tx); err != nil {
		return Heartbeats{}, err
	}
	return hb, nil
}

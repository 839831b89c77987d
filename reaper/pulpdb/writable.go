package pulpdb

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// NotWritableError says the database a pass would write to takes no writes.
// A pass that gets it writes nothing at all, to Redis or PostgreSQL: on a
// standby the heartbeats lag the primary's and would make live workers look
// dead; on a read-only session the locks would be released and every task
// update then fail.
type NotWritableError struct {
	Host, Database, User string
	// Standby: pg_is_in_recovery() is true.
	Standby bool
	// ReadOnly: transactions are read-only (default_transaction_read_only).
	ReadOnly bool
}

func (e *NotWritableError) Error() string {
	where := fmt.Sprintf("database %q on %s as user %q", e.Database, e.Host, e.User)
	if e.Standby {
		return where + " is a hot standby (pg_is_in_recovery() is true): lock-reaper writes nothing there, " +
			"and its heartbeats lag the primary's; point database.url at the primary " +
			"(its read-write service, or add target_session_attrs=read-write)"
	}
	return where + " gives read-only transactions (transaction_read_only is on): lock-reaper writes nothing; " +
		"let the role write (ALTER ROLE " + pgx.Identifier{e.User}.Sanitize() + " SET default_transaction_read_only = off, " +
		"and the same for the database if it sets it) or use a role that may"
}

// checkWritable checks, on the transaction a pass writes with, that the
// server is a primary and the transaction may write.
func checkWritable(ctx context.Context, tx pgx.Tx, cc *pgx.ConnConfig) error {
	e := NotWritableError{Host: serverAddr(cc)}
	err := tx.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on', current_user, current_database()`).
		Scan(&e.Standby, &e.ReadOnly, &e.User, &e.Database)
	if err != nil {
		return fmt.Errorf("check that the database takes writes: %w", err)
	}
	if e.Standby || e.ReadOnly {
		return &e
	}
	return nil
}

// serverAddr is the host and port a connection was configured with.
func serverAddr(cc *pgx.ConnConfig) string {
	if cc == nil {
		return "(unknown host)"
	}
	return net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
}

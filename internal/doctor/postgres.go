package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// unreachablePrefix starts the evidence of a database that could not be
// queried at all; Run then skips the other database checks.
const unreachablePrefix = "cannot query PostgreSQL: "

func isUnreachable(r Result) bool { return strings.HasPrefix(r.Evidence, unreachablePrefix) }

func checkPostgresPrimary(ctx context.Context, t Target) Result {
	var inRecovery bool
	var readOnly, defaultReadOnly, server string
	err := t.Postgres.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only'),
		current_setting('default_transaction_read_only'), current_setting('server_version')`).Scan(&inRecovery, &readOnly, &defaultReadOnly, &server)
	if err != nil {
		return Result{Status: Fail, Evidence: unreachablePrefix + err.Error(),
			Fix: "point database.url at pulpcore's database and check the role's credentials and sslmode."}
	}
	return evalPrimary(inRecovery, readOnly == "on", defaultReadOnly == "on", server)
}

// evalPrimary judges where the reaper's writes would go. A standby refuses
// them, and a read-only session makes every task update fail mid-pass.
func evalPrimary(inRecovery, readOnly, defaultReadOnly bool, server string) Result {
	evidence := fmt.Sprintf("PostgreSQL %s, pg_is_in_recovery() %t, transaction_read_only %s", server, inRecovery, onOff(readOnly))
	switch {
	case inRecovery:
		return Result{Status: Fail, Evidence: evidence + ": a standby, which refuses every write",
			Fix: "point database.url at the primary (with libpq, target_session_attrs=read-write picks it among several hosts)."}
	case readOnly || defaultReadOnly:
		return Result{Status: Fail, Evidence: evidence + fmt.Sprintf(", default_transaction_read_only %s: the session cannot write", onOff(defaultReadOnly)),
			Fix: "unset default_transaction_read_only for the reaper's role (ALTER ROLE … RESET default_transaction_read_only) or its database."}
	}
	return Result{Status: OK, Evidence: evidence + ": a writable primary"}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// poolerProbeSetting is a custom setting the pooler check sets for its
// session and reads back; it means nothing to anyone else.
const poolerProbeSetting = "lock_reaper.doctor_probe"

// poolerProbe is what the pooler check saw on one client connection.
type poolerProbe struct {
	pidBefore, pidAfter int32
	want, got           string
	// inconclusive says a second session's open transaction held the first
	// one up, so the comparison could not be made.
	inconclusive bool
	// cachesStatements says the pool's pgx exec mode keeps prepared
	// statements per connection (cache_statement, cache_describe), which a
	// transaction pooler hands to other clients.
	cachesStatements bool
	// maxConns is set when the client pool allows fewer than two
	// connections, and the probe was not run.
	maxConns int32
}

// checkPostgresPooler looks for a transaction pooler (PgBouncer in
// transaction mode) between the reaper and PostgreSQL. Behind one, session
// state does not stay with the client's session: a pass keeps its locks and
// timeouts inside one transaction, but pgx's statement cache breaks. The
// check sets a session setting on
// one client connection, opens a transaction on a second one (a pooler
// hands it the server connection the first just gave back), and reads the
// setting and the backend pid again on the first.
func checkPostgresPooler(ctx context.Context, t Target) Result {
	p, err := probePooler(ctx, t)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && (pe.Code == "26000" || pe.Code == "42P05") {
		// A prepared statement missing, or there already, on a connection
		// that cached it: a pooler gave it another server connection.
		return Result{Status: Fail, Evidence: "a prepared statement of pgx's statement cache was missing on its connection (" + pe.Message + "): a transaction pooler is in between and hands the cache's statements to other server connections",
			Fix: "set database.exec_mode: exec (docs/safety.md, PgBouncer), or connect directly or through PgBouncer in session mode."}
	}
	if err != nil {
		return couldNotCheck("probe for a transaction pooler", err, "check that database.url reaches pulpcore's database.")
	}
	return evalPooler(p)
}

func probePooler(ctx context.Context, t Target) (poolerProbe, error) {
	var p poolerProbe
	switch t.Postgres.Config().ConnConfig.DefaultQueryExecMode {
	case pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe:
		p.cachesStatements = true
	}
	if n := t.Postgres.Config().MaxConns; n < 2 {
		p.maxConns = n
		return p, nil
	}
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	p.want = hex.EncodeToString(token)
	first, err := t.Postgres.Acquire(ctx)
	if err != nil {
		return p, err
	}
	// The session setting is reset whichever server connection the pooler
	// hands over now, and the connection is not reused.
	defer func() {
		_, _ = first.Exec(context.WithoutCancel(ctx), "SELECT set_config($1, '', false)", poolerProbeSetting)
		first.Release()
	}()
	if err := first.QueryRow(ctx, "SELECT pg_backend_pid() FROM (SELECT set_config($1, $2, false)) s", poolerProbeSetting, p.want).Scan(&p.pidBefore); err != nil {
		return p, fmt.Errorf("set a session setting: %w", err)
	}
	second, err := t.Postgres.Acquire(ctx)
	if err != nil {
		return p, err
	}
	defer second.Release()
	tx, err := second.Begin(ctx)
	if err != nil {
		return p, err
	}
	// Rollback's error is dropped: read-only.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var other int32
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&other); err != nil {
		return p, err
	}
	// A pooler with a single server connection makes the first session wait
	// for the second's transaction, as a pass's snapshot would wait for its
	// lock's transaction: give up the comparison then.
	wait, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = first.QueryRow(wait, "SELECT coalesce(current_setting($1, true), ''), pg_backend_pid()", poolerProbeSetting).Scan(&p.got, &p.pidAfter)
	if err != nil && wait.Err() != nil && ctx.Err() == nil {
		p.inconclusive = true
		_ = first.Conn().Close(context.WithoutCancel(ctx)) // discarded either way
		return p, nil
	}
	return p, err
}

// passNeedsTwo says why a pass that writes needs two connections at once
// (see pulpdb.SecondConnectionError).
const passNeedsTwo = "a pass that writes holds its lock in one transaction and reads its snapshot and updates tasks in a second, " +
	"so it needs two connections at once, and would stop at start"

// evalPooler judges the probe.
func evalPooler(p poolerProbe) Result {
	switch {
	case p.maxConns > 0:
		return Result{Status: Fail, Evidence: fmt.Sprintf("the client pool allows %d connection (pool_max_conns): %s", p.maxConns, passNeedsTwo),
			Fix: "set pool_max_conns to at least 2 in database.url, or leave it out."}
	case p.inconclusive:
		return Result{Status: Fail, Evidence: "a second session's open transaction held up the first: a pooler with a single server connection (PgBouncer pool_size = 1), or a server too loaded to answer; " + passNeedsTwo,
			Fix: "give lock-reaper's database and user at least 2 server connections in the pooler (PgBouncer pool_size, or default_pool_size), plus 2 for each other reaper that may run at once, or connect directly; an audit needs only one."}
	case (p.got != p.want || p.pidAfter != p.pidBefore) && p.cachesStatements:
		return Result{Status: Fail, Evidence: fmt.Sprintf("session state did not stay with the session: setting %q read back as %q, backend pid %d then %d; a transaction pooler is in between, and pgx's statement cache (the exec mode in use) gives prepared statements to connections that do not have them",
			poolerProbeSetting, p.got, p.pidBefore, p.pidAfter),
			Fix: "set database.exec_mode: exec (docs/safety.md, PgBouncer), or connect directly or through PgBouncer in session mode."}
	case p.got != p.want || p.pidAfter != p.pidBefore:
		return Result{Status: OK, Evidence: fmt.Sprintf("a transaction pooler is in between (setting %q read back as %q, backend pid %d then %d); a pass keeps its locks and timeouts inside one transaction and its exec mode caches no statements, so it works through it",
			poolerProbeSetting, p.got, p.pidBefore, p.pidAfter)}
	}
	return Result{Status: OK, Evidence: fmt.Sprintf("a session setting and backend pid %d stayed with the session across transactions", p.pidBefore)}
}

package config

import (
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// applicationName tags lock-reaper's sessions in pg_stat_activity.
const applicationName = "lock-reaper"

// PoolConfig returns the pgx pool configuration of database.url and the
// discrete database settings, which override their parts of the URL. What
// neither sets is left to libpq's PG* environment variables (read from the
// process environment, not from Load's getenv) and ~/.pgpass.
//
// database.timeout becomes the connect timeout, and application_name is
// lock-reaper, each unless the URL (or PGAPPNAME, PGCONNECT_TIMEOUT) sets it:
// an explicit connection parameter is the more specific wish. The statement
// timeout is no startup parameter, which PgBouncer refuses: the reaper sets
// it with SET LOCAL in each transaction. database.exec_mode, when set, wins
// over the URL's default_query_exec_mode.
func PoolConfig(c Config) (*pgxpool.Config, error) {
	conn := databaseConnString(c)
	pc, err := pgxpool.ParseConfig(conn)
	if err != nil {
		// No "database.url:" prefix: callers name the setting themselves.
		return nil, fmt.Errorf("invalid database URL: %w", scrubError(err, conn))
	}
	cc := pc.ConnConfig
	if c.Database.Password != "" {
		// Set here rather than in the connection string, which errors quote.
		// pgx reads ~/.pgpass only for a configuration without a password,
		// at parse time; this one wins over it as over the URL's.
		cc.Password = c.Database.Password
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if c.Database.ExecMode != "" {
		mode, ok := execModes[c.Database.ExecMode]
		if !ok {
			return nil, checkExecMode(c.Database.ExecMode)
		}
		cc.DefaultQueryExecMode = mode
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = applicationName
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = c.Pass.DatabaseTimeout
	}
	return pc, nil
}

// execModes are database.exec_mode's values: pgx's names, as its
// default_query_exec_mode URL parameter takes them.
var execModes = map[string]pgx.QueryExecMode{
	"cache_statement": pgx.QueryExecModeCacheStatement,
	"cache_describe":  pgx.QueryExecModeCacheDescribe,
	"describe_exec":   pgx.QueryExecModeDescribeExec,
	"exec":            pgx.QueryExecModeExec,
	"simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

// checkExecMode accepts an empty database.exec_mode or one of pgx's modes.
func checkExecMode(s string) error {
	if _, ok := execModes[s]; ok || s == "" {
		return nil
	}
	return fmt.Errorf("invalid value %q: want one of cache_statement, cache_describe, describe_exec, exec, simple_protocol (or empty)", s)
}

// checkDatabaseURL validates database.url as PoolConfig will parse it.
func checkDatabaseURL(s string) error {
	if _, err := pgxpool.ParseConfig(s); err != nil {
		return fmt.Errorf("invalid database URL: %w", err)
	}
	return nil
}

// checkDatabaseConn validates the URL together with the discrete settings,
// once the URL alone is known to be valid: a discrete value may make it
// invalid (a missing sslrootcert file, say).
func checkDatabaseConn(c Config) error {
	if len(databaseParams(c)) == 0 || checkDatabaseURL(c.Database.URL) != nil {
		return nil
	}
	conn := databaseConnString(c)
	if err := checkDatabaseURL(conn); err != nil {
		return scrubError(err, conn)
	}
	return nil
}

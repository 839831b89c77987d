package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// failure is an error of Redis or PostgreSQL put in an operator's words:
// what was being done, where (host, port, database, user; never a
// password), what the server said, and a hint when the configuration is
// what is wrong.
type failure struct {
	message string
	// configuration says that retrying will not help: a database index out
	// of range, a missing database, failed authentication, a database that
	// is not Pulp's. Such failures exit 2.
	configuration bool
}

// noSnapshotPrefix is what the reaper puts before a database failure of the
// snapshot; the activity named here says the same in words.
const noSnapshotPrefix = "no database snapshot, no writes: "

// explainFailure describes err, which a pass or an inspection returned.
func explainFailure(err error, t targets) failure {
	raw := strings.TrimPrefix(err.Error(), noSnapshotPrefix)
	raw = dropRefusedTLS(raw)
	// The step the reaper names decides; the words of the error are only
	// guessed from when it names none.
	database := isDatabaseError(err)
	dbStep, redisStep := databaseActivity(raw), redisActivity(raw)
	var se *reaper.StepError
	if errors.As(err, &se) {
		database = se.System == reaper.SystemDatabase
		dbStep, redisStep = se.Activity(), se.Activity()
	}
	if errors.Is(err, context.Canceled) {
		// A stop (SIGTERM, SIGINT) ended the pass in this step.
		dbStep, redisStep = "stopped while "+dbStep, "stopped while "+redisStep
	}
	if database {
		f := failure{message: fmt.Sprintf("%s at %s: %s", dbStep, t.database, raw)}
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			switch {
			case pe.Code == "42P01" && strings.Contains(pe.Message, "core_"):
				f.configuration = true
				f.message += "\nThis database has no pulpcore tables: is this Pulp's database? " +
					"Set database.url (REAPER_DATABASE_URL) or database.name; `lock-reaper config` shows what it resolves to."
			case pe.Code == "3D000":
				f.configuration = true
				f.message += "\nNo such database: check database.url (REAPER_DATABASE_URL), database.name or PGDATABASE."
			case pe.Code == "42501":
				f.configuration = true
				f.message += postgresPrivilegeHint(pe, t.databaseUser)
			case strings.HasPrefix(pe.Code, "28"):
				f.configuration = true
				f.message += "\nAuthentication failed: check the user and password of database.url, database.user and " +
					"database.password, PGUSER, PGPASSWORD or ~/.pgpass, and the server's pg_hba.conf."
			}
		}
		return f
	}
	f := failure{message: fmt.Sprintf("%s at %s: %s", redisStep, t.redis, raw)}
	switch {
	case strings.Contains(raw, "DB index is out of range"):
		f.configuration = true
		f.message += "\nThe database index of redis.url (REAPER_REDIS_URL) or redis.db is higher than this Redis has (its `databases` setting, 16 by default)."
	case strings.Contains(raw, "WRONGPASS"), strings.Contains(raw, "NOAUTH"), strings.Contains(raw, "invalid username-password"):
		f.configuration = true
		f.message += "\nAuthentication failed: check the user and password of redis.url (REAPER_REDIS_URL), redis.username and redis.password."
	case strings.Contains(raw, "NOPERM"):
		f.configuration = true
		f.message += redisPermissionHint(raw)
	case strings.Contains(raw, "context deadline exceeded") || strings.Contains(raw, "i/o timeout"):
		f.message += "\nNo answer within redis.timeout: is the address right and reachable from here?"
	}
	return f
}

// isDatabaseError says whether err came from PostgreSQL rather than Redis.
func isDatabaseError(err error) bool {
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	if errors.As(err, &pe) || errors.As(err, &ce) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{noSnapshotPrefix, "pass lock", "cleanup lock", "core_", "explain transaction", "read task", "tasks ahead", "update "} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func databaseActivity(msg string) string {
	switch {
	case strings.Contains(msg, "pass lock"), strings.Contains(msg, "cleanup lock"):
		return "taking the pass lock in PostgreSQL"
	case strings.HasPrefix(msg, "update "):
		return "updating Pulp's tasks in PostgreSQL"
	}
	return "reading Pulp's workers and tasks from PostgreSQL"
}

func redisActivity(msg string) string {
	switch {
	case strings.HasPrefix(msg, "write suspects"):
		return "remembering suspects in Redis"
	case strings.HasPrefix(msg, "release batch"):
		return "releasing locks in Redis"
	}
	return "reading Pulp's locks from Redis"
}

// dropRefusedTLS removes the first attempt of sslmode=prefer (libpq's
// default) from a connection error listing several attempts: that the
// server refused TLS is expected there, and the attempt without TLS that
// follows is the one whose error matters.
func dropRefusedTLS(msg string) string {
	if !strings.Contains(msg, "server refused TLS connection") || !strings.Contains(msg, "\n") {
		return msg
	}
	var kept []string
	for _, line := range strings.Split(msg, "\n") {
		if !strings.Contains(line, "tls error: server refused TLS connection") {
			kept = append(kept, line)
		}
	}
	if len(kept) <= 1 {
		return msg
	}
	if len(kept) == 2 {
		// One attempt left: back on one line, as pgx prints a single one.
		return kept[0] + " " + strings.TrimSpace(kept[1])
	}
	return strings.Join(kept, "\n")
}

// failureCode is the exit code of a failure: 2 when the configuration is
// what is wrong (it will not go away by retrying), else 1.
func failureCode(f failure) int {
	if f.configuration {
		return exitcode.Usage
	}
	return exitcode.Failed
}

package cli

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestPrivilegeHintNamesTheRoleOfTheURL: the GRANT statements of the hint
// name the role database.url logs in as, quoted only when SQL needs it, so
// that they run as they are; without a known role they stay as documented.
func TestPrivilegeHintNamesTheRoleOfTheURL(t *testing.T) {
	t.Parallel()
	refused := &pgconn.PgError{Code: "42501", Message: "permission denied for table core_progressreport"}

	hint := postgresPrivilegeHint(refused, "pulp")
	require.Contains(t, hint, "\nThe role \"pulp\" of database.url lacks a privilege lock-reaper needs on core_progressreport")
	require.Contains(t, hint, "\n  GRANT SELECT (pulp_id, task_id, state) ON core_progressreport TO pulp;\n")
	require.Contains(t, hint, "\n  GRANT UPDATE (state) ON core_progressreport TO pulp;\n")
	require.Contains(t, hint, "Grant the set of docs/security.md (internal/privilege/postgres.sql) to the role \"pulp\" of database.url;")
	require.NotContains(t, hint, "lock_reaper")

	hint = postgresPrivilegeHint(refused, "Lock-Reaper")
	require.Contains(t, hint, `ON core_progressreport TO "Lock-Reaper";`)

	hint = postgresPrivilegeHint(&pgconn.PgError{Code: "42501", Message: "permission denied for schema pulp"}, "reaper")
	require.Contains(t, hint, "GRANT USAGE ON SCHEMA pulp TO reaper;")

	hint = postgresPrivilegeHint(refused, "")
	require.Contains(t, hint, "\nThe role of database.url lacks")
	require.Contains(t, hint, "ON core_progressreport TO lock_reaper;")
}

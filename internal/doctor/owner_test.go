package doctor

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// loginRole creates a plain role (no superuser) that runs setup as the
// database's owner ({role} naming it) and returns a pool logged in as it.
// It and what it owns in the test's database are dropped at cleanup.
func loginRole(t *testing.T, db *testenv.Database, prefix string, setup ...string) (string, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	role := prefix + randomSuffix()
	ident := pgx.Identifier{role}.Sanitize()
	_, err := db.Pool.Exec(ctx, "CREATE ROLE "+ident+" LOGIN PASSWORD 'pw'")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = db.Pool.Exec(ctx, "DROP OWNED BY "+ident)
		_, _ = db.Pool.Exec(ctx, "DROP ROLE IF EXISTS "+ident)
	})
	for _, sql := range setup {
		_, err := db.Pool.Exec(ctx, strings.ReplaceAll(sql, "{role}", ident))
		require.NoError(t, err, sql)
	}
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "pw")
	pool, err := pgxpool.New(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return role, pool
}

// TestTableOwnerWarned: a role that owns pulpcore's tables (Pulp's own
// role, as pulp-operator hands it out), or is a member of their owner, is
// told so and pointed at a role of its own; the least-privilege role is
// not; a superuser that owns them is told both.
func TestTableOwnerWarned(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	owner, ownerPool := loginRole(t, db, "lr_doctor_owner_",
		"ALTER TABLE core_task OWNER TO {role}", "ALTER TABLE core_appstatus OWNER TO {role}",
		"ALTER TABLE core_progressreport OWNER TO {role}")

	r := runCheck(t, checkPostgresGrants, Target{Postgres: ownerPool})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Equal(t, `role "`+owner+`" owns pulpcore's tables core_appstatus, core_progressreport, core_task: `+
		"it connects as Pulp itself and may alter, empty or drop them whatever is granted", r.Evidence)
	require.Contains(t, r.Fix, `docs/kubernetes.md "Under pulp-operator: a role of its own"`)

	member, memberPool := loginRole(t, db, "lr_doctor_member_", "GRANT "+pgx.Identifier{owner}.Sanitize()+" TO {role}")
	r = runCheck(t, checkPostgresGrants, Target{Postgres: memberPool})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, `role "`+member+`" is a member of "`+owner+`", the owner of pulpcore's tables core_appstatus, core_progressreport, core_task`)

	least := restrictedRole(t, db)
	r = runCheck(t, checkPostgresGrants, Target{Postgres: least})
	require.Equal(t, OK, r.Status, r.Evidence)
	require.NotContains(t, r.Evidence, "owner")
}

// TestSuperuserOwnerWarned: the test databases' tables belong to the
// superuser the tests connect as, as under pulp-operator, whose database
// role pulp is both.
func TestSuperuserOwnerWarned(t *testing.T) {
	t.Parallel()
	db := testenv.NewDatabase(t)
	var super bool
	var owner, user string
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT rolsuper, pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'core_task'::regclass)), current_user FROM pg_roles WHERE rolname = current_user").
		Scan(&super, &owner, &user))
	if !super || owner != user {
		t.Skipf("the test database's role %q (superuser %v) does not own core_task (%q)", user, super, owner)
	}
	r := runCheck(t, checkPostgresGrants, Target{Postgres: db.Pool})
	require.Equal(t, Warn, r.Status, r.Evidence)
	require.Contains(t, r.Evidence, `role "`+user+`" is a superuser and owns pulpcore's tables core_appstatus, core_progressreport, core_task`)
	require.Contains(t, r.Fix, "docs/kubernetes.md")
}

// TestEvalOwnership: the words for each kind of role.
func TestEvalOwnership(t *testing.T) {
	t.Parallel()
	_, ok := evalOwnership("lock_reaper", false, ownership{})
	require.False(t, ok)
	r, ok := evalOwnership("postgres", true, ownership{})
	require.True(t, ok)
	require.Equal(t, `role "postgres" is a superuser: it may do anything`, r.Evidence)
	r, _ = evalOwnership("pulp", true, ownership{owner: "pulp", tables: []string{"core_appstatus", "core_task"}})
	require.Equal(t, `role "pulp" is a superuser and owns pulpcore's tables core_appstatus, core_task: it connects as Pulp itself and may do anything`, r.Evidence)
}

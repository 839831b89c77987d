package doctor

import (
	"context"
	"fmt"
	"strings"
)

// ownership is what the connecting role is to pulpcore's tables: the ones
// it owns, directly or as a member of the owning role (the role Pulp's
// migrations ran as, such as pulp under pulp-operator), and that owner.
type ownership struct {
	owner  string
	tables []string
}

// ownershipSQL lists the documented tables the current role owns or whose
// owner it is a member of. A superuser counts only for the tables it owns
// itself: pg_has_role is true of every role for a superuser.
const ownershipSQL = `
SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_roles r ON r.rolname = current_user
WHERE n.nspname = current_schema() AND c.relname = ANY($1)
  AND (c.relowner = r.oid OR (NOT r.rolsuper AND pg_has_role(r.oid, c.relowner, 'USAGE')))
ORDER BY c.relname`

func readOwnership(ctx context.Context, t Target, tables []string) (ownership, error) {
	var o ownership
	rows, err := t.Postgres.Query(ctx, ownershipSQL, tables)
	if err != nil {
		return o, err
	}
	defer rows.Close()
	for rows.Next() {
		var table, owner string
		if err := rows.Scan(&table, &owner); err != nil {
			return o, err
		}
		o.tables = append(o.tables, table)
		o.owner = owner
	}
	return o, rows.Err()
}

// ownerFix points a table owner or superuser at a role of its own: the
// least-privilege set, and the commands that make it under pulp-operator,
// whose database role is both.
const ownerFix = "create the lock_reaper role of docs/security.md (internal/privilege/postgres.sql) and use it in database.url; " +
	"under pulp-operator, docs/kubernetes.md \"Under pulp-operator: a role of its own\" gives the commands."

// evalOwnership warns about a role that may do anything to Pulp's tables:
// a superuser, or the tables' owner (who may drop, alter and rewrite them,
// and grant all that to others, whatever is granted or revoked). Such a
// role is what the reaper connects as when it is handed Pulp's own
// credentials; ok is false when the role is neither, and the grants decide.
func evalOwnership(role string, super bool, o ownership) (r Result, ok bool) {
	owns := ""
	switch {
	case len(o.tables) == 0:
	case o.owner == role:
		owns = fmt.Sprintf("owns pulpcore's tables %s", strings.Join(o.tables, ", "))
	default:
		owns = fmt.Sprintf("is a member of %q, the owner of pulpcore's tables %s", o.owner, strings.Join(o.tables, ", "))
	}
	switch {
	case super && owns != "":
		return Result{Status: Warn, Evidence: fmt.Sprintf("role %q is a superuser and %s: it connects as Pulp itself and may do anything", role, owns), Fix: ownerFix}, true
	case super:
		return Result{Status: Warn, Evidence: fmt.Sprintf("role %q is a superuser: it may do anything", role), Fix: ownerFix}, true
	case owns != "":
		return Result{Status: Warn, Evidence: fmt.Sprintf("role %q %s: it connects as Pulp itself and may alter, empty or drop them whatever is granted", role, owns), Fix: ownerFix}, true
	}
	return Result{}, false
}

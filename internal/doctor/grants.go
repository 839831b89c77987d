package doctor

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
)

// grant is one privilege: on a column (SELECT or UPDATE of core_task.state),
// on a whole table (Column empty), USAGE on the schema (Table empty), or the
// privileges of a predefined role (Role, such as pg_read_all_stats).
type grant struct {
	Privilege string
	Table     string
	Column    string
	Role      string
}

func (g grant) String() string {
	switch {
	case g.Role != "":
		return g.Role
	case g.Table == "":
		return g.Privilege + " ON SCHEMA"
	case g.Column == "":
		return g.Privilege + " ON " + g.Table
	}
	return fmt.Sprintf("%s (%s) ON %s", g.Privilege, g.Column, g.Table)
}

// columnGrant matches a GRANT line of internal/privilege/postgres.sql; one
// that ends in "-- optional" grants what only a page needs, never a pass.
var columnGrant = regexp.MustCompile(`(?m)^GRANT (\w+) \(([^)]*)\) ON (\w+) TO [^;]*;[ \t]*(-- optional)?`)

// roleGrant matches a GRANT of a predefined role's privileges (pg_…) in
// internal/privilege/postgres.sql.
var roleGrant = regexp.MustCompile(`(?m)^GRANT (pg_\w+) TO [^;]*;[ \t]*(-- optional)?`)

// optionalWhy says what a role without an optional grant does without.
var optionalWhy = map[grant]string{
	{Privilege: "SELECT", Table: "core_task", Column: "versions"}: "a waiting task claimed by a live worker too old for it is requeued as stuck-claim even while no online worker can run it, and is not reported as stranded with the versions it waits for",
	{Role: "pg_read_all_stats"}:                                   "another role's transaction holding an uncommitted write to core_task is timed from a pass's first sighting in pg_locks, not from its start, so the hold it puts on shared memberships lasts up to confirm_after longer",
}

// requiredWhy says, for a required grant a role granted before it was
// required may lack, what a pass does without it.
var requiredWhy = map[string]string{
	"SELECT (started_at) ON core_task": "without it a pass only reports a stuck canceling task, never cancels it",
}

// documentedGrants reads the least-privilege set from
// internal/privilege/postgres.sql, the file docs/security.md links: USAGE on the
// schema and the column privileges it grants, and nothing else; optional
// lists the grants a pass does without.
func documentedGrants() (set, optional map[grant]bool, tables []string) {
	set, optional = map[grant]bool{{Privilege: "USAGE"}: true}, map[grant]bool{}
	seen := map[string]bool{}
	for _, m := range columnGrant.FindAllStringSubmatch(privilege.PostgresSQL, -1) {
		seen[m[3]] = true
		for _, col := range strings.Split(m[2], ",") {
			g := grant{Privilege: m[1], Table: m[3], Column: strings.TrimSpace(col)}
			set[g] = true
			if m[4] != "" {
				optional[g] = true
			}
		}
	}
	for _, m := range roleGrant.FindAllStringSubmatch(privilege.PostgresSQL, -1) {
		g := grant{Role: m[1]}
		set[g] = true
		if m[2] != "" {
			optional[g] = true
		}
	}
	for t := range seen {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	return set, optional, tables
}

// grantsSQL lists what the current role may do in its current schema: USAGE
// on the schema, every column privilege on the documented tables, and any
// table-level privilege (or column privilege elsewhere) at all.
const grantsSQL = `
WITH rels AS (
  SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
)
SELECT 'USAGE', '', '' WHERE has_schema_privilege(current_schema(), 'USAGE')
UNION ALL
SELECT p.priv, r.relname, a.attname FROM rels r
  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) p(priv)
  WHERE r.relname = ANY($1) AND has_column_privilege(r.oid, a.attnum, p.priv)
UNION ALL
SELECT p.priv, r.relname, '' FROM rels r
  CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(priv)
  WHERE has_table_privilege(r.oid, p.priv)
UNION ALL
SELECT 'some column privilege', r.relname, '' FROM rels r
  WHERE NOT r.relname = ANY($1) AND has_any_column_privilege(r.oid, 'SELECT, INSERT, UPDATE, REFERENCES')
    AND NOT has_table_privilege(r.oid, 'SELECT, INSERT, UPDATE, REFERENCES')`

func checkPostgresGrants(ctx context.Context, t Target) Result {
	want, optional, tables := documentedGrants()
	var role string
	var super bool
	if err := t.Postgres.QueryRow(ctx, "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&role, &super); err != nil {
		return couldNotCheck("read the current role", err, "check that database.url reaches pulpcore's database.")
	}
	var present int
	if err := t.Postgres.QueryRow(ctx, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = ANY($1)", tables).Scan(&present); err != nil {
		return couldNotCheck("look up pulpcore's tables", err, "check that database.url names pulpcore's database.")
	}
	owned, err := readOwnership(ctx, t, tables)
	if err != nil {
		return couldNotCheck("read the owners of pulpcore's tables", err, "check that database.url reaches pulpcore's database.")
	}
	if r, ok := evalOwnership(role, super, owned); ok {
		return r
	}
	if present < len(tables) {
		return Result{Status: Fail, Evidence: fmt.Sprintf("role %q sees %d of pulpcore's tables %s in its current schema", role, present, strings.Join(tables, ", ")),
			Fix: "point database.url at pulpcore's database (and search_path at pulpcore's schema)."}
	}
	rows, err := t.Postgres.Query(ctx, grantsSQL, tables)
	if err != nil {
		return couldNotCheck("read the role's privileges", err, "check that database.url reaches pulpcore's database.")
	}
	defer rows.Close()
	have := map[grant]bool{}
	for rows.Next() {
		var g grant
		if err := rows.Scan(&g.Privilege, &g.Table, &g.Column); err != nil {
			return couldNotCheck("read the role's privileges", err, "check that database.url reaches pulpcore's database.")
		}
		have[g] = true
	}
	if err := rows.Err(); err != nil {
		return couldNotCheck("read the role's privileges", err, "check that database.url reaches pulpcore's database.")
	}
	for g := range want {
		if g.Role == "" {
			continue
		}
		var member bool
		if err := t.Postgres.QueryRow(ctx, "SELECT pg_has_role(current_user, $1, 'USAGE')", g.Role).Scan(&member); err != nil {
			return couldNotCheck("read the role's membership in "+g.Role, err, "check that database.url reaches pulpcore's database.")
		}
		have[g] = member
	}
	return evalGrants(role, want, optional, have)
}

// evalGrants compares the role's privileges with the documented set. One
// missing makes a pass fail halfway (a read refused, or a lost task that
// can never be updated); one too many is more than the reaper needs. An
// optional one missing (a role granted before it was documented) only
// leaves something out of a page, and is said in passing.
func evalGrants(role string, want, optional, have map[grant]bool) Result {
	required := map[grant]bool{}
	for g := range want {
		if !optional[g] {
			required[g] = true
		}
	}
	missing, extra := diffGrants(required, have), diffGrants(have, want)
	for i, g := range missing {
		if why := requiredWhy[g]; why != "" {
			missing[i] += " (" + why + ")"
		}
	}
	evidence := fmt.Sprintf("role %q", role)
	var without []string
	for g := range optional {
		if !have[g] {
			without = append(without, "the optional "+g.String()+": "+optionalWhy[g])
		}
	}
	if len(without) > 0 {
		sort.Strings(without)
		evidence += " (without " + strings.Join(without, "; without ") + ")"
	}
	switch {
	case len(missing) > 0:
		e := evidence + ": missing " + strings.Join(missing, ", ")
		if len(extra) > 0 {
			e += "; beyond the documented set " + strings.Join(extra, ", ")
		}
		return Result{Status: Fail, Evidence: e,
			Fix: "grant the least-privilege set of docs/security.md (internal/privilege/postgres.sql) to the role."}
	case len(extra) > 0:
		return Result{Status: Warn, Evidence: evidence + ": beyond the documented set " + strings.Join(extra, ", "),
			Fix: "revoke what the least-privilege set of docs/security.md (internal/privilege/postgres.sql) does not grant."}
	}
	return Result{Status: OK, Evidence: fmt.Sprintf("%s holds the least-privilege set of docs/security.md (%d privileges) and nothing beyond", evidence, len(want)-len(diffGrants(optional, have)))}
}

// diffGrants lists the grants of a that b lacks, sorted.
func diffGrants(a, b map[grant]bool) []string {
	var out []string
	for g := range a {
		if !b[g] {
			out = append(out, g.String())
		}
	}
	sort.Strings(out)
	return out
}

package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lock-reaper/lock-reaper/internal/privilege"
)

// Where a refusal points: the check that lists every privilege missing, and
// the least-privilege definitions it compares with.
const (
	grantsDoc  = "docs/security.md (internal/privilege/postgres.sql)"
	aclDoc     = "docs/security.md, The Redis ACL user (internal/privilege/redis.acl)"
	doctorHint = "`lock-reaper doctor` (its %s check) names every one missing"
)

// deniedObject reads what PostgreSQL refused from its message: "permission
// denied for table core_task" (relation, on older servers), or "for schema
// public".
var deniedObject = regexp.MustCompile(`permission denied for (table|relation|schema) "?(\w+)"?`)

// postgresPrivilegeHint is the hint of a PostgreSQL refusal (SQLSTATE
// 42501): the grants of the least-privilege set on what was refused, which
// are what the role lacks (PostgreSQL names the table, not the column),
// written for role, the user database.url logs in as, so that they run as
// they are.
func postgresPrivilegeHint(pe *pgconn.PgError, role string) string {
	hint := "\n" + upperFirst(roleWords(role)) + " lacks a privilege lock-reaper needs"
	if m := deniedObject.FindStringSubmatch(pe.Message); m != nil {
		on := m[2]
		if m[1] == "schema" {
			on = "SCHEMA " + m[2]
		}
		hint += " on " + on
		if grants := privilege.PostgresGrantsOn(on); len(grants) > 0 {
			for i, g := range grants {
				if m[1] == "schema" {
					// The file grants on public; the refusal names the
					// schema search_path chose.
					g = strings.Replace(g, " ON SCHEMA public ", " ON "+on+" ", 1)
				}
				grants[i] = grantTo(g, role)
			}
			hint += ", which the least-privilege set grants with:\n  " + strings.Join(grants, "\n  ") + "\n"
		} else {
			hint += ". "
		}
	} else {
		hint += ". "
	}
	return hint + fmt.Sprintf("Grant the set of %s to %s; "+doctorHint+".", grantsDoc, roleWords(role), "postgres-grants")
}

// roleWords names the role in the hint's sentences: the user database.url
// (or PGUSER, or the default) logs in as.
func roleWords(role string) string {
	if role == "" {
		return "the role of database.url"
	}
	return fmt.Sprintf("the role %q of database.url", role)
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// grantTo rewrites a GRANT of postgres.sql, written for lock_reaper, for
// role; an empty role (unknown) leaves it as documented.
func grantTo(grant, role string) string {
	if role == "" {
		return grant
	}
	return strings.Replace(grant, " TO "+privilege.DefaultRole+";", " TO "+sqlIdentifier(role)+";", 1)
}

// plainIdentifier is a name PostgreSQL takes unquoted as itself.
var plainIdentifier = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// sqlIdentifier quotes role as SQL needs it: not at all when lower case
// letters, digits and underscores say it, so that the GRANT reads as the
// documentation writes it.
func sqlIdentifier(role string) string {
	if plainIdentifier.MatchString(role) {
		return role
	}
	return `"` + strings.ReplaceAll(role, `"`, `""`) + `"`
}

// refusedCommand reads the command from Redis's NOPERM reply: "User x has
// no permissions to run the 'scan' command" (Redis 7), "this user has no
// permissions to run the 'scan' command or its subcommand" (Redis 6).
var refusedCommand = regexp.MustCompile(`permissions to run the '([^']+)' command`)

// redisPermissionHint is the hint of a Redis NOPERM reply: the ACL rule the
// user lacks, a command's or the key patterns.
func redisPermissionHint(raw string) string {
	hint := "\nThe Redis user lacks a permission lock-reaper needs"
	switch m := refusedCommand.FindStringSubmatch(raw); {
	case m != nil:
		hint += fmt.Sprintf(": its ACL needs +%s", strings.ToLower(m[1]))
	case strings.Contains(raw, "key"):
		hint += ": its ACL needs the key patterns " + strings.Join(privilege.RedisKeyRules(), " ")
	}
	return hint + fmt.Sprintf(". Give the user the rules of %s; "+doctorHint+".", aclDoc, "redis-acl")
}

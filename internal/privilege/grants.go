package privilege

import (
	"regexp"
	"strings"
)

// grantStatement matches one GRANT of PostgresSQL: what it grants on, and
// whether it is marked optional (what only a page needs, never a pass).
var grantStatement = regexp.MustCompile(`(?m)^(GRANT [^;]* ON (SCHEMA \w+|\w+) TO \w+;)[ \t]*(-- optional)?`)

// PostgresGrantsOn lists the statements of PostgresSQL that grant a pass
// something on table, or on the schema when table is "SCHEMA name": what
// an error refusing that table asks for, in the words an operator runs.
func PostgresGrantsOn(table string) []string {
	var out []string
	for _, m := range grantStatement.FindAllStringSubmatch(PostgresSQL, -1) {
		on := m[2]
		if strings.HasPrefix(on, "SCHEMA ") && strings.HasPrefix(table, "SCHEMA ") {
			on = table // the file's schema is public; the error names the one used
		}
		if on == table && m[3] == "" {
			out = append(out, m[1])
		}
	}
	return out
}

// RedisKeyRules are the key patterns of the ACL rules (~task:* and the
// others), which a refused key access asks for.
func RedisKeyRules() []string {
	var out []string
	for _, r := range RedisRules() {
		if strings.HasPrefix(r, "~") {
			out = append(out, r)
		}
	}
	return out
}

// Package privilege holds the least privileges lock-reaper needs: the
// PostgreSQL role and grants, and the Redis ACL rules. They are embedded so
// that the documentation and the tests that run passes under exactly these
// privileges share one source.
package privilege

import (
	_ "embed"
	"regexp"
	"strings"
)

// PostgresSQL creates the role lock_reaper, with the password 'change-me',
// and grants it what a pass needs in pulpcore's database.
//
//go:embed postgres.sql
var PostgresSQL string

//go:embed redis.acl
var redisACL string

// Names the documentation uses.
const (
	DefaultRole      = "lock_reaper"
	DefaultPassword  = "change-me"
	DefaultRedisUser = "lock-reaper"
)

var roleWord = regexp.MustCompile(`\b` + DefaultRole + `\b`)

// PostgresSQLFor is PostgresSQL for another role name and password.
func PostgresSQLFor(role, password string) string {
	sql := strings.ReplaceAll(PostgresSQL, "'"+DefaultPassword+"'", quoteLiteral(password))
	return roleWord.ReplaceAllLiteralString(sql, quoteIdentifier(role))
}

// RedisRules are the ACL rules of the lock-reaper user, in order.
func RedisRules() []string {
	var rules []string
	for _, line := range strings.Split(redisACL, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rules = append(rules, strings.Fields(line)...)
	}
	return rules
}

// RedisSetUser is the ACL SETUSER command, as arguments for a client's Do,
// that creates or resets user with password and exactly RedisRules.
func RedisSetUser(user, password string) []any {
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password}
	for _, r := range RedisRules() {
		args = append(args, r)
	}
	return args
}

// RedisSetUserCommand renders RedisSetUser as one line for the redis-cli
// prompt, the way the documentation shows it. (Typed into a shell instead,
// every argument needs quoting: '~task:*' globs and '|' pipes.)
func RedisSetUserCommand(user, password string) string {
	parts := []string{"ACL", "SETUSER", user, "reset", "on", ">" + password}
	return strings.Join(append(parts, RedisRules()...), " ")
}

func quoteIdentifier(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

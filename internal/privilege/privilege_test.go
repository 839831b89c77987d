package privilege

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPostgresSQLFor(t *testing.T) {
	t.Parallel()
	sql := PostgresSQLFor(`lr "test"`, "it's secret")
	require.NotContains(t, sql, DefaultRole)
	require.NotContains(t, sql, DefaultPassword)
	require.Contains(t, sql, `CREATE ROLE "lr ""test""" LOGIN PASSWORD 'it''s secret';`)
	require.Contains(t, sql, `GRANT UPDATE (state) ON core_progressreport TO "lr ""test""";`)
	require.Equal(t, strings.Count(PostgresSQL, DefaultRole), strings.Count(sql, `"lr ""test"""`))
}

func TestRedisRules(t *testing.T) {
	t.Parallel()
	rules := RedisRules()
	require.Contains(t, rules, "-@all")
	require.Contains(t, rules, "~task:*")
	for _, r := range rules {
		require.NotContains(t, r, "#")
		require.NotEqual(t, "+@all", r)
		require.NotEqual(t, "~*", r)
		require.NotEqual(t, "allkeys", r)
	}
	args := RedisSetUser("u", "p")
	require.Equal(t, []any{"ACL", "SETUSER", "u", "reset", "on", ">p"}, args[:6])
	require.Len(t, args, 6+len(rules))
	require.True(t, strings.HasPrefix(RedisSetUserCommand("u", "p"), "ACL SETUSER u reset on >p resetkeys ~task:* "))
}

// TestDocumentationShowsTheseDefinitions: the documentation links the
// definitions the tests run under, and the one command it shows, the ACL
// SETUSER line, is theirs verbatim, so that what operators create is what
// was tested. A page that copies the SQL must copy it whole.
func TestDocumentationShowsTheseDefinitions(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		return string(data)
	}
	security := read("docs/security.md")
	require.Contains(t, security, "](../internal/privilege/postgres.sql)")
	require.Contains(t, security, "](../internal/privilege/redis.acl)")
	require.Contains(t, security, RedisSetUserCommand(DefaultRedisUser, DefaultPassword))
	require.Contains(t, read("SECURITY.md"), "](internal/privilege/postgres.sql)")
	require.Contains(t, read("SECURITY.md"), "](internal/privilege/redis.acl)")

	for _, name := range []string{"README.md", "SECURITY.md", "docs/security.md", "docs/safety.md"} {
		doc := read(name)
		if strings.Contains(doc, "ACL SETUSER "+DefaultRedisUser+" reset") {
			require.Contains(t, doc, RedisSetUserCommand(DefaultRedisUser, DefaultPassword), name)
		}
		if strings.Contains(doc, "CREATE ROLE") {
			require.Contains(t, doc, PostgresSQL, name)
		}
	}
}

// grantLine is one column grant of postgres.sql.
var grantLine = regexp.MustCompile(`(?m)^GRANT (SELECT|UPDATE) \(([^)]*)\) ON (\w+) TO`)

// TestDocumentedColumnsAreTheGrants: docs/security.md's table of the role's
// grants names, for each table, exactly the columns postgres.sql grants, and
// SECURITY.md names every column the reaper may update.
func TestDocumentedColumnsAreTheGrants(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	security, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	require.NoError(t, err)
	policy, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	require.NoError(t, err)

	// The rows of the table: | `table` ... | SELECT columns | UPDATE columns | why |
	documented := map[string]bool{}
	for _, line := range strings.Split(string(security), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`core_") {
			continue
		}
		table := strings.Trim(strings.Fields(cells[1])[0], "`")
		for i, privilege := range map[int]string{2: "SELECT", 3: "UPDATE"} {
			for _, col := range strings.Split(cells[i], ",") {
				if col = strings.Trim(strings.TrimSpace(col), "`"); col != "" {
					documented[privilege+" "+table+"."+col] = true
				}
			}
		}
	}
	granted := map[string]bool{}
	for _, m := range grantLine.FindAllStringSubmatch(PostgresSQL, -1) {
		for _, col := range strings.Split(m[2], ",") {
			granted[m[1]+" "+m[3]+"."+strings.TrimSpace(col)] = true
			if m[1] == "UPDATE" {
				require.Contains(t, string(policy), "`"+m[3]+"`", "SECURITY.md names the table %s", m[3])
				require.Contains(t, string(policy), "`"+strings.TrimSpace(col)+"`", "SECURITY.md names the column %s.%s", m[3], col)
			}
		}
	}
	require.NotEmpty(t, granted)
	require.Equal(t, granted, documented)
}

func TestPostgresGrantsOn(t *testing.T) {
	got := PostgresGrantsOn("core_task")
	if len(got) != 2 || !strings.HasPrefix(got[0], "GRANT SELECT (pulp_id, name, state,") || !strings.HasPrefix(got[1], "GRANT UPDATE (state,") {
		t.Fatalf("core_task: the SELECT and UPDATE grants, without the optional one: %q", got)
	}
	if got := PostgresGrantsOn("SCHEMA pulp"); len(got) != 1 || got[0] != "GRANT USAGE ON SCHEMA public TO lock_reaper;" {
		t.Fatalf("schema: %q", got)
	}
	if got := PostgresGrantsOn("core_content"); len(got) != 0 {
		t.Fatalf("a table the file does not name: %q", got)
	}
	if got := RedisKeyRules(); len(got) == 0 || got[0] != "~task:*" {
		t.Fatalf("key rules: %q", got)
	}
}

package privilege

import (
	"os"
	"path/filepath"
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

// TestDocumentationShowsTheseDefinitions: the documentation quotes the
// definitions the tests run under, verbatim, so that what operators create
// is what was tested.
func TestDocumentationShowsTheseDefinitions(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "safety.md"))
	require.NoError(t, err)
	require.Contains(t, string(doc), PostgresSQL)
	require.Contains(t, string(doc), RedisSetUserCommand(DefaultRedisUser, DefaultPassword))

	// Once merged into the README, the README must quote them verbatim too.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	if strings.Contains(string(readme), "ACL SETUSER") {
		require.Contains(t, string(readme), RedisSetUserCommand(DefaultRedisUser, DefaultPassword))
	}
	if strings.Contains(string(readme), "CREATE ROLE") {
		require.Contains(t, string(readme), PostgresSQL)
	}
}

package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocsConfigurationTables keeps docs/configuration.md's tables
// true: a row of one key names its environment variable and its default as
// the settings table (and through it the reaper's constants) has them, and
// every key is documented somewhere.
func TestDocsConfigurationTables(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	doc := string(data)
	def := Default()
	rows := 0
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.TrimSpace(cells[0]) != "" {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		s := settingByKey[key]
		if s == nil || strings.TrimSpace(cells[1]) != "`"+key+"`" {
			continue
		}
		rows++
		require.Equal(t, "`"+s.env()+"`", strings.TrimSpace(cells[2]), "docs/configuration.md row of %s", key)
		val := s.get(&def)
		if val == "" {
			require.Contains(t, strings.ToLower(cells[3]), "empty", "docs/configuration.md row of %s: the default is empty", key)
		} else {
			require.Contains(t, cells[3], "`"+val+"`", "docs/configuration.md row of %s: the default is %s", key, val)
		}
	}
	require.NotZero(t, rows)
	for _, s := range settings {
		require.True(t, strings.Contains(doc, "`"+s.key+"`"), "docs/configuration.md does not document %s", s.key)
	}
}

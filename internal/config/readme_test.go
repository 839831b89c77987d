package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeConfigurationTables keeps the README's configuration tables
// true: a row of one key names its environment variable and its default as
// the settings table (and through it the reaper's constants) has them, and
// every key is documented somewhere.
func TestReadmeConfigurationTables(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(data)
	def := Default()
	rows := 0
	for _, line := range strings.Split(readme, "\n") {
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
		require.Equal(t, "`"+s.env()+"`", strings.TrimSpace(cells[2]), "README row of %s", key)
		val := s.get(&def)
		if val == "" {
			require.Contains(t, strings.ToLower(cells[3]), "empty", "README row of %s: the default is empty", key)
		} else {
			require.Contains(t, cells[3], "`"+val+"`", "README row of %s: the default is %s", key, val)
		}
	}
	require.NotZero(t, rows)
	for _, s := range settings {
		require.True(t, strings.Contains(readme, "`"+s.key+"`"), "README does not document %s", s.key)
	}
}

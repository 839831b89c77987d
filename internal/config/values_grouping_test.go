package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePushGrouping(t *testing.T) {
	t.Parallel()
	got, err := ParsePushGrouping(" namespace=pulp , instance=pulp-reaper-lock-reaper")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"namespace": "pulp", "instance": "pulp-reaper-lock-reaper"}, got)
	got, err = ParsePushGrouping("")
	require.NoError(t, err)
	require.Empty(t, got)
	for in, want := range map[string]string{
		"namespace":                  "want name=value pairs",
		"namespace=":                 "want name=value pairs",
		"job=x":                      "the push's job is always lock_reaper",
		"1ns=x":                      `invalid grouping label name "1ns"`,
		"__name__=x":                 `invalid grouping label name "__name__"`,
		"namespace=a,namespace=b":    "given twice",
		"namespace=pulp,,instance=x": "want name=value pairs",
	} {
		_, err := ParsePushGrouping(in)
		require.ErrorContains(t, err, want, in)
	}
}

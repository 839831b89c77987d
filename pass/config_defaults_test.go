package pass_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/passtest"
	"github.com/lock-reaper/lock-reaper/pass"
)

// TestWorldPolicyIsTheDefault: the tests' worlds are judged with the
// program's defaults (passtest cannot import pass to take them).
func TestWorldPolicyIsTheDefault(t *testing.T) {
	t.Parallel()
	require.Equal(t, pass.DefaultConfig().Policy, passtest.WorldPolicy())
	require.NoError(t, pass.DefaultConfig().Validate())
}

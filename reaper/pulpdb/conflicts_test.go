package pulpdb

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func TestConflicts(t *testing.T) {
	t.Parallel()
	require.True(t, Conflicts(judge.KindExclusive, judge.KindExclusive))
	require.True(t, Conflicts(judge.KindExclusive, judge.KindShared))
	require.True(t, Conflicts(judge.KindShared, judge.KindExclusive))
	require.False(t, Conflicts(judge.KindShared, judge.KindShared))
	require.Equal(t, []string{"a", "shared:a", "b"}, ConflictingEntries([]string{"a", "shared:b", "a"}))
	require.Equal(t, []judge.Reservation{{Resource: "a", Kind: judge.KindExclusive}, {Resource: "b", Kind: judge.KindShared}}, judge.Reservations([]string{"a", "shared:b", "a", "shared:b"}))
}

package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartsFindWhatOneWalkFinds: the task locks judged in two parts, and
// the task locks seen found by owner number, give what one straight walk
// of the snapshot gives.
func TestPartsFindWhatOneWalkFinds(t *testing.T) {
	t.Parallel()
	snap := jbFleet(6 * minPartWalk)
	p := DefaultPolicy()
	p.MaxReleases = len(snap.Holdings)
	for _, listAll := range []bool{false, true} {
		one := &judge{snap: snap, p: p, listAll: listAll, fleet: FleetOf(snap, p), onePart: true}
		two := &judge{snap: snap, p: p, listAll: listAll, fleet: FleetOf(snap, p)}
		want, got := one.run(), two.run()
		require.Greater(t, len(two.ix.tasks.placed), minPartWalk)
		require.Equal(t, want, got)
		require.NotEmpty(t, got.TaskLocksSeen)
		require.Equal(t, taskLocksSeen(snap.Holdings, got.Holdings), got.TaskLocksSeen)
	}
}

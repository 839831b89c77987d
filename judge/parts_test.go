package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartsFindWhatOneWalkFinds: the reservations offered in two parts, and
// the task locks seen found by owner number, are what one straight walk of
// the snapshot finds.
func TestPartsFindWhatOneWalkFinds(t *testing.T) {
	t.Parallel()
	snap := jbFleet(6 * minPartTaskLocks)
	p := DefaultPolicy()
	p.MaxReleases = len(snap.Holdings)
	j := &judge{snap: snap, p: p, listAll: true, fleet: FleetOf(snap, p)}
	plan := j.run()

	require.Greater(t, len(j.ix.tasks.placed), minPartTaskLocks)
	taskLocks := make([]judgedTaskLock, len(j.ix.tasks.placed))
	for n, pl := range j.ix.tasks.placed {
		task, found := snap.Tasks[snap.Holdings[pl.at].TaskID()]
		jd := j.decidedTaskLock(pl, task, found)
		taskLocks[n] = judgedTaskLock{at: pl.at, released: jd.Action == ActionRelease, missing: !found}
	}
	require.Equal(t, j.offers(taskLocks, 0, len(taskLocks)), j.reservedBy(taskLocks))

	seen := j.taskLocksSeen(plan.Holdings)
	require.NotEmpty(t, seen)
	require.Equal(t, taskLocksSeen(snap.Holdings, plan.Holdings), seen)
}

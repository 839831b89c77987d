package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestReadSnapshotNeverStarted: started_at is read, in the same statements,
// for waiting tasks (claimed-not-started) as for canceling ones
// (stuck-canceling), whether a task is read as open or as named by a
// holding; other states are never marked.
func TestReadSnapshotNeverStarted(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", time.Second)
	claimed := f.Task(judge.StateWaiting, w, []string{"repo-1"}, -1)
	canceling := f.Task(judge.StateCanceling, w, []string{"repo-2"}, -1)
	running := f.Task(judge.StateRunning, w, []string{"repo-3"}, -1)
	named := f.Task(judge.StateWaiting, "", []string{"repo-4"}, -1) // unclaimed: read only as named
	startedCanceling := f.Task(judge.StateCanceling, w, []string{"repo-5"}, -1)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET started_at = now() WHERE pulp_id = ANY($1::uuid[])`, []string{running, startedCanceling})
	require.NoError(t, err)
	refs := TaskRefsOf([]judge.Holding{{Key: judge.TaskKeyPrefix + named, Kind: judge.KindTask, Owner: "1@w"}})

	snap, err := ReadSnapshot(f.Ctx, f.DB.Pool, testTimeout, refs)
	require.NoError(t, err)
	require.False(t, snap.StartsUnread)
	never := map[string]bool{}
	for id, task := range snap.Tasks {
		never[id] = task.NeverStarted
	}
	require.Equal(t, map[string]bool{claimed: true, canceling: true, running: false, named: true, startedCanceling: false}, never)
}

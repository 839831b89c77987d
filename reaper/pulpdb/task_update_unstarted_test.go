package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestUpdateBatchStuckCanceling: a stuck canceling task is canceled only
// while it has still never started; one that started since it was observed
// is skipped, and the other updates of its batch still apply.
func TestUpdateBatchStuckCanceling(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", time.Second)
	stuck := f.Task(judge.StateCanceling, w, nil, -1)
	startedSince := f.Task(judge.StateCanceling, w, nil, -1)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET started_at = now() WHERE pulp_id = $1`, startedSince)
	require.NoError(t, err)
	lostTask := f.Task(judge.StateRunning, "", nil, -1)
	stuckCanceling := func(id string) judge.TaskJudgement {
		return judge.TaskJudgement{ID: id, Verdict: judge.VerdictStuckCanceling, Owner: "1@w", AppLockID: w,
			StateBefore: judge.StateCanceling, StateAfter: judge.StateCanceled}
	}
	batch := []judge.TaskJudgement{stuckCanceling(stuck), stuckCanceling(startedSince), lost(lostTask, "", judge.StateRunning, judge.StateCanceled)}
	done, err := updater(f).UpdateBatch(f.Ctx, batch)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true}, done)

	row := readTaskRow(t, f, stuck)
	require.Equal(t, judge.StateCanceled, row.state)
	require.Equal(t, w, deref(row.appLock))
	require.NotNil(t, row.finished)
	require.Equal(t, TaskReason(&batch[0]), *row.reason)
	require.Contains(t, *row.reason, "Worker 1@w claimed the task and never started it")
	require.Equal(t, judge.StateCanceling, readTaskRow(t, f, startedSince).state)
}

package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestReadFinishedByReaper: the tasks a reaper finished within the cancel
// signal's lifetime (a stuck canceling task's cancel among them), newest
// first, a page at a time after the cursor; not those finished otherwise or
// longer ago. A cursor it cannot read starts again from the newest.
func TestReadFinishedByReaper(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	var batch []judge.TaskJudgement
	for _, after := range []string{judge.StateCanceled, judge.StateFailed, judge.StateCanceled, judge.StateCanceled} {
		batch = append(batch, lost(f.Task(judge.StateRunning, w, nil, -1), w, judge.StateRunning, after))
	}
	batch[1] = judge.TaskJudgement{ID: f.Task(judge.StateCanceling, w, nil, -1), Verdict: judge.VerdictStuckCanceling,
		Owner: "1@w", AppLockID: w, StateBefore: judge.StateCanceling, StateAfter: judge.StateCanceled}
	done, err := updater(f).UpdateBatch(f.Ctx, batch)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true, true}, done)
	// finished_at is the update's now(), one instant for the batch: spread
	// them out, the oldest beyond the signal's lifetime.
	for i, ago := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, judge.CancelSignalLifetime + time.Minute} {
		_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET finished_at = now() - make_interval(secs => $2) WHERE pulp_id = $1`, batch[i].ID, ago.Seconds())
		require.NoError(t, err)
	}
	f.Task(judge.StateCompleted, w, nil, time.Second)
	byWorker := f.Task(judge.StateFailed, w, nil, time.Second)
	_, err = f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET error = '{"reason": "Task failed"}' WHERE pulp_id = $1`, byWorker)
	require.NoError(t, err)

	before := dbNow(t, f)
	page, now, next, err := ReadFinishedByReaper(f.Ctx, f.DB.Pool, testTimeout, "", 2)
	require.NoError(t, err)
	require.Equal(t, []string{batch[0].ID, batch[1].ID}, finishedIDs(page))
	require.False(t, now.Before(before), "the database's now")
	require.NotEmpty(t, next)

	page, _, next, err = ReadFinishedByReaper(f.Ctx, f.DB.Pool, testTimeout, next, 2)
	require.NoError(t, err)
	require.Equal(t, []string{batch[2].ID}, finishedIDs(page))
	page, _, last, err := ReadFinishedByReaper(f.Ctx, f.DB.Pool, testTimeout, next, 2)
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, last)

	page, _, _, err = ReadFinishedByReaper(f.Ctx, f.DB.Pool, testTimeout, "changed by hand", 10)
	require.NoError(t, err)
	require.Equal(t, []string{batch[0].ID, batch[1].ID, batch[2].ID}, finishedIDs(page))
}

func finishedIDs(tasks []FinishedTask) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.ID
	}
	return out
}

// TestParseFinishedCursor: a cursor is "<RFC 3339 time> <task uuid>";
// anything else is not one.
func TestParseFinishedCursor(t *testing.T) {
	t.Parallel()
	const id = "01927b2a-3c4d-7abc-8def-0123456789ab"
	at, got, ok := parseFinishedCursor("2026-12-07T10:00:00.123456Z " + id)
	require.True(t, ok)
	require.Equal(t, id, got)
	require.Equal(t, time.Date(2026, 12, 7, 10, 0, 0, 123456000, time.UTC), at)
	for _, bad := range []string{"", id, "2026-12-07T10:00:00Z", "yesterday " + id, "2026-12-07T10:00:00Z not-a-uuid"} {
		_, _, ok := parseFinishedCursor(bad)
		require.False(t, ok, bad)
	}
}

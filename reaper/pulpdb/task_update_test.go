package pulpdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

func updater(f *passtest.Fixture) *TaskUpdater {
	return &TaskUpdater{Pool: f.DB.Pool, Timeout: testTimeout, Log: passtest.Logger()}
}

// lost is the judgement of a task lost by worker 1@w, observed in state
// before with claim, to be finished in state after.
func lost(id, claim, before, after string) judge.TaskJudgement {
	return judge.TaskJudgement{ID: id, Verdict: judge.VerdictLost, Owner: "1@w", AppLockID: claim, StateBefore: before, StateAfter: after}
}

// taskRow is what a pass may change of a task row, to compare before and after.
type taskRow struct {
	state               string
	appLock, reason     *string
	finished            *time.Time
	runningReports, all int
}

func readTaskRow(t *testing.T, f *passtest.Fixture, id string) taskRow {
	t.Helper()
	var r taskRow
	r.state, r.appLock, r.reason, r.finished = f.TaskRow(id)
	require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, `SELECT count(*) FILTER (WHERE state = 'running'), count(*) FROM core_progressreport WHERE task_id = $1`, id).
		Scan(&r.runningReports, &r.all))
	return r
}

// TestUpdateBatch: a lost task is finished (state, finished_at by the
// database clock, the reason, its running progress reports), an orphaned
// claim is requeued (the claim cleared, nothing else touched), each only
// while it still has the state and claim the pass observed.
func TestUpdateBatch(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	canceled := f.Task(judge.StateRunning, w, []string{"repo-1"}, -1)
	runningReport := f.ProgressReport(canceled, "running")
	f.ProgressReport(canceled, "completed")
	failed := f.Task(judge.StateCanceling, "", nil, -1)
	requeued := f.Task(judge.StateWaiting, w, nil, -1)
	requeue := judge.TaskJudgement{ID: requeued, Verdict: judge.VerdictOrphanedClaim, Owner: "1@w", AppLockID: w,
		StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, ClearClaim: true}
	batch := []judge.TaskJudgement{
		lost(canceled, w, judge.StateRunning, judge.StateCanceled),
		lost(failed, "", judge.StateCanceling, judge.StateFailed),
		requeue,
	}

	before := dbNow(t, f)
	done, err := updater(f).UpdateBatch(f.Ctx, batch)
	require.NoError(t, err)
	after := dbNow(t, f)
	require.Equal(t, []bool{true, true, true}, done)

	for _, tj := range batch[:2] {
		row := readTaskRow(t, f, tj.ID)
		require.Equal(t, tj.StateAfter, row.state)
		require.Equal(t, TaskReason(&tj), *row.reason)
		require.Equal(t, tj.AppLockID, deref(row.appLock), "a finished task keeps its claim")
		require.NotNil(t, row.finished)
		require.False(t, row.finished.Before(before) || row.finished.After(after), "finished_at by the database clock")
	}
	require.Equal(t, "Worker 1@w has gone missing; lock reaper canceled.", *readTaskRow(t, f, canceled).reason)
	var reportState string
	require.NoError(t, f.DB.Pool.QueryRow(f.Ctx, `SELECT state FROM core_progressreport WHERE pulp_id = $1`, runningReport).Scan(&reportState))
	require.Equal(t, judge.StateCanceled, reportState, "the running report takes the task's state")
	require.Equal(t, taskRow{state: judge.StateCanceled, runningReports: 0, all: 2}, stripped(readTaskRow(t, f, canceled)), "the completed report is left")

	require.Equal(t, taskRow{state: judge.StateWaiting}, readTaskRow(t, f, requeued), "requeued: claim cleared, not finished, no reason")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// stripped keeps what TestUpdateBatch compares of a finished task's reports.
func stripped(r taskRow) taskRow {
	return taskRow{state: r.state, runningReports: r.runningReports, all: r.all}
}

// TestUpdateBatchLostRace: a task whose state or claim is no longer what the
// pass observed, or that is gone, is not updated: nothing of it changes,
// and the batch says so for each, which the pass counts as skipped. The
// others of the batch are updated.
func TestUpdateBatchLostRace(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	w2 := f.Worker("2@w", 0)
	finishedMeanwhile := f.Task(judge.StateCompleted, w, nil, time.Second)
	claimedMeanwhile := f.Task(judge.StateRunning, w2, nil, -1)
	f.ProgressReport(claimedMeanwhile, "running")
	requeuedMeanwhile := f.Task(judge.StateWaiting, "", nil, -1)
	still := f.Task(judge.StateRunning, w, nil, -1)
	batch := []judge.TaskJudgement{
		lost(finishedMeanwhile, w, judge.StateRunning, judge.StateCanceled),
		lost(claimedMeanwhile, w, judge.StateRunning, judge.StateCanceled),
		{ID: requeuedMeanwhile, Verdict: judge.VerdictOrphanedClaim, AppLockID: w, StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, ClearClaim: true},
		lost(sim.NewUUID(), w, judge.StateRunning, judge.StateCanceled),
		lost(still, w, judge.StateRunning, judge.StateCanceled),
	}
	untouched := map[string]taskRow{}
	for _, id := range []string{finishedMeanwhile, claimedMeanwhile, requeuedMeanwhile} {
		untouched[id] = readTaskRow(t, f, id)
	}

	done, err := updater(f).UpdateBatch(f.Ctx, batch)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false, false, false, true}, done)
	for id, want := range untouched {
		require.Equal(t, want, readTaskRow(t, f, id), "a task that lost the race is left as it is")
	}
	require.Equal(t, judge.StateCanceled, readTaskRow(t, f, still).state)
}

// TestUpdateBatchRaceDuringUpdate: a worker that changes the row while the
// update waits for it wins: the update, which finds the row changed once
// the worker commits, leaves it and says so.
func TestUpdateBatchRaceDuringUpdate(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	id := f.Task(judge.StateRunning, w, nil, -1)
	worker, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(t, err)
	defer worker.Rollback(context.WithoutCancel(f.Ctx)) // error dropped: committed below
	_, err = worker.Exec(f.Ctx, `UPDATE core_task SET state = 'completed', finished_at = now() WHERE pulp_id = $1`, id)
	require.NoError(t, err)

	type result struct {
		done []bool
		err  error
	}
	res := make(chan result, 1)
	go func() {
		done, err := updater(f).UpdateBatch(f.Ctx, []judge.TaskJudgement{lost(id, w, judge.StateRunning, judge.StateCanceled)})
		res <- result{done, err}
	}()
	// The update waits for the worker's row lock before the worker commits.
	require.Eventually(t, func() bool {
		var waiting bool
		_ = f.DB.Pool.QueryRow(f.Ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE core_task t%')`).Scan(&waiting)
		return waiting
	}, testTimeout, 10*time.Millisecond)
	require.NoError(t, worker.Commit(f.Ctx))

	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, []bool{false}, r.done)
	row := readTaskRow(t, f, id)
	require.Equal(t, judge.StateCompleted, row.state)
	require.Nil(t, row.reason)
}

// TestReadBack: after a commit whose reply was lost, the tasks that hold
// what the update wrote are the ones it applied to; when none does, the
// commit is taken as not applied and its error returned.
func TestReadBack(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	applied := f.Task(judge.StateRunning, w, nil, -1)
	requeued := f.Task(judge.StateWaiting, w, nil, -1)
	notApplied := f.Task(judge.StateRunning, w, nil, -1)
	finish := lost(applied, w, judge.StateRunning, judge.StateCanceled)
	requeue := judge.TaskJudgement{ID: requeued, Verdict: judge.VerdictOrphanedClaim, AppLockID: w, StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, ClearClaim: true}
	u := updater(f)
	done, err := u.UpdateBatch(f.Ctx, []judge.TaskJudgement{finish, requeue})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, done)
	var logged testenv.SyncBuffer
	u.Log = slog.New(slog.NewTextHandler(&logged, nil))

	commitErr := errors.New("update 3 tasks: commit: connection reset")
	got, err := u.readBack(f.Ctx, []string{applied, requeued, notApplied},
		[]string{judge.StateCanceled, judge.StateWaiting, judge.StateCanceled}, []bool{false, true, false},
		[]string{TaskReason(&finish), "", TaskReason(&finish)}, commitErr)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{applied: true, requeued: true}, got)
	require.Contains(t, logged.String(), "the reply to a task update's commit was lost")

	reason := TaskReason(&finish)
	_, err = u.readBack(f.Ctx, []string{notApplied}, []string{judge.StateCanceled}, []bool{false}, []string{reason}, commitErr)
	require.ErrorIs(t, err, commitErr)
}

// TestCommitOutcomeUnknown: only an answer of the server's own says a
// commit failed; anything else (no answer) leaves it unknown.
func TestCommitOutcomeUnknown(t *testing.T) {
	t.Parallel()
	require.False(t, commitOutcomeUnknown(fmt.Errorf("commit: %w", &pgconn.PgError{Code: "40001"})))
	require.True(t, commitOutcomeUnknown(fmt.Errorf("commit: %w", context.DeadlineExceeded)))
	require.True(t, commitOutcomeUnknown(errors.New("unexpected EOF")))
}

// TestUpdateBatchNotWritable: a batch on a database whose transactions are
// read-only fails before its update with NotWritableError, and changes
// nothing.
func TestUpdateBatchNotWritable(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 10*time.Minute)
	id := f.Task(judge.StateRunning, w, nil, -1)
	u := updater(f)
	u.Pool = readOnlyPool(t, f)

	_, err := u.UpdateBatch(f.Ctx, []judge.TaskJudgement{lost(id, w, judge.StateRunning, judge.StateCanceled)})
	var nw *NotWritableError
	require.ErrorAs(t, err, &nw)
	require.True(t, nw.ReadOnly)
	require.Equal(t, judge.StateRunning, readTaskRow(t, f, id).state)
}

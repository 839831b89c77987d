package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// createdAgo inserts a task created ago before the database's now, so that
// a test sets the order in which Pulp's workers would fetch them.
func createdAgo(f *passtest.Fixture, ago time.Duration, state, appLock string, reserved ...string) string {
	f.T.Helper()
	id := f.Task(state, appLock, reserved, -1)
	_, err := f.DB.Pool.Exec(f.Ctx, `UPDATE core_task SET pulp_created = now() - make_interval(secs => $2) WHERE pulp_id = $1`, id, ago.Seconds())
	require.NoError(f.T, err)
	return id
}

func idsOf(rows []TaskRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// TestReadExplainedTask: a task's row, and the older waiting tasks whose
// reservations conflict with its own, oldest first: an exclusive
// reservation conflicts with the resource in both forms, a shared one only
// with the exclusive form. Newer, running and harmless tasks are not ahead.
// All is read in one read-only REPEATABLE READ transaction.
func TestReadExplainedTask(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 0)
	exclusiveAhead := createdAgo(f, 5*time.Minute, judge.StateWaiting, "", "repo-1")
	sharedAhead := createdAgo(f, 4*time.Minute, judge.StateWaiting, "", "shared:repo-1")
	domainAhead := createdAgo(f, 3*time.Minute, judge.StateWaiting, "", "dom")
	createdAgo(f, 3*time.Minute, judge.StateWaiting, "", "shared:dom") // shared with shared
	createdAgo(f, 3*time.Minute, judge.StateRunning, w, "repo-1")      // holds its locks
	createdAgo(f, 3*time.Minute, judge.StateWaiting, "", "repo-2")     // another resource
	id := createdAgo(f, 2*time.Minute, judge.StateWaiting, "", "repo-1", "shared:dom")
	createdAgo(f, time.Minute, judge.StateWaiting, "", "repo-1") // newer
	pool, log := tracedPool(t, f)

	got, err := ReadExplainedTask(f.Ctx, pool, testTimeout, id)
	require.NoError(t, err)
	pids, sqls := log.take()
	requireOneTransaction(t, pids, sqls, "begin isolation level repeatable read read only")
	require.Equal(t, id, got.TaskID)
	require.NotNil(t, got.Row)
	require.Equal(t, id, got.Row.ID)
	require.Equal(t, judge.StateWaiting, got.Row.State)
	require.Equal(t, []string{"repo-1", "shared:dom"}, got.Row.Reserved)
	require.False(t, got.Row.Created.IsZero())
	require.Equal(t, []string{exclusiveAhead, sharedAhead, domainAhead}, idsOf(got.Ahead))
	require.Equal(t, 3, got.AheadTotal)
	require.True(t, got.Ahead[0].Created.Before(got.Ahead[1].Created))
}

// TestReadExplainedTaskBounded: at most MaxAhead tasks ahead are loaded,
// the oldest, and all are counted.
func TestReadExplainedTaskBounded(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	var oldest string
	for i := range MaxAhead + 2 {
		id := createdAgo(f, time.Hour-time.Duration(i)*time.Second, judge.StateWaiting, "", "repo-1")
		if i == 0 {
			oldest = id
		}
	}
	id := createdAgo(f, time.Minute, judge.StateWaiting, "", "repo-1")
	got, err := ReadExplainedTask(f.Ctx, f.DB.Pool, testTimeout, id)
	require.NoError(t, err)
	require.Len(t, got.Ahead, MaxAhead)
	require.Equal(t, MaxAhead+2, got.AheadTotal)
	require.Equal(t, oldest, got.Ahead[0].ID)
}

// TestReadExplainedTaskNothingAhead: a name that is no task uuid is not
// looked up, a task with no row has none, and a finished task or one that
// reserves nothing waits for nobody.
func TestReadExplainedTaskNothingAhead(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 0)
	createdAgo(f, time.Hour, judge.StateWaiting, "", "repo-1")
	finished := f.Task(judge.StateCompleted, w, []string{"repo-1"}, time.Second)
	bare := f.Task(judge.StateWaiting, "", nil, -1)
	missing := sim.NewUUID()
	for _, id := range []string{"not-a-uuid", missing, finished, bare} {
		got, err := ReadExplainedTask(f.Ctx, f.DB.Pool, testTimeout, id)
		require.NoError(t, err, id)
		require.Equal(t, id, got.TaskID)
		require.Empty(t, got.Ahead, id)
		require.Zero(t, got.AheadTotal, id)
		require.Equal(t, id == finished || id == bare, got.Row != nil, id)
	}
	got, err := ReadExplainedTask(f.Ctx, f.DB.Pool, testTimeout, bare)
	require.NoError(t, err)
	require.NotNil(t, got.Row.Reserved, "a NULL record reads as empty")
	require.Empty(t, got.Row.Reserved)
}

// TestReadWaitingTasks: the waiting tasks no worker has claimed, in the
// order Pulp's workers fetch them, at most limit, with how many there are.
func TestReadWaitingTasks(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	w := f.Worker("1@w", 0)
	second := createdAgo(f, 2*time.Minute, judge.StateWaiting, "", "repo-2")
	first := createdAgo(f, 3*time.Minute, judge.StateWaiting, "", "repo-1")
	third := createdAgo(f, time.Minute, judge.StateWaiting, "", "repo-3")
	createdAgo(f, 4*time.Minute, judge.StateWaiting, w, "repo-4") // claimed
	createdAgo(f, 4*time.Minute, judge.StateRunning, w, "repo-5")

	rows, total, err := ReadWaitingTasks(f.Ctx, f.DB.Pool, testTimeout, 2)
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{first, second}, idsOf(rows))
	require.Equal(t, []string{"repo-1"}, rows[0].Reserved)

	rows, total, err = ReadWaitingTasks(f.Ctx, f.DB.Pool, testTimeout, 10)
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{first, second, third}, idsOf(rows))
}

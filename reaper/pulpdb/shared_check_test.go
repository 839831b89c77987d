package pulpdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestReadOpenTaskWrites: another session's uncommitted write to core_task
// is listed, with its transaction, how long it has been open and the
// database clock, until it commits; a lock that writes nothing (SELECT FOR
// UPDATE) is not a write, and the writes in another database whose tables
// share core_task's oid (both copied from one template) are not this one's.
func TestReadOpenTaskWrites(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	id := f.Task(judge.StateWaiting, "", nil, -1)
	ws, _, err := ReadOpenTaskWrites(f.Ctx, f.DB.Pool, testTimeout)
	require.NoError(t, err)
	require.Empty(t, ws)

	other := testenv.NewDatabase(t)
	otherTask := (&passtest.Fixture{T: t, Ctx: f.Ctx, DB: other}).Task(judge.StateWaiting, "", nil, -1)
	_, endOther := openWrite(t, other.Pool, otherTask)
	defer endOther()
	locker, err := f.DB.Pool.Begin(f.Ctx)
	require.NoError(t, err)
	defer locker.Rollback(f.Ctx) // error dropped: rolled back below, this is for a failure before
	_, err = locker.Exec(f.Ctx, "SELECT 1 FROM core_task WHERE pulp_id = $1 FOR UPDATE", id)
	require.NoError(t, err)
	ws, _, err = ReadOpenTaskWrites(f.Ctx, f.DB.Pool, testTimeout)
	require.NoError(t, err)
	require.Empty(t, ws, "neither a row lock nor another database's write")
	require.NoError(t, locker.Rollback(f.Ctx))

	pid, end := openWrite(t, f.DB.Pool, id)
	time.Sleep(50 * time.Millisecond)
	before := dbNow(t, f)
	ws, now, err := ReadOpenTaskWrites(f.Ctx, f.DB.Pool, testTimeout)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, pid, ws[0].PID)
	require.NotEmpty(t, ws[0].Transaction)
	require.NotNil(t, ws[0].Age, "the role's own session shows since when it is open")
	require.GreaterOrEqual(t, time.Duration(*ws[0].Age), 50*time.Millisecond)
	require.False(t, now.Before(before), "the database clock")

	end()
	ws, _, err = ReadOpenTaskWrites(f.Ctx, f.DB.Pool, testTimeout)
	require.NoError(t, err)
	require.Empty(t, ws, "committed")
}

// TestReadSharedCheck: the check reads the shared reservers, which of the
// owners asked of a row alive or late (within ttl + grace, by the database
// clock) still carries, and, only when asked to (holds not nil), the
// uncommitted writes to core_task: looked at again, a few times, while
// holds says they hold the memberships, once when it says they do not.
func TestReadSharedCheck(t *testing.T) {
	t.Parallel()
	f := dbFixture(t)
	alive := f.Worker("alive@w", 5*time.Second)
	f.Worker("late@w", 40*time.Second)
	f.Worker("dead@w", 10*time.Minute)
	waiting := f.Task(judge.StateWaiting, "", []string{"shared:repo-1"}, -1)
	f.Task(judge.StateRunning, alive, []string{"repo-1"}, -1)
	names := []string{"alive@w", "late@w", "dead@w", "gone@w"}

	c, err := ReadSharedCheck(f.Ctx, f.DB.Pool, testTimeout, []string{"repo-1"}, names, 30*time.Second, nil, nil)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"repo-1": {waiting}}, c.Reservers)
	require.Equal(t, map[string]bool{"alive@w": true, "late@w": true}, c.LiveNames)
	require.Nil(t, c.OpenWrites, "not asked")
	require.True(t, c.Now.IsZero())

	c, err = ReadSharedCheck(f.Ctx, f.DB.Pool, testTimeout, []string{"repo-1"}, nil, 30*time.Second, nil, nil)
	require.NoError(t, err)
	require.Nil(t, c.LiveNames, "no names asked of")

	pid, end := openWrite(t, f.DB.Pool, waiting)
	defer end()
	looks := 0
	holdsAlways := func(ws []judge.OpenWrite, now time.Time) bool {
		looks++
		require.Len(t, ws, 1)
		require.False(t, now.IsZero())
		return true
	}
	c, err = ReadSharedCheck(f.Ctx, f.DB.Pool, testTimeout, []string{"repo-1"}, nil, 30*time.Second, nil, holdsAlways)
	require.NoError(t, err)
	require.Equal(t, uncommittedLooks, looks)
	require.Equal(t, pid, c.OpenWrites[0].PID, "the last look's writes")
	require.False(t, c.Now.IsZero())

	looks = 0
	holdsNot := func([]judge.OpenWrite, time.Time) bool { looks++; return false }
	_, err = ReadSharedCheck(f.Ctx, f.DB.Pool, testTimeout, []string{"repo-1"}, nil, 30*time.Second, nil, holdsNot)
	require.NoError(t, err)
	require.Equal(t, 1, looks)
}

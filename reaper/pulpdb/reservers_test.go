package pulpdb

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/stretchr/testify/require"
)

// TestReadSharedReservers: each resource asked for lists the incomplete
// tasks that reserve it shared; exclusive reservations, finished tasks and
// resources not asked for are left out.
func TestReadSharedReservers(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	w := f.Worker("1@w", 0)
	running := f.Task(judge.StateRunning, w, []string{"repo-1", "shared:domain"}, -1)
	waiting := f.Task(judge.StateWaiting, "", []string{"shared:domain", "shared:repo-1"}, -1)
	canceling := f.Task(judge.StateCanceling, w, []string{"domain"}, -1)
	f.Task(judge.StateCompleted, w, []string{"repo-1", "shared:domain"}, time.Minute)
	f.Task(judge.StateWaiting, "", []string{"repo-2"}, -1)

	got, err := ReadSharedReservers(f.Ctx, f.DB.Pool, 5*time.Second, []string{"repo-1", "domain", "repo-1", "nothing"}, nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{waiting}, got["repo-1"])
	require.ElementsMatch(t, []string{running, waiting}, got["domain"], "not the canceling task's exclusive reservation")
	_ = canceling
	require.NotContains(t, got, "nothing")
	require.NotContains(t, got, "repo-2")

	// A task the caller says cannot matter is left out as it is read.
	notRunning := func(resource, id string) bool { return id != running }
	got, err = ReadSharedReservers(f.Ctx, f.DB.Pool, 5*time.Second, []string{"repo-1", "domain"}, notRunning)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{waiting}, got["domain"])
	require.ElementsMatch(t, []string{waiting}, got["repo-1"])

	got, err = ReadSharedReservers(f.Ctx, f.DB.Pool, 5*time.Second, nil, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

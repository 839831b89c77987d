package reaper

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnprotectedTaskReportedNothingWritten: a running task of a live worker
// whose task lock was deleted (a Redis restart, an eviction) is reported as
// unprotected, with the other holder of its resource; nothing is written
// for it, and it is no work for audit's exit code.
func TestUnprotectedTaskReportedNothingWritten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := repo()
	task := f.task(StateRunning, f.worker("1@live", time.Second), []string{r}, -1)
	other := f.task(StateRunning, f.worker("2@other", time.Second), []string{r}, -1)
	f.acquire("2@other", other, []string{r}, false)

	dbBefore := sfDBState(f)
	audit := f.pass(f.reaper(nil), ModeAudit)
	require.Equal(t, ExitOK, audit.ExitCode(), "an unprotected task is reported, not work to do")
	for _, rep := range []*Report{audit, f.pass(f.reaper(nil), ModeOnce)} {
		require.Len(t, rep.Tasks, 1)
		tf := rep.Tasks[0]
		require.Equal(t, task, tf.ID)
		require.Equal(t, VerdictUnprotected, tf.Verdict)
		require.Equal(t, ActionReport, tf.Action)
		require.Equal(t, ResultReported, tf.Result)
		require.Equal(t, []UnguardedResource{{Resource: r, Need: KindExclusive, OtherHolders: []ResourceHolder{{Owner: "2@other", Kind: KindExclusive}}}}, tf.Resources)
		require.Zero(t, rep.Summary.TasksUpdated)
	}
	require.Equal(t, dbBefore, sfDBState(f), "nothing written to the database")
	require.Equal(t, "2@other", f.get(ResourceKeyPrefix+r), "the other holder is left alone")
	require.Empty(t, f.get(TaskKeyPrefix+task), "no lock written on the task's behalf")
}

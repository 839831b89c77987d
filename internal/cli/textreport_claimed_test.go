package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestTextReportSaysWhoseRestartFreesAClaimedTask: a claimed-not-started
// task's row gets a line naming the worker and how long it has been seen.
func TestTextReportSaysWhoseRestartFreesAClaimedTask(t *testing.T) {
	t.Parallel()
	rep := &reaper.Report{Tasks: []reaper.TaskFinding{{TaskJudgement: &judge.TaskJudgement{
		ID: "00000000-0000-4000-8000-000000000002", Verdict: judge.VerdictClaimedNotStarted, Action: judge.ActionReport,
		StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, Owner: "1@worker-7", NotStartedFor: 14 * time.Minute,
	}, Result: reaper.ResultReported}}}
	var b bytes.Buffer
	writeTaskFindings(&b, rep.Tasks, layout{})
	require.Contains(t, b.String(), "00000000-0000-4000-8000-000000000002 claimed by 1@worker-7 and not started for at least 14 min")
	require.Contains(t, b.String(), "restarting that worker frees it")
}

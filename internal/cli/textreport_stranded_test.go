package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestTextReportSaysWhyATaskIsStranded: the text report gives a stranded
// task's row a line naming the versions it waits for.
func TestTextReportSaysWhyATaskIsStranded(t *testing.T) {
	t.Parallel()
	rep := &reaper.Report{Tasks: []reaper.TaskFinding{{TaskJudgement: &judge.TaskJudgement{
		ID: "00000000-0000-4000-8000-000000000001", Verdict: judge.VerdictStranded, Action: judge.ActionReport,
		StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, Owner: "1@old",
		Stranded: &judge.Stranded{Needs: []judge.VersionNeed{{Label: "file", Least: "1.12.0", Has: "1.11.0"}}, Online: 25},
	}, Result: reaper.ResultReported}}}
	var b bytes.Buffer
	writeTaskFindings(&b, rep.Tasks, layout{})
	require.Contains(t, b.String(), "00000000-0000-4000-8000-000000000001 waits for a worker with file ≥ 1.12.0; none of 25 online workers has it")
}

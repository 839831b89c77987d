package status

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestJudgedTasksSayWhy: the table of lost, orphaned and stuck tasks says
// why each stands there, as the report does: a stranded task the versions
// it waits for, a stuck or never-started claim its worker; a requeued lost
// task has nothing to add.
func TestJudgedTasksSayWhy(t *testing.T) {
	t.Parallel()
	rows := []judge.TaskJudgement{
		{ID: "01927b2a-3c4d-7abc-8def-0123456789ab", Verdict: judge.VerdictStranded, Action: judge.ActionReport, Owner: "1@old",
			StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting,
			Stranded: &judge.Stranded{Needs: []judge.VersionNeed{{Label: "file", Least: "1.12.0", Has: "1.11.0"}}, Online: 25}},
		{ID: "01927b2a-3c4d-7abc-8def-0123456789ac", Verdict: judge.VerdictStuckCanceling, Action: judge.ActionUpdate, Owner: "1@w",
			StateBefore: judge.StateCanceling, StateAfter: judge.StateCanceled},
		{ID: "01927b2a-3c4d-7abc-8def-0123456789ad", Verdict: judge.VerdictLost, Action: judge.ActionUpdate, Owner: "1@dead",
			StateBefore: judge.StateRunning, StateAfter: judge.StateCanceled},
	}
	var out strings.Builder
	require.NoError(t, templates().ExecuteTemplate(&out, "judged-tasks-table", rows))
	body := out.String()
	assert.Contains(t, body, `<th scope="col">Why</th>`)
	assert.Contains(t, body, "Worker 1@old is too old for the task, which waits for a worker with file ≥ 1.12.0; none of 25 online workers has it.")
	assert.Contains(t, body, "Worker 1@w claimed the task and never started it")
	assert.Contains(t, body, "Worker 1@dead has gone missing; lock reaper canceled.")
}

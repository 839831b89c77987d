package pulpdb

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestTaskReason: the message a finished task is written with names the
// worker it was lost by and the state it was moved to; a requeue and a
// stuck claim's clearing finish nothing and carry none.
func TestTaskReason(t *testing.T) {
	t.Parallel()
	const id = "00000000-0000-4000-8000-000000000002"
	cases := []struct {
		name string
		tj   judge.TaskJudgement
		want string
	}{
		{"lost, canceled", judge.TaskJudgement{Verdict: judge.VerdictLost, Owner: "1@w", StateAfter: judge.StateCanceled},
			"Worker 1@w has gone missing; lock reaper canceled."},
		{"lost, failed", judge.TaskJudgement{Verdict: judge.VerdictLost, Owner: "1@w", StateAfter: judge.StateFailed},
			"Worker 1@w has gone missing; lock reaper failed."},
		{"lost by no known worker", judge.TaskJudgement{Verdict: judge.VerdictLost, StateAfter: judge.StateCanceled},
			"Worker (unknown) has gone missing; lock reaper canceled."},
		{"orphaned claim, canceled", judge.TaskJudgement{Verdict: judge.VerdictOrphanedClaim, Owner: "1@w", StateAfter: judge.StateCanceled},
			"Worker 1@w has gone missing; lock reaper canceled."},
		{"orphaned claim, requeued", judge.TaskJudgement{Verdict: judge.VerdictOrphanedClaim, Owner: "1@w", StateAfter: judge.StateWaiting, ClearClaim: true}, ""},
		{"stuck claim", judge.TaskJudgement{Verdict: judge.VerdictStuckClaim, Owner: "1@w", StateAfter: judge.StateWaiting, ClearClaim: true}, ""},
		{"stranded, none can run it", judge.TaskJudgement{Verdict: judge.VerdictStranded, Owner: "1@w", StateAfter: judge.StateWaiting,
			Stranded: &judge.Stranded{Needs: []judge.VersionNeed{{Label: "file", Least: "1.12.0", Has: "1.11.0"}}, Online: 25}},
			"Worker 1@w is too old for the task, which waits for a worker with file ≥ 1.12.0; none of 25 online workers has it."},
		{"stranded, requeued", judge.TaskJudgement{Verdict: judge.VerdictStranded, Owner: "1@w", StateAfter: judge.StateWaiting, ClearClaim: true,
			Stranded: &judge.Stranded{Needs: []judge.VersionNeed{{Label: "file", Least: "1.12.0"}}, Online: 25, Compatible: 3}},
			"Worker 1@w is too old for the task, which needs file ≥ 1.12.0; its worker has no file; 3 of 25 online workers have it."},
		{"unprotected", judge.TaskJudgement{ID: id, Verdict: judge.VerdictUnprotected, Owner: "1@w", StateAfter: judge.StateRunning},
			"Worker 1@w runs the task, but its lock task:" + id + " is gone from Redis: its resources are unguarded."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, TaskReason(&tc.tj))
		})
	}
}

// TestReaperReasonLikeMatchesTaskReason: the LIKE patterns that find the
// tasks a reaper finished (ReadFinishedByReaper) are TaskReason's messages
// for them with each of their parts a wildcard, so that a change of a
// message cannot leave its tasks unfound.
func TestReaperReasonLikeMatchesTaskReason(t *testing.T) {
	t.Parallel()
	messages := []string{lostReason, stuckCancelingReason}
	require.Len(t, reaperReasonLikes, len(messages))
	for i, m := range messages {
		require.Equal(t, strings.ReplaceAll(m, "%s", "%"), reaperReasonLikes[i])
		require.NotContains(t, strings.ReplaceAll(m, "%s", ""), "_", "no LIKE wildcard in the fixed text")
	}
}

package reaper_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// TestPassClaimedNotStarted: a waiting task its live worker claimed and
// holds the lock of, but never started, is only remembered on its first
// sighting, reported once confirmed, and never written: its row and its
// locks stay as they were. A requeue would let a second worker run it
// beside a process that may yet reach set_running.
func TestPassClaimedNotStarted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.Worker("1@w", time.Second)
	repo := passtest.Repo()
	claimed := f.Task(judge.StateWaiting, w, []string{repo}, -1)
	f.Acquire("1@w", claimed, []string{repo}, false)

	r := f.reaper(nil)
	rep := f.pass(r, reaper.ModeOnce)
	require.Nil(t, taskFindingFor(rep, claimed), "a first sighting is only remembered")

	f.ageSuspects(14 * time.Minute)
	for range 2 {
		rep = f.pass(r, reaper.ModeOnce)
		tf := taskFindingFor(rep, claimed)
		require.NotNil(t, tf)
		require.Equal(t, judge.VerdictClaimedNotStarted, tf.Verdict)
		require.Equal(t, judge.ActionReport, tf.Action)
		require.Equal(t, reaper.ResultReported, tf.Result)
		require.Equal(t, "1@w", tf.Owner)
		require.Contains(t, pulpdb.TaskReason(tf.TaskJudgement), "claimed by 1@w and not started for at least 14 min")
		require.Contains(t, pulpdb.TaskReason(tf.TaskJudgement), "restarting that worker frees it")
		require.False(t, rep.WouldAct(), "a report only: nothing a pass would write")

		state, appLock, reason, finished := f.TaskRow(claimed)
		require.Equal(t, judge.StateWaiting, state, "never written")
		require.NotNil(t, appLock)
		require.Equal(t, w, *appLock)
		require.Nil(t, reason)
		require.Nil(t, finished)
		require.Equal(t, "1@w", f.Get(judge.TaskKeyPrefix+claimed))
		require.Equal(t, "1@w", f.Get(judge.ResourceKeyPrefix+repo))
	}
}

// TestClaimedNotStartedJSONKeepsItsWords: a report read back from JSON says
// the same of a claimed-not-started task.
func TestClaimedNotStartedJSONKeepsItsWords(t *testing.T) {
	t.Parallel()
	tj := &judge.TaskJudgement{ID: "t", Verdict: judge.VerdictClaimedNotStarted, Action: judge.ActionReport, Owner: "1@worker-7",
		StateBefore: judge.StateWaiting, StateAfter: judge.StateWaiting, NotStartedFor: 14 * time.Minute}
	b, err := json.Marshal(reaper.TaskFinding{TaskJudgement: tj, Result: reaper.ResultReported})
	require.NoError(t, err)
	require.Contains(t, string(b), `"not_started_for":840.000`)
	require.Contains(t, string(b), "claimed by 1@worker-7 and not started for at least 14 min")
	var back reaper.TaskFinding
	require.NoError(t, json.Unmarshal(b, &back))
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(again))
}

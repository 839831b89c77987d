package judge

// Table tests of the judge against verdicts.md: one case per row of every
// table, in the test file of the rule's own file (owner_test.go,
// task_lock_test.go, resource_test.go, confirm_test.go, lost_test.go,
// unprotected_test.go, guards_test.go, guards_limits_test.go); the world
// they build snapshots in is world_test.go. The judge is pure, so these
// need no services. This file holds what concerns the plan as a whole.

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJudgeTaskLocksBeforeResources(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.resource("a", KindExclusive, "x")
	w.taskLock(jtID(5), "x")
	w.resource("b", KindShared, "y")
	w.resource("b", KindShared, "x")
	w.taskLock(jtID(3), "x")
	plan := w.judge(jtPolicy())
	var keys []string
	for _, jd := range plan.Holdings {
		keys = append(keys, jd.Key+"|"+jd.Owner)
	}
	require.Equal(t, []string{
		TaskKeyPrefix + jtID(3) + "|x",
		TaskKeyPrefix + jtID(5) + "|x",
		ResourceKeyPrefix + "a|x",
		ResourceKeyPrefix + "b|x",
		ResourceKeyPrefix + "b|y",
	}, keys)
}

func TestJudgeEmptySnapshot(t *testing.T) {
	t.Parallel()
	plan := All(Snapshot{Now: jtNow}, jtPolicy())
	require.Empty(t, plan.Holdings)
	require.Empty(t, plan.Tasks)
	require.Empty(t, plan.Guards)
	require.NotNil(t, plan.Suspects)
	require.Empty(t, plan.Suspects)
}

func TestJudgeDoesNotReorderInput(t *testing.T) {
	t.Parallel()
	w := jtNewWorld()
	w.resource("z", KindExclusive, "x")
	w.taskLock(jtID(5), "x")
	before := append([]Holding(nil), w.snap.Holdings...)
	w.judge(jtPolicy())
	require.Equal(t, before, w.snap.Holdings)
}

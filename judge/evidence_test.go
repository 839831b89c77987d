package judge

import (
	"testing"
)

// TestTaskLocksSeenListsEachKeyOnce: the task locks seen are stored in
// Redis for the release script, a field each: a holding the snapshot listed
// twice is written once.
func TestTaskLocksSeenListsEachKeyOnce(t *testing.T) {
	t.Parallel()
	task := Holding{Key: TaskKeyPrefix + jtID(1), Owner: "1@w", Kind: KindTask}
	other := Holding{Key: TaskKeyPrefix + jtID(2), Owner: "1@w", Kind: KindTask}
	guardedRelease := Judgement{Holding: Holding{Key: ResourceKeyPrefix + "r", Owner: "1@w", Kind: KindExclusive},
		Action: ActionRelease}.WithEvidence(Evidence{OwnerLiveness: Alive})
	seen := taskLocksSeen([]Holding{other, task, task, guardedRelease.Holding}, []Judgement{guardedRelease})
	require.Equal(t, map[string][]string{"1@w": {task.Key, other.Key}}, seen)
}

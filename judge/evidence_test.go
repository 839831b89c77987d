package judge

import (
	"testing"
)

// TestRegistrySeenListsEachKeyOnce: the keys the snapshot saw a guarded
// owner's registry list are stored in Redis for the release script, once
// each: its registered holdings, task locks and resources, and nothing the
// registry does not list.
func TestRegistrySeenListsEachKeyOnce(t *testing.T) {
	t.Parallel()
	task := Holding{Key: TaskKeyPrefix + jtID(1), Owner: "1@w", Kind: KindTask, Registered: true}
	other := Holding{Key: TaskKeyPrefix + jtID(2), Owner: "1@w", Kind: KindTask, Registered: true}
	legacy := Holding{Key: TaskKeyPrefix + jtID(3), Owner: "1@w", Kind: KindTask}
	guardedRelease := Judgement{Holding: Holding{Key: ResourceKeyPrefix + "r", Owner: "1@w", Kind: KindExclusive, Registered: true},
		Action: ActionRelease}.WithEvidence(Evidence{OwnerLiveness: Alive})
	elsewhere := Holding{Key: TaskKeyPrefix + jtID(4), Owner: "2@w", Kind: KindTask, Registered: true}
	seen := registrySeen([]Holding{other, task, task, legacy, guardedRelease.Holding, elsewhere}, []Judgement{guardedRelease})
	require.Equal(t, map[string][]string{"1@w": {guardedRelease.Key, task.Key, other.Key}}, seen)
}

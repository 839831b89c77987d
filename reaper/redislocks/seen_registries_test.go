package redislocks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestSeenRegistriesListsEachKeyOnce: the keys the snapshot saw a guarded
// owner's registry list are stored in Redis for the release script, once
// each: its registered holdings, task locks and resources, and nothing the
// registry does not list.
func TestSeenRegistriesListsEachKeyOnce(t *testing.T) {
	t.Parallel()
	id := func(n int) string { return "00000000-0000-4000-8000-00000000000" + string(rune('0'+n)) }
	task := judge.Holding{Key: judge.TaskKeyPrefix + id(1), Owner: "1@w", Kind: judge.KindTask, Registered: true}
	other := judge.Holding{Key: judge.TaskKeyPrefix + id(2), Owner: "1@w", Kind: judge.KindTask, Registered: true}
	legacy := judge.Holding{Key: judge.TaskKeyPrefix + id(3), Owner: "1@w", Kind: judge.KindTask}
	guardedRelease := withEvidence(judge.Judgement{Holding: judge.Holding{Key: judge.ResourceKeyPrefix + "r", Owner: "1@w", Kind: judge.KindExclusive, Registered: true},
		Action: judge.ActionRelease}, judge.Evidence{OwnerLiveness: heartbeat.Alive})
	elsewhere := judge.Holding{Key: judge.TaskKeyPrefix + id(4), Owner: "2@w", Kind: judge.KindTask, Registered: true}
	seen := SeenRegistries([]judge.Holding{other, task, task, legacy, guardedRelease.Holding, elsewhere}, []judge.Judgement{guardedRelease})
	require.Equal(t, map[string][]string{"1@w": {guardedRelease.Key, task.Key, other.Key}}, seen)
}

// withEvidence is jd with evidence e.
func withEvidence(jd judge.Judgement, e judge.Evidence) judge.Judgement {
	jd.SetEvidence(e)
	return jd
}

package reaper

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestCrowdedShared: a resource is crowded when more incomplete tasks than
// the limit reserve it shared in the snapshot, not counting finished tasks
// nor tasks whose task lock the plan does not keep (a reserving list drops
// or pairs those), and only for a guarded shared membership the plan
// releases.
func TestCrowdedShared(t *testing.T) {
	const domain, repo = "prn:core.domain:d", "prn:rpm.rpmrepository:r"
	taskLock := func(id string, action judge.Action) judge.Judgement {
		return judge.Judgement{Holding: judge.Holding{Key: judge.TaskKeyPrefix + id, Owner: "1@dead", Kind: judge.KindTask}, Action: action}
	}
	membership := judge.Judgement{Holding: judge.Holding{Key: judge.ResourceKeyPrefix + domain, Owner: "1@dead", Kind: judge.KindShared}, Action: judge.ActionRelease}
	tasks := map[string]judge.Task{}
	add := func(id, state string, reserved ...string) {
		tasks[id] = judge.Task{ID: id, State: state, Reserved: reserved}
	}
	add("t1", judge.StateRunning, repo, judge.SharedPrefix+domain)
	add("t2", judge.StateWaiting, judge.SharedPrefix+domain)
	add("t3", judge.StateCanceling, judge.SharedPrefix+domain)
	add("done", judge.StateCompleted, judge.SharedPrefix+domain)
	add("exclusive", judge.StateRunning, domain)
	add("lost", judge.StateRunning, judge.SharedPrefix+domain)
	add("kept", judge.StateRunning, judge.SharedPrefix+domain)
	snap := judge.Snapshot{Tasks: tasks}
	plan := &judge.Plan{Holdings: []judge.Judgement{taskLock("lost", judge.ActionRelease), taskLock("kept", judge.ActionKeep), membership}}

	// t1, t2, t3 and kept reserve the domain shared: four.
	require.Equal(t, map[string]bool{domain: true}, crowdedShared(snap, plan, 3))
	require.Nil(t, crowdedShared(snap, plan, 4), "four tasks fit a limit of four")

	plan.Holdings[2].Action = judge.ActionKeep
	require.Nil(t, crowdedShared(snap, plan, 0), "no membership to release")
}

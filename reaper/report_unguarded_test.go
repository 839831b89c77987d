package reaper

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestUnguardedLists: an unprotected task's report lists what it reserves,
// in record order, each resource's holders once, and no holding of its own
// worker among the other holders.
func TestUnguardedLists(t *testing.T) {
	t.Parallel()
	const worker = "1@worker-a"
	hold := func(resource string, kind judge.Kind, owner string) judge.Holding {
		return judge.Holding{Key: judge.ResourceKeyPrefix + resource, Owner: owner, Kind: kind}
	}
	none := []ResourceHolder{}
	cases := []struct {
		name     string
		reserved []string
		holdings []judge.Holding
		want     []UnguardedResource
	}{
		{"no other holder", []string{"R", "shared:D"}, nil,
			[]UnguardedResource{{Resource: "R", Need: judge.KindExclusive, OtherHolders: none}, {Resource: "D", Need: judge.KindShared, OtherHolders: none}}},
		{"another task took its exclusive resource", []string{"R"}, []judge.Holding{hold("R", judge.KindExclusive, "2@worker-b")},
			[]UnguardedResource{{Resource: "R", Need: judge.KindExclusive, OtherHolders: []ResourceHolder{{Owner: "2@worker-b", Kind: judge.KindExclusive}}}}},
		{"its own worker's holdings are not other holders", []string{"R", "shared:D"},
			[]judge.Holding{hold("R", judge.KindExclusive, worker), hold("D", judge.KindShared, worker), hold("D", judge.KindShared, "3@worker-c"),
				{Key: judge.TaskKeyPrefix + "00000000-0000-4000-8000-000000000001", Owner: "3@worker-c", Kind: judge.KindTask}},
			[]UnguardedResource{{Resource: "R", Need: judge.KindExclusive, OtherHolders: none},
				{Resource: "D", Need: judge.KindShared, OtherHolders: []ResourceHolder{{Owner: "3@worker-c", Kind: judge.KindShared}}}}},
		{"reserved both ways: holders listed once, sorted", []string{"D", "shared:D"},
			[]judge.Holding{hold("D", judge.KindShared, "9@z"), hold("D", judge.KindShared, "2@b")},
			[]UnguardedResource{{Resource: "D", Need: judge.KindExclusive, OtherHolders: []ResourceHolder{{Owner: "2@b", Kind: judge.KindShared}, {Owner: "9@z", Kind: judge.KindShared}}},
				{Resource: "D", Need: judge.KindShared, OtherHolders: none}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := unguarded(judge.Task{Reserved: tc.reserved}, worker, resourceHolders(tc.holdings))
			require.Equal(t, tc.want, got)
		})
	}
}

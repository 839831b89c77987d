package judge

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// orderFixture is a few hundred holdings of every kind, shuffled, some with
// the same key for several owners, and the order every pass must use.
func orderFixture(t *testing.T, seed uint64) (shuffled, want []Holding) {
	t.Helper()
	snap := jbFleet(600)
	for _, owner := range []string{"1@b", "1@a", "1@c"} {
		snap.Holdings = append(snap.Holdings, Holding{Key: ResourceKeyPrefix + "shared-d", Kind: KindShared, Owner: owner})
	}
	want = slices.Clone(snap.Holdings)
	slices.SortFunc(want, func(a, b Holding) int {
		if (a.Kind == KindTask) != (b.Kind == KindTask) {
			if a.Kind == KindTask {
				return -1
			}
			return 1
		}
		if a.Key != b.Key {
			if a.Key < b.Key {
				return -1
			}
			return 1
		}
		if a.Owner < b.Owner {
			return -1
		}
		if a.Owner > b.Owner {
			return 1
		}
		return 0
	})
	shuffled = slices.Clone(snap.Holdings)
	rng := rand.New(rand.NewPCG(seed, 1))
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	return shuffled, want
}

// TestPlanListsInKeyOrder: whatever order the snapshot's holdings are in,
// the plan lists them task locks first, then by key and owner, and judges
// them alike.
func TestPlanListsInKeyOrder(t *testing.T) {
	t.Parallel()
	var first Plan
	for seed := range uint64(5) {
		hs, want := orderFixture(t, seed)
		snap := jbFleet(600)
		snap.Holdings = hs
		plan := All(snap, jtPolicy())
		listed := make([]Holding, len(plan.Holdings))
		for n, jd := range plan.Holdings {
			listed[n] = jd.Holding
		}
		require.Equal(t, want, listed)
		if seed == 0 {
			first = plan
			continue
		}
		require.Equal(t, first.Holdings, plan.Holdings, "the snapshot's order changes no judgement")
		require.Equal(t, first.Tasks, plan.Tasks)
	}
}

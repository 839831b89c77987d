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

// TestSortHoldings: task locks first, then by key and owner, in place.
func TestSortHoldings(t *testing.T) {
	t.Parallel()
	for seed := range uint64(5) {
		hs, want := orderFixture(t, seed)
		SortHoldings(hs)
		require.Equal(t, want, hs)
		SortHoldings(hs)
		require.Equal(t, want, hs, "sorting sorted holdings changes nothing")
	}
	SortHoldings(nil)
}

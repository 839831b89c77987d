package reaper

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// msFixture is a few hundred holdings of every kind, shuffled, some with the
// same key for several owners, and the order every pass must use.
func msFixture(seed uint64) (shuffled, want []Holding) {
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range 600 {
		owner := fmt.Sprintf("%d@w", rng.IntN(7))
		switch i % 3 {
		case 0:
			shuffled = append(shuffled, Holding{Key: TaskKeyPrefix + fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Owner: owner, Kind: KindTask})
		case 1:
			shuffled = append(shuffled, Holding{Key: ResourceKeyPrefix + fmt.Sprintf("repo-%d", rng.IntN(50)), Owner: owner, Kind: KindExclusive})
		default:
			shuffled = append(shuffled, Holding{Key: ResourceKeyPrefix + "domain", Owner: owner, Kind: KindShared})
		}
	}
	want = slices.Clone(shuffled)
	sortHoldings(want)
	return shuffled, want
}

// TestMergeSorted: holdings read after the first n were sorted are merged in
// at their place.
func TestMergeSorted(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 100, 599, 600, 603} {
		hs, want := msFixture(uint64(n))
		sortHoldings(hs[:min(n, len(hs))])
		mergeSorted(hs, n)
		require.Equal(t, want, hs, "n=%d", n)
	}
}

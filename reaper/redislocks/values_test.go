package redislocks_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// TestReadSharedSetOfManyPages: a shared lock set of several SSCAN pages,
// registered or not, is read whole, each member once, beside a small set and
// a string lock in the same batch; a set under a task key is still ignored.
func TestReadSharedSetOfManyPages(t *testing.T) {
	t.Parallel()
	f := passtest.New(t)
	rdb := f.Redis.Client
	big, small := judge.ResourceKeyPrefix+passtest.Domain, judge.ResourceKeyPrefix+passtest.Repo()
	const members = 4321
	var want []string
	for start := 0; start < members; start += 1000 {
		batch := make([]any, 0, 1000)
		for i := start; i < min(start+1000, members); i++ {
			owner := fmt.Sprintf("%d@host-%d", i, i%7)
			want = append(want, owner)
			batch = append(batch, owner)
		}
		require.NoError(t, rdb.SAdd(f.Ctx, big, batch...).Err())
	}
	// Some owners registered it, as pulpcore's acquire does.
	for _, o := range want[:3] {
		require.NoError(t, rdb.SAdd(f.Ctx, redislocks.OwnerLocksPrefix+o, big).Err())
		require.NoError(t, rdb.SAdd(f.Ctx, redislocks.ActiveOwnersKey, o).Err())
	}
	require.NoError(t, rdb.SAdd(f.Ctx, small, "1@a", "2@b").Err())
	exclusive := judge.ResourceKeyPrefix + passtest.Repo()
	require.NoError(t, rdb.Set(f.Ctx, exclusive, "3@c", 0).Err())
	taskSet := judge.TaskKeyPrefix + sim.NewUUID()
	require.NoError(t, rdb.SAdd(f.Ctx, taskSet, "4@d").Err())

	for _, full := range []bool{true, false} {
		rr := &redislocks.Reader{RDB: rdb, ScanCount: 100, BatchSize: 50, Timeout: 10 * time.Second}
		snap, err := rr.Read(f.Ctx, full)
		require.NoError(t, err)
		got := map[string][]string{}
		registered := 0
		for _, h := range snap.Holdings {
			got[h.Key] = append(got[h.Key], h.Owner)
			if h.Key == big {
				require.Equal(t, judge.KindShared, h.Kind)
				if h.Registered {
					registered++
				}
			}
		}
		require.Len(t, got[big], members, "full scan %v: every member once", full)
		require.ElementsMatch(t, want, got[big])
		require.True(t, slices.IsSorted(got[big]))
		require.Equal(t, 3, registered)
		if !full {
			// Only the registered keys are read without the full scan.
			require.Len(t, got, 1)
			continue
		}
		require.ElementsMatch(t, []string{"1@a", "2@b"}, got[small])
		require.Equal(t, []string{"3@c"}, got[exclusive])
		require.Len(t, snap.Ignored, 1)
		require.Equal(t, taskSet, snap.Ignored[0].Key)
	}
}

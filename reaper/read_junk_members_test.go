package reaper_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
)

// TestBadInputJunkMemberBesideRealOne: a shared lock's set holds a dead
// owner's real membership beside junk too long to be an owner name: one
// member of 8 KiB in a small set, 1200 of them in a large one. The junk is
// reported as ignored, with its size, and never read (the client reads a
// small part of the 9 MiB); the dead owner's membership of each set is
// judged as any other, and released; the junk stays.
func TestBadInputJunkMemberBesideRealOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(2)
	ctx, rdb := f.Ctx, f.Redis.Client
	const junkLen, many = 8 << 10, 1200
	small, large := judge.ResourceKeyPrefix+repo(), judge.ResourceKeyPrefix+repo()
	require.NoError(t, rdb.SAdd(ctx, small, strings.Repeat("j", junkLen), fl.deadOwner).Err())
	for start := 0; start < many; start += 100 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+100; i++ {
				p.SAdd(ctx, large, sim.NewUUID()+strings.Repeat("j", junkLen-36))
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NoError(t, rdb.SAdd(ctx, large, fl.deadOwner).Err())
	fl.stale = append(fl.stale, heldKey{small, fl.deadOwner}, heldKey{large, fl.deadOwner})

	counted, read := countingClient(t, rdb)
	r, err := reaper.New(reaper.DefaultConfig(), counted, f.DB.Pool, passtest.Logger())
	require.NoError(t, err)
	check := func(rep *reaper.Report) {
		t.Helper()
		require.Empty(t, rep.Error)
		require.Equal(t, "member of 8192 bytes, not read: an owner name is at most 1024 bytes", biIgnored(t, rep, small).Reason)
		require.Contains(t, biIgnored(t, rep, large).Reason, "members of up to 8192 bytes, not read: an owner name is at most 1024 bytes")
		require.Len(t, rep.Ignored, 2)
		for _, k := range []string{small, large} {
			fd := findingFor(rep, k, fl.deadOwner)
			require.NotNil(t, fd, "the dead owner's membership of %s is judged", k)
			require.Equal(t, judge.VerdictOwnerDead, fd.Verdict)
		}
		require.Len(t, rep.Findings, len(fl.stale))
	}
	check(f.pass(r, reaper.ModeAudit))
	require.Less(t, read.Load(), int64(2<<20), "bytes read from Redis by the audit, of 9 MiB of junk")
	f.requireHealthy(fl)

	check(f.pass(r, reaper.ModeOnce))
	f.requireConverged(fl)
	require.Equal(t, int64(1), rdb.SCard(ctx, small).Val(), "junk untouched")
	require.Equal(t, int64(many), rdb.SCard(ctx, large).Val(), "junk untouched")
}

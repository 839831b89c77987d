package reaper_test

import (
	"context"
	"errors"
	"github.com/lock-reaper/lock-reaper/internal/testing/passtest"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/internal/exitcode"
	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestFaultReleaseReplyLost: Redis runs the first release call, and its
// reply is lost (a timeout on a slow call loses it the same way). The call's
// holdings are read again: the four it released are reported released, not
// failed; the rest of the pass fails untouched, and the next pass finishes.
func TestFaultReleaseReplyLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := f.buildFleet(8) // 17 stale holdings, 5 batches of 4
	lose := &loseFirstReleaseReply{}
	r := f.reaperOn(f.redisClient("", lose), f.DB.Pool, nil)

	rep, err := r.RunOnce(f.Ctx, reaper.Options{Mode: reaper.ModeOnce})
	require.ErrorIs(t, err, errReleaseReplyLost)
	require.Equal(t, exitcode.Failed, exitcode.Of(rep))
	holdings, _ := sfResults(rep)
	require.Equal(t, map[reaper.Result]int{reaper.ResultReleased: 4, reaper.ResultFailed: len(fl.stale) - 4}, holdings)
	f.requireFailedUntouched(rep)
	f.requireHealthy(fl)

	f.finish(fl)
}

var errReleaseReplyLost = errors.New("read tcp: i/o timeout (the release call's reply was lost)")

// loseFirstReleaseReply lets the first call of the release script run, then
// loses its reply.
type loseFirstReleaseReply struct{ done atomic.Bool }

func (*loseFirstReleaseReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseFirstReleaseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && passtest.IsReleaseCall(cmd) && h.done.CompareAndSwap(false, true) {
			cmd.SetErr(errReleaseReplyLost)
			return errReleaseReplyLost
		}
		return err
	}
}

func (*loseFirstReleaseReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

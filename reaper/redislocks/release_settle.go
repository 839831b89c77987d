package redislocks

import (
	"context"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/redis/go-redis/v9"
)

// settle reads again, after a release call failed, the holdings of b (at
// positions idx of out) and sets the outcome of each it can tell: Released
// for a holding its owner no longer holds (a script runs whole or not at
// all: a call that timed out may have run, and its releases stand),
// StillHeld for one still held, OwnerChanged for a string lock another owner
// holds now. A holding whose read fails keeps no outcome: the caller counts
// it failed. A shared set read is SISMEMBER, a string lock GET: one
// pipeline of cheap commands, a batch's worth.
func (r *Releaser) settle(ctx context.Context, b Batch, idx []int, out []Outcome) {
	if len(b.Holdings) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Timeout)
	defer cancel()
	cmds := make([]redis.Cmder, len(b.Holdings))
	_, _ = r.RDB.Pipelined(cctx, func(p redis.Pipeliner) error {
		for n, h := range b.Holdings {
			if h.Kind == judge.KindShared {
				cmds[n] = p.SIsMember(cctx, h.Key, h.Owner)
			} else {
				cmds[n] = p.Get(cctx, h.Key)
			}
		}
		return nil
	})
	for n, h := range b.Holdings {
		switch c := cmds[n].(type) {
		case *redis.BoolCmd:
			switch held, err := c.Result(); {
			case err != nil:
			case held:
				out[idx[n]] = StillHeld
			default:
				out[idx[n]] = Released
			}
		case *redis.StringCmd:
			switch value, err := c.Result(); {
			case err == redis.Nil:
				out[idx[n]] = Released
			case err != nil:
			case value == h.Owner:
				out[idx[n]] = StillHeld
			default:
				out[idx[n]] = OwnerChanged
			}
		}
	}
}

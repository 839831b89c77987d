package reaper

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLoad is the pass's own traffic to Redis: what Pulp's Redis, which
// serves every worker, spent on the pass. It counts the calls made with the
// pass's context only, so that the daemon's other Redis reads (the status
// page, heartbeat polls between passes) are not in it.
type RedisLoad struct {
	// KeysScanned counts the keys the SCAN calls returned (SCAN MATCH
	// returns only the keys that can be locks; Scanned.Keys counts the lock
	// keys read, the registered ones included, and is not this).
	KeysScanned int64 `json:"keys_scanned"`
	ScanCalls   int64 `json:"scan_calls"`
	// Commands counts the other commands, each command of a pipeline one.
	Commands int64 `json:"commands"`
	// RoundTrips counts the trips to Redis: one per command sent alone, one
	// per pipeline.
	RoundTrips int64 `json:"round_trips"`
	// WaitSeconds is the time the pass's calls waited on Redis, summed over
	// the calls: calls made at once (the walk and the reads overlap) each
	// count, so it can exceed the pass's duration.
	WaitSeconds float64 `json:"redis_wait_seconds"`
}

// passLoad is the counters of one pass, carried in its context.
type passLoad struct {
	// owner is the hook that counts this pass: a client shared by several
	// Reapers has one hook per Reaper, each seeing every call, and only
	// the first to see the pass counts it.
	owner       atomic.Pointer[loadHook]
	keysScanned atomic.Int64
	scanCalls   atomic.Int64
	commands    atomic.Int64
	roundTrips  atomic.Int64
	waitNanos   atomic.Int64
}

type passLoadKey struct{}

// withPassLoad returns ctx carrying fresh counters for one pass.
func withPassLoad(ctx context.Context) (context.Context, *passLoad) {
	l := &passLoad{}
	return context.WithValue(ctx, passLoadKey{}, l), l
}

func (l *passLoad) report() RedisLoad {
	return RedisLoad{
		KeysScanned: l.keysScanned.Load(), ScanCalls: l.scanCalls.Load(), Commands: l.commands.Load(),
		RoundTrips: l.roundTrips.Load(), WaitSeconds: time.Duration(l.waitNanos.Load()).Seconds(),
	}
}

// count adds one command, after its reply. SSCAN, HSCAN and ZSCAN reply
// with a ScanCmd too, and are other commands: they read one key.
func (l *passLoad) count(cmd redis.Cmder) {
	if sc, ok := cmd.(*redis.ScanCmd); ok && cmd.Name() == "scan" {
		l.scanCalls.Add(1)
		keys, _ := sc.Val()
		l.keysScanned.Add(int64(len(keys)))
		return
	}
	l.commands.Add(1)
}

// loadHook counts the calls of a pass (a context from withPassLoad) on the
// client the Reaper uses; calls with any other context pass through.
// It is not zero-sized: pointers to zero-sized values may all be equal,
// and passLoad.owner tells hooks apart by pointer.
type loadHook struct{ _ byte }

// installLoadHook adds a counting hook to rdb.
func installLoadHook(rdb redis.UniversalClient) {
	rdb.AddHook(&loadHook{})
}

// loadOf is the pass's counters when h is to count ctx's calls.
func (h *loadHook) loadOf(ctx context.Context) *passLoad {
	l, _ := ctx.Value(passLoadKey{}).(*passLoad)
	if l == nil {
		return nil
	}
	if l.owner.CompareAndSwap(nil, h) || l.owner.Load() == h {
		return l
	}
	return nil
}

func (h *loadHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l := h.loadOf(ctx)
		if l == nil {
			return next(ctx, cmd)
		}
		start := time.Now()
		err := next(ctx, cmd)
		l.waitNanos.Add(int64(time.Since(start)))
		l.roundTrips.Add(1)
		l.count(cmd)
		return err
	}
}

func (h *loadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l := h.loadOf(ctx)
		if l == nil {
			return next(ctx, cmds)
		}
		start := time.Now()
		err := next(ctx, cmds)
		l.waitNanos.Add(int64(time.Since(start)))
		l.roundTrips.Add(1)
		for _, cmd := range cmds {
			l.count(cmd)
		}
		return err
	}
}

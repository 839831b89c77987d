package main

import (
	"context"
	"crypto/sha1"
	"fmt"
	"net"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
	"github.com/redis/go-redis/v9"
)

// redisCounter is a go-redis hook that counts round trips (one per command
// sent alone, one per pipeline) and commands. It also notes when the first
// call of the release script in a phase started and the last one ended: that
// span is the release phase. Other scripts (the owners' retirement, which
// runs after the task updates) are left out by their SHA, since they would
// stretch the span over the database's work. Each release call's time is
// summed and the slowest kept, so that the span can be told apart into time
// in Redis and time between the calls.
type redisCounter struct {
	roundTrips atomic.Int64
	commands   atomic.Int64

	mu            sync.Mutex
	scriptStart   time.Time
	scriptEnd     time.Time
	scriptCalls   int
	scriptBusy    time.Duration
	scriptSlowest time.Duration
}

var _ redis.Hook = (*redisCounter)(nil)

func (c *redisCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.roundTrips.Add(1)
		c.commands.Add(1)
		if !isReleaseCall(cmd) {
			return next(ctx, cmd)
		}
		start := time.Now()
		err := next(ctx, cmd)
		end := time.Now()
		c.mu.Lock()
		if c.scriptStart.IsZero() {
			c.scriptStart = start
		}
		c.scriptEnd = end
		c.scriptCalls++
		c.scriptBusy += end.Sub(start)
		c.scriptSlowest = max(c.scriptSlowest, end.Sub(start))
		c.mu.Unlock()
		return err
	}
}

// isReleaseCall says cmd runs the release script: an EVALSHA naming its SHA,
// or the EVAL go-redis falls back to when Redis has not loaded it yet.
func isReleaseCall(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch strings.ToLower(cmd.Name()) {
	case "evalsha":
		return args[1] == redislocks.ReleaseScriptSHA()
	case "eval":
		src, ok := args[1].(string)
		return ok && fmt.Sprintf("%x", sha1.Sum([]byte(src))) == redislocks.ReleaseScriptSHA()
	}
	return false
}

func (c *redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.roundTrips.Add(1)
		c.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// redisCounts is a reading of a redisCounter.
type redisCounts struct {
	roundTrips, commands int64
	// scriptSpan runs from the start of the first release call to the end
	// of the last; scriptBusy sums the calls' own times.
	scriptSpan, scriptBusy, scriptSlowest time.Duration
	scriptCalls                           int
}

// take returns the counts since the last take and starts again from zero.
func (c *redisCounter) take() redisCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := redisCounts{roundTrips: c.roundTrips.Swap(0), commands: c.commands.Swap(0)}
	if !c.scriptStart.IsZero() {
		rc.scriptSpan = c.scriptEnd.Sub(c.scriptStart)
	}
	rc.scriptBusy, rc.scriptSlowest, rc.scriptCalls = c.scriptBusy, c.scriptSlowest, c.scriptCalls
	c.scriptStart, c.scriptEnd = time.Time{}, time.Time{}
	c.scriptBusy, c.scriptSlowest, c.scriptCalls = 0, 0, 0
	return rc
}

// queryCounter is a pgx tracer counting the statements sent (BEGIN and
// ROLLBACK included).
type queryCounter struct {
	queries atomic.Int64
}

var _ pgx.QueryTracer = (*queryCounter)(nil)

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.queries.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// heapSampler records the peak of the heap in use (the runtime's HeapInuse:
// spans holding objects, live or not yet swept) and of the live heap the
// collector last marked, while a phase runs.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	// base values, after a collection just before the phase.
	baseInuse, baseLive uint64
	peakInuse, peakLive uint64
}

var heapMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/gc/heap/live:bytes",
}

func readHeap() (inuse, live uint64) {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64(), s[2].Value.Uint64()
}

// sampleInterval is short enough to catch a peak that lasts a few
// milliseconds; one read of runtime/metrics costs about a microsecond.
const sampleInterval = time.Millisecond

func startHeapSampler() *heapSampler {
	runtime.GC()
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.baseInuse, h.baseLive = readHeap()
	h.peakInuse, h.peakLive = h.baseInuse, h.baseLive
	go func() {
		defer close(h.done)
		t := time.NewTicker(sampleInterval)
		defer t.Stop()
		for {
			h.sample()
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) sample() {
	inuse, live := readHeap()
	h.peakInuse = max(h.peakInuse, inuse)
	h.peakLive = max(h.peakLive, live)
}

// finish stops sampling and returns the peaks above the base. A last
// collection makes the live heap at the phase's end (the report the caller
// still holds) visible too.
func (h *heapSampler) finish() (inuse, live uint64) {
	close(h.stop)
	<-h.done
	h.sample()
	runtime.GC()
	h.sample()
	return h.peakInuse - min(h.peakInuse, h.baseInuse), h.peakLive - min(h.peakLive, h.baseLive)
}

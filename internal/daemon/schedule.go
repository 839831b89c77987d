package daemon

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lock-reaper/lock-reaper/internal/ctxwait"
)

// maxCountedTicks bounds the walk over missed ticks: an @every 1s schedule
// after a pass of an hour would otherwise step through 3600 of them. Past
// it, the count is a lower bound.
const maxCountedTicks = 10000

// NextPass says when the next pass runs and which ticks it lets go by.
type NextPass struct {
	// At is the tick of the next pass.
	At time.Time
	// Overlapped counts ticks that fell while the last pass (and its jitter)
	// ran: passes never overlap, so those ticks ran nothing.
	Overlapped int
	// BackedOff counts ticks let go by after failures.
	BackedOff int
}

// planNext picks the next pass's tick, given the tick of the pass that just
// ended at end and the failed passes in a row. It is a pure function of its
// arguments.
//
// Passes run one at a time: ticks before end are missed and counted. After
// the n-th failure in a row the next 2^(n-1)-1 ticks are let go by too (none
// after one failure, then 1, 3, 7, ...), without waiting past maxDelay from
// end; a success resets n to 0.
func planNext(sched cron.Schedule, tick, end time.Time, failures int, maxDelay time.Duration) NextPass {
	var p NextPass
	next := sched.Next(tick)
	for !next.IsZero() && next.Before(end) {
		p.Overlapped++
		if p.Overlapped >= maxCountedTicks {
			next = sched.Next(end)
			break
		}
		next = sched.Next(next)
	}
	if failures > 0 {
		skip := 1<<min(failures-1, 30) - 1
		for range skip {
			later := sched.Next(next)
			if later.IsZero() || later.Sub(end) > maxDelay {
				break
			}
			next = later
			p.BackedOff++
		}
	}
	p.At = next
	return p
}

// sleepUntil sleeps until t; a zero t (a schedule that never fires again)
// sleeps until ctx is cancelled.
func sleepUntil(ctx context.Context, t time.Time) bool {
	if t.IsZero() {
		<-ctx.Done()
		return false
	}
	return ctxwait.Sleep(ctx, time.Until(t))
}

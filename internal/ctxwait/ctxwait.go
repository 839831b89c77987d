// Package ctxwait waits for a while unless a context ends first: the
// daemon between passes, the simulator's processes between steps, the tests
// while polling.
package ctxwait

import (
	"context"
	"time"
)

// Sleep sleeps for d and says whether ctx is still live afterwards; a
// cancel cuts the sleep short.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

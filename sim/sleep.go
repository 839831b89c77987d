package sim

import (
	"context"
	"time"
)

// sleepCtx sleeps for d and reports whether it was not interrupted by ctx.
func sleepCtx(ctx context.Context, d time.Duration) bool {
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

// mergeCtx returns a context that ends when either parent ends: an operation
// started by a caller must stop both when the caller gives up and when the
// process it runs in is killed.
func mergeCtx(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

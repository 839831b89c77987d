package sim

import (
	"context"
)

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

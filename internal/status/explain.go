package status

import (
	"context"
	"sync"
	"time"

	"github.com/lock-reaper/lock-reaper/internal/explain"
)

// explainCache computes the task page's explanations one at a time and
// reuses each for ttl, so that a browser refreshing a task page, or many,
// reads one task's rows at most once every ttl.
type explainCache struct {
	ttl time.Duration
	// turn is held by the one explanation being computed.
	turn    sync.Mutex
	mu      sync.Mutex
	entries map[string]explained
}

// explained is one explanation, made on the view numbered view. The
// number, not the view: an entry holding the view kept its whole
// inspection alive after the view was shed or replaced, beside the next
// snapshot, for as long as the entry stayed in the cache.
type explained struct {
	ex   explain.Explanation
	err  error
	at   time.Time
	view uint64
}

// maxExplained bounds the cache; expired entries go first.
const maxExplained = 256

// get returns the explanation of taskID on view v, computing it with fn
// when none younger than ttl was made on the same view.
func (c *explainCache) get(ctx context.Context, v *View, taskID string, fn func(context.Context) (explain.Explanation, error)) (explain.Explanation, error) {
	if e, ok := c.fresh(v, taskID); ok {
		return e.ex, e.err
	}
	if !lockCtx(ctx, &c.turn) {
		return explain.Explanation{}, ctx.Err()
	}
	defer c.turn.Unlock()
	// Another request may have computed it while this one waited its turn.
	if e, ok := c.fresh(v, taskID); ok {
		return e.ex, e.err
	}
	ex, err := fn(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxExplained {
		c.entries = c.prune()
	}
	c.entries[taskID] = explained{ex: ex, err: err, at: time.Now(), view: v.number}
	return ex, err
}

func (c *explainCache) fresh(v *View, taskID string) (explained, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[taskID]
	return e, ok && e.view == v.number && time.Since(e.at) < c.ttl
}

// prune keeps the entries younger than ttl; called with mu held.
func (c *explainCache) prune() map[string]explained {
	out := map[string]explained{}
	for id, e := range c.entries {
		if time.Since(e.at) < c.ttl && len(out) < maxExplained/2 {
			out[id] = e
		}
	}
	return out
}

// lockCtx takes mu unless ctx ends first.
func lockCtx(ctx context.Context, mu *sync.Mutex) bool {
	for {
		if mu.TryLock() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

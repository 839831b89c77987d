package passtest

import (
	"context"
	"crypto/sha1"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/redislocks"
)

// IsReleaseCall says cmd calls the release script: its EVALSHA, or the EVAL
// go-redis falls back to when the server has not loaded it yet. A test tells
// it from the pass's read-only scripts by its SHA.
func IsReleaseCall(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return args[1] == redislocks.ReleaseScriptSHA()
	case "eval":
		src, ok := args[1].(string)
		return ok && fmt.Sprintf("%x", sha1.Sum([]byte(src))) == redislocks.ReleaseScriptSHA()
	}
	return false
}

// ReleaseCalls is a go-redis hook that records, for each call of the
// release script that Redis ran, how many reserving tasks' task keys it was
// sent: every "task:" in its arguments past the keys, whatever the layout
// of the script's arguments; and how many holdings (keys) it was given.
type ReleaseCalls struct {
	mu       sync.Mutex
	n        []int
	holdings []int
}

// Holdings is the holdings (keys) of each call, in order.
func (c *ReleaseCalls) Holdings() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.holdings)
}

// TaskKeys is the task keys of each call, in order.
func (c *ReleaseCalls) TaskKeys() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.n)
}

// Most is the most task keys one call was sent.
func (c *ReleaseCalls) Most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.n) == 0 {
		return 0
	}
	return slices.Max(c.n)
}

// DialHook passes dials through.
func (c *ReleaseCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records the release script's calls.
func (c *ReleaseCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// A first EVALSHA the server answers NOSCRIPT is sent again as EVAL.
		if args := cmd.Args(); IsReleaseCall(cmd) && len(args) > 3 && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			numKeys, _ := args[2].(int)
			n := 0
			for _, a := range args[3+numKeys:] {
				if s, ok := a.(string); ok {
					n += strings.Count(s, judge.TaskKeyPrefix)
				}
			}
			c.mu.Lock()
			c.n = append(c.n, n)
			c.holdings = append(c.holdings, numKeys)
			c.mu.Unlock()
		}
		return err
	}
}

// ProcessPipelineHook passes pipelines through: the release script is never
// pipelined.
func (c *ReleaseCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

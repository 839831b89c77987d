package testenv

import (
	"testing"

	"go.uber.org/goleak"
)

// VerifyTestMain runs the package's tests and fails it when a test left a
// goroutine behind, as goleak.VerifyTestMain does, except for the goroutines
// that keep this process's own redis-server (StartRedisServer) running: it
// lives as long as the test process, by design.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(m, append(opts,
		goleak.IgnoreAnyFunction("github.com/lock-reaper/lock-reaper/internal/redisserver.LaunchBound.func1"),
		goleak.IgnoreAnyFunction("github.com/lock-reaper/lock-reaper/internal/redisserver.DrainBoundLog"),
	)...)
}

package reaper

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: a pass
// reads Redis with goroutines of its own, and each must be gone when
// RunOnce returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package reaper_test

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestMain fails the package when a test leaves a goroutine behind: a pass
// reads Redis with goroutines of its own, and each must be gone when
// RunOnce returns.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}

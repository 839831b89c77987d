package sim

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// worker, heartbeat and keep-alive the simulator starts must stop with its
// context.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}

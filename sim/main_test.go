package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// worker, heartbeat and keep-alive the simulator starts must stop with its
// context.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

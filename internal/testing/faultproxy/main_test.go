package faultproxy

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestMain fails the package when a test leaves a goroutine behind: Close
// must stop the accept loop and every connection's copiers.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}

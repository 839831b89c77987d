package faultproxy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: Close
// must stop the accept loop and every connection's copiers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

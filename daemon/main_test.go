package daemon

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: Stop must
// return only once the loop, the server and every pass are gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

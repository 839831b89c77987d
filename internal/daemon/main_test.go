package daemon

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/testenv"
)

// TestMain fails the package when a test leaves a goroutine behind: Stop must
// return only once the loop, the server and every pass are gone.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}

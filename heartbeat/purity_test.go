package heartbeat

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/purity"
)

// TestHeartbeatIsPure reads the liveness rules' source: no import outside a
// short list of the standard library, no goroutine, no clock but the
// database's now a Fleet is given, no JSON shape; and nothing outside the
// standard library compiles in. Nothing here knows about locks.
func TestHeartbeatIsPure(t *testing.T) {
	t.Parallel()
	purity.Check(t, ".", "the database's now (NewFleet)")
	purity.CheckDeps(t, ".")
}

package judge

import (
	"testing"

	"github.com/lock-reaper/lock-reaper/internal/testing/purity"
)

// heartbeatPackage is the one package of this module the judge may import:
// owner liveness, pure itself (heartbeat/purity_test.go).
const heartbeatPackage = "github.com/lock-reaper/lock-reaper/heartbeat"

// TestJudgeIsPure reads the judge's source: no import outside a short list
// of the standard library and heartbeat, no goroutine, no clock but the
// snapshot's, no JSON shape (what commands print is reaper's and
// redislocks', reaper/report_json.go); and nothing outside them compiles in.
func TestJudgeIsPure(t *testing.T) {
	t.Parallel()
	purity.Check(t, ".", "Snapshot.Now", heartbeatPackage)
	purity.CheckDeps(t, ".", heartbeatPackage)
}

package reaper_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestHeartbeatAheadIsReported: a worker whose clock runs five minutes ahead
// writes heartbeats in the database's future. The report says so, with the
// row and the fix, and the owner's heartbeat age is never negative.
func TestHeartbeatAheadIsReported(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.Worker("1@ahead", -5*time.Minute)
	rep := f.pass(f.reaper(nil), reaper.ModeAudit)
	var note string
	for _, n := range rep.Notes {
		if strings.Contains(n, "ahead of the database's clock") {
			note = n
		}
	}
	require.Contains(t, note, "1@ahead (worker) by 5m")
	require.Contains(t, note, "NTP")
}

package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/reaper"
)

// TestEveryCommandReportsOwnersAlike: audit, once and release (of a dead
// owner, and the refused release of a live one) report each owner of locks
// with the same evidence: one owner report, built once by the judge, for
// every command.
func TestEveryCommandReportsOwnersAlike(t *testing.T) {
	t.Parallel()
	f := newOpsReleaseFleet(t)
	// once runs last: the mass-death guard holds back what rests on the
	// dead heartbeats, but it releases the finished task's leftover lock.
	reports := []struct {
		name string
		args []string
	}{
		{"audit", []string{"audit", "--output", "json"}},
		{"release of the dead", []string{"release", "--owner", "1@dead", "--dry-run", "--output", "json"}},
		{"release of the live", []string{"release", "--owner", "1@live", "--dry-run", "--output", "json"}},
		{"once", []string{"once", "--output", "json"}},
	}
	owners := map[string]map[string]reaper.OwnerReport{}
	for _, r := range reports {
		name, args := r.name, r.args
		_, out, stderr := run(t, f.env, args...)
		var rep reaper.Report
		require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s: %s", name, stderr)
		owners[name] = map[string]reaper.OwnerReport{}
		for _, o := range rep.LockOwners {
			owners[name][o.Name] = o
		}
	}
	for _, owner := range []string{"1@dead", "1@live"} {
		want := owners["audit"][owner]
		require.NotEmpty(t, want.Name, "audit reports %s", owner)
		for name, byName := range owners {
			got, ok := byName[owner]
			if !ok {
				// A release reports the owner it releases, not the others.
				require.Contains(t, name, "release", "%s reports %s", name, owner)
				continue
			}
			require.Equal(t, want.Liveness, got.Liveness, "%s: %s", name, owner)
			require.Equal(t, want.Kubernetes, got.Kubernetes, "%s: %s", name, owner)
			require.NotNil(t, got.HeartbeatAge, "%s: %s", name, owner)
			// The commands ran one after the other: the heartbeat aged.
			require.InDelta(t, time.Duration(*want.HeartbeatAge).Seconds(), time.Duration(*got.HeartbeatAge).Seconds(), 30, "%s: %s", name, owner)
			require.Equal(t, want.Holdings, got.Holdings, "%s: %s", name, owner)
		}
	}
}

package judge

import (
	"testing"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
)

// A no-task suspect on a shared membership is not confirmed while its owner
// holds a task lock whose row is not visible yet: that invisible task may be
// what shares the membership now, and the old suspect predates it.
func TestJudgeOpaqueOwnerKeepsConfirmedSharedSuspect(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC)
	invisible := "0f0e0d0c-0b0a-4909-8807-060504030201"
	shared := Holding{Key: ResourceKeyPrefix + "D", Kind: KindShared, Owner: "7@api"}
	snap := Snapshot{
		Now:         now,
		AppStatuses: []heartbeat.AppStatus{{ID: "a1", Name: "7@api", AppType: "api", TTL: 2 * time.Minute, LastHeartbeat: now}},
		Holdings: []Holding{
			{Key: TaskKeyPrefix + invisible, Kind: KindTask, Owner: "7@api"},
			shared,
		},
		Tasks:    map[string]Task{},
		Suspects: map[SuspectKey]Suspect{{Key: shared.Key, Owner: shared.Owner}: {Verdict: VerdictNoTask, FirstSeen: now.Add(-time.Hour)}},
		FullScan: true,
	}
	plan := All(snap, jtPolicy())
	for _, jd := range plan.Holdings {
		require.NotEqual(t, ActionRelease, jd.Action, "%s %s", jd.Key, jd.Verdict)
		if jd.Key == shared.Key {
			require.Equal(t, VerdictNoTask, jd.Verdict)
			require.Equal(t, ActionSuspect, jd.Action)
		}
	}
}

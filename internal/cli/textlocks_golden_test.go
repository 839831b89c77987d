package cli

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/lock-reaper/lock-reaper/internal/explain"
	"github.com/lock-reaper/lock-reaper/internal/sim"
	"github.com/lock-reaper/lock-reaper/reaper"
	"github.com/lock-reaper/lock-reaper/reaper/judge"
	"github.com/lock-reaper/lock-reaper/reaper/pulpdb"
)

// goldenNow is the database clock of the golden pictures: the morning of
// 2026-07-24, when the incident was reported.
var goldenNow = time.Date(2026, 7, 24, 10, 0, 0, 0, time.UTC)

// The incident's identifiers as an on-call engineer copies them from
// explain and locks: the dead worker, a running task, the repository it
// holds and the queued task waiting for it.
const (
	goldenOwner    = sim.DefaultDeadOwner
	goldenRunning  = "0190c2d1-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
	goldenQueued   = "0190c2d1-aaaa-7bbb-8ccc-000000000042"
	goldenResource = "prn:rpm.rpmrepository:0190a1b2-c3d4-7e5f-8a9b-000000000001"
)

func goldenExplanation() explain.Explanation {
	now := goldenNow
	day := reaper.Seconds(sim.DefaultDeadHeartbeatAge)
	holder := explain.Holder{
		HoldingRef: reaper.HoldingRef{Key: judge.ResourceKeyPrefix + goldenResource, Kind: judge.KindExclusive, Owner: goldenOwner},
		Liveness:   heartbeat.Dead, OwnerView: reaper.OwnerView{HeartbeatAge: &day}, Task: &explain.TaskRef{ID: goldenRunning, State: "running"},
		Blocks: true, HoldingVerdict: reaper.HoldingVerdict{Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease},
	}
	return explain.Explanation{
		TaskID: goldenQueued, DBNow: now,
		Task: &pulpdb.TaskRow{Task: judge.Task{ID: goldenQueued, Name: "pulp_rpm.app.tasks.synchronizing.synchronize", State: "waiting"},
			Created: now.Add(-2 * time.Hour)},
		Resources: []explain.ResourceNeed{{Resource: goldenResource, Need: judge.KindExclusive, Holders: []explain.Holder{holder}}},
		Ahead: []explain.TaskAhead{{TaskRow: pulpdb.TaskRow{Task: judge.Task{ID: "0190c2d1-bbbb-7ccc-8ddd-000000000041",
			Name: "pulp_rpm.app.tasks.synchronizing.synchronize", State: "waiting"}, Created: now.Add(-3 * time.Hour)},
			Conflicts: []string{goldenResource}}},
		AheadTotal: 1,
		Conclusion: "blocked by " + goldenOwner + ", dead: the next pass releases its locks",
	}
}

func goldenLocks() LocksOutput {
	day := reaper.Seconds(sim.DefaultDeadHeartbeatAge)
	out := LocksOutput{DBNow: goldenNow}
	dead := reaper.HoldingVerdict{Verdict: judge.VerdictOwnerDead, Action: judge.ActionRelease}
	out.Holdings = append(out.Holdings, LockLine{HoldingRef: reaper.HoldingRef{Key: judge.TaskKeyPrefix + goldenRunning, Kind: judge.KindTask, Owner: goldenOwner},
		OwnerLiveness: "dead", OwnerView: reaper.OwnerView{HeartbeatAge: &day}, TaskID: goldenRunning, TaskState: "running", HoldingVerdict: dead})
	for i := 1; i <= 2; i++ {
		res := fmt.Sprintf("prn:rpm.rpmrepository:0190a1b2-c3d4-7e5f-8a9b-00000000000%d", i)
		out.Holdings = append(out.Holdings, LockLine{HoldingRef: reaper.HoldingRef{Key: judge.ResourceKeyPrefix + res, Kind: judge.KindExclusive, Owner: goldenOwner},
			OwnerLiveness: "dead", OwnerView: reaper.OwnerView{HeartbeatAge: &day}, Resource: res, TaskID: goldenRunning, TaskState: "running",
			HoldingVerdict: dead})
	}
	return out
}

// explain and locks at 80 and 120 columns: every identifier whole, rows
// hung or stacked instead of cut.
func TestGoldenExplainAndLocks(t *testing.T) {
	t.Parallel()
	for _, width := range []int{80, 120} {
		l := layout{width: width, grouped: true, limit: 20}
		var ex, locks bytes.Buffer
		writeExplanationText(&ex, goldenExplanation(), l)
		require.NoError(t, writeLocks(&locks, "text", goldenLocks(), l))
		for name, text := range map[string]string{fmt.Sprintf("explain-%d.txt", width): ex.String(), fmt.Sprintf("locks-%d.txt", width): locks.String()} {
			golden(t, name, text)
			requireFitsWidth(t, name, text, width)
			for _, id := range []string{goldenOwner, goldenRunning, goldenResource} {
				require.Contains(t, text, id, "%s: %s whole", name, id)
			}
		}
		require.Contains(t, ex.String(), "for task "+goldenRunning+" (running)")
		require.LessOrEqual(t, runeLen(firstLine(ex.String())), 80, "explain's first line fits 80 columns: %q", firstLine(ex.String()))
	}
}

// What explain's table of older tasks leaves out, and whether --limit 0
// shows it: the table's limit, the rows an inspection reads, or both.
func TestExplainAheadMore(t *testing.T) {
	t.Parallel()
	l := layout{width: 80}
	for _, c := range []struct {
		shown, loaded, total int
		want                 string
	}{
		{5, 5, 5, ""},
		{3, 5, 5, "  … and 2 more (--limit 0 shows all, --output json gives everything)\n"},
		{20, 50, 70, "  … and 50 more: --limit 0 shows the first 50 (no more are read); ahead_total\n  in --output json counts all 70\n"},
		{50, 50, 70, "  … and 20 more, not read: at most 50 are (ahead_total in --output json counts\n  all 70)\n"},
	} {
		var b bytes.Buffer
		aheadMore(&b, l, c.shown, c.loaded, c.total)
		require.Equal(t, c.want, b.String(), "%+v", c)
	}
}

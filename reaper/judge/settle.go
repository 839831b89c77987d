package judge

import (
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// DeathsToSettle lists the pulp_ids of the rows whose death by heartbeat a
// pass over snap would act on, in the snapshot's order: rows dead by their
// heartbeat and the pods, whose death the pods do not prove, that carry the
// name of a lock owner no live row carries, or claim an incomplete task.
// Before acting, the pass reads these rows again a heartbeat period later
// (heartbeat.Settle): a stall and a clock behind the database's look like
// deaths in one read.
func DeathsToSettle(snap Snapshot, p Policy) []string {
	fleet := FleetOf(snap, p)
	owners := map[string]bool{}
	for i := range snap.Holdings {
		owners[snap.Holdings[i].Owner] = true
	}
	claims := map[string]bool{}
	for _, t := range snap.Tasks {
		if !Final(t.State) && t.AppLockID != "" {
			claims[t.AppLockID] = true
		}
	}
	var ids []string
	for _, r := range snap.AppStatuses {
		if _, live, _ := fleet.Row(r.ID); live != heartbeat.Dead || fleet.DeathProven(r.ID) {
			continue
		}
		ownsByDeath := owners[r.Name] && fleet.Owner(r.Name).Liveness <= heartbeat.Dead
		if ownsByDeath || claims[r.ID] {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// RecheckAfter is how long after the snapshot a second read must come to
// settle the rows in ids: the longest of their periods and the margin, or
// the policy's HeartbeatRecheck when set.
func RecheckAfter(rows []heartbeat.AppStatus, ids []string, p Policy) time.Duration {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var d time.Duration
	for _, r := range rows {
		if want[r.ID] {
			d = max(d, r.RecheckAfter(p.HeartbeatRecheck))
		}
	}
	return d
}

// motionGuards are the guards the second reads raise: rows held because
// others of their group came back (GuardHeartbeatStall), and rows no
// second read settled (GuardHeartbeatRecheck).
func motionGuards(m *heartbeat.Motion) []Guard {
	var stall, unsettled Guard
	stall.Name, unsettled.Name = GuardHeartbeatStall, GuardHeartbeatRecheck
	for _, id := range m.Rows() {
		rm, _ := m.Of(id)
		switch rm.Settlement {
		case heartbeat.Stalled:
			stall.Motion.Held++
			stall.Motion.Group = max(stall.Motion.Group, rm.Group)
			stall.Motion.Back = max(stall.Motion.Back, rm.Back)
		case heartbeat.Unsettled:
			unsettled.Motion.Held++
		}
	}
	var out []Guard
	for _, g := range []Guard{stall, unsettled} {
		if g.Motion.Held > 0 {
			out = append(out, g)
		}
	}
	return out
}

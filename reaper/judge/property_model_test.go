package judge

// Property tests of the judge (All, Findings) over random fleets. Every property is stated from
// verdicts.md and pulp-protocol.md, not from the rules' code: the helpers below
// recompute liveness, health and the guards on their own.

import (
	"slices"
	"strings"
	"time"

	"github.com/lock-reaper/lock-reaper/heartbeat"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// An independent model of verdicts.md for the property tests: liveness,
// health and the guards recomputed without the judge's code.
func ptFinal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCanceled || state == StateSkipped
}

// ptOnline is "last_heartbeat >= now() - ttl".
func ptOnline(r heartbeat.AppStatus, now time.Time) bool {
	return !r.LastHeartbeat.Before(now.Add(-r.TTL))
}

// ptRowDead is "last_heartbeat < now() - ttl - heartbeat_grace".
func ptRowDead(r heartbeat.AppStatus, now time.Time, grace time.Duration) bool {
	return r.LastHeartbeat.Before(now.Add(-r.TTL - grace))
}

func ptRow(c ptCase, id string) (heartbeat.AppStatus, bool) {
	for _, r := range c.snap.AppStatuses {
		if id != "" && r.ID == id {
			return r, true
		}
	}
	return heartbeat.AppStatus{}, false
}

// ptImmediateTask returns T of an immediate-<T> owner.
func ptImmediateTask(owner string) (string, bool) {
	id, ok := strings.CutPrefix(owner, "immediate-")
	if !ok || len(id) != 36 {
		return "", false
	}
	for i, c := range id {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return "", false
			}
		} else if !strings.ContainsRune("0123456789abcdef", c) {
			return "", false
		}
	}
	return id, true
}

// ptLiveness is the owner liveness table of verdicts.md. For a name whose
// rows have different ttls, "late" is taken generously: some row within its
// ttl+grace and none online.
func ptLiveness(c ptCase, owner string) heartbeat.Liveness {
	if id, ok := ptImmediateTask(owner); ok {
		if t, found := c.snap.Tasks[id]; found && ptFinal(t.State) {
			return heartbeat.Gone
		}
		// Incomplete, or not visible yet: judge.go counts it alive; see
		// TestJudgeImmediateOwnerWithMissingTask.
		return heartbeat.Alive
	}
	rows, online, withinGrace := 0, false, false
	for _, r := range c.snap.AppStatuses {
		if r.Name != owner {
			continue
		}
		rows++
		online = online || ptOnline(r, c.snap.Now)
		withinGrace = withinGrace || !ptRowDead(r, c.snap.Now, c.p.HeartbeatGrace)
	}
	switch {
	case rows == 0:
		return heartbeat.Gone
	case online:
		return heartbeat.Alive
	case withinGrace:
		return heartbeat.Late
	default:
		return heartbeat.Dead
	}
}

// ptHealthyTask: the owner is alive, the task incomplete, and its app_lock
// row is online and named the owner, or the owner is immediate-<T>.
func ptHealthyTask(c ptCase, owner, taskID string) bool {
	t, ok := c.snap.Tasks[taskID]
	if !ok || ptFinal(t.State) {
		return false
	}
	if owner == "immediate-"+taskID {
		return true
	}
	if ptLiveness(c, owner) != heartbeat.Alive {
		return false
	}
	row, ok := ptRow(c, t.AppLockID)
	return ok && row.Name == owner && ptOnline(row, c.snap.Now)
}

func ptReserves(t Task, h Holding) bool {
	want := h.Resource()
	if h.Kind == KindShared {
		want = "shared:" + h.Resource()
	}
	return slices.Contains(t.Reserved, want)
}

// ptHealthy says whether a holding belongs to a healthy task: a healthy task
// lock, or a resource that a healthy task lock of the same owner reserves
// with the same kind.
func ptHealthy(c ptCase, h Holding) bool {
	if h.Kind == KindTask {
		return ptHealthyTask(c, h.Owner, h.TaskID())
	}
	for _, tl := range c.snap.Holdings {
		if tl.Kind == KindTask && tl.Owner == h.Owner && ptHealthyTask(c, tl.Owner, tl.TaskID()) && ptReserves(c.snap.Tasks[tl.TaskID()], h) {
			return true
		}
	}
	return false
}

// ptMassDeath is the mass-death guard of verdicts.md, less the dead rows
// whose name a row that is not dead carries again (a restart, not a death),
// and, while any worker row is not dead, less the rows dead for longer than
// MassDeathWindow that no earlier pass saw alive (deaths long past, such as
// a rolling restart's).
func ptMassDeath(c ptCase) bool {
	restarted := map[string]bool{}
	anyLive := false
	for _, r := range c.snap.AppStatuses {
		if !ptRowDead(r, c.snap.Now, c.p.HeartbeatGrace) {
			restarted[r.Name] = true
			anyLive = anyLive || r.AppType == "worker"
		}
	}
	workers, dead := 0, 0
	for _, r := range c.snap.AppStatuses {
		rowDead := ptRowDead(r, c.snap.Now, c.p.HeartbeatGrace)
		longDead := c.snap.Now.Sub(r.LastHeartbeat) > r.TTL+c.p.HeartbeatGrace+MassDeathWindow
		_, seen := c.snap.SeenAlive[r.ID]
		if r.AppType != "worker" || (rowDead && restarted[r.Name]) || (rowDead && anyLive && longDead && !seen) {
			continue
		}
		workers++
		if rowDead {
			dead++
		}
	}
	return !c.p.Force && workers > 0 && workers >= c.p.MinWorkers && float64(dead) > c.p.MaxDeadFraction*float64(workers)
}

func ptNeedsConfirmation(v Verdict) bool {
	return v == VerdictTaskMissing || v == VerdictUnclaimed || v == VerdictNoTask || v == VerdictStuckClaim
}

// ptJudgement finds the one judgement of a holding.
func ptJudgement(t *rapid.T, plan Plan, h Holding) Judgement {
	var found []Judgement
	for _, jd := range plan.Holdings {
		if jd.Key == h.Key && jd.Owner == h.Owner && jd.Kind == h.Kind {
			found = append(found, jd)
		}
	}
	require.Len(t, found, 1, "judgements of %+v", h)
	return found[0]
}

// ---------------------------------------------------------------------------
// Properties

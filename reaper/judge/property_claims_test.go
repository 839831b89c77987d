package judge

import (
	"time"

	"pgregory.net/rapid"

	"github.com/lock-reaper/lock-reaper/heartbeat"
)

// ptAddLockedClaims adds up to four tasks in state, each claimed by a row of
// the fleet whose name holds its task lock, beside whatever the fleet holds
// of them: the case the claim properties are about. seen, when not
// noVerdict, may remember them as suspects of that verdict already.
func ptAddLockedClaims(t *rapid.T, c *ptCase, state string, firstID int, seen Verdict) {
	for i := range rapid.IntRange(0, 4).Draw(t, state+" with lock") {
		if len(c.snap.AppStatuses) == 0 {
			break
		}
		row := rapid.SampledFrom(c.snap.AppStatuses).Draw(t, state+" claim")
		id := jtID(firstID + i)
		c.snap.Tasks[id] = Task{ID: id, Name: "pulp_file.app.tasks.synchronize", State: state, AppLockID: row.ID,
			Reserved: rapid.SampledFrom([][]string{nil, {ptResources[0]}, {"shared:" + ptResources[0]}}).Draw(t, state+" reserves")}
		c.snap.Holdings = append(c.snap.Holdings, Holding{Key: TaskKeyPrefix + id, Kind: KindTask, Owner: row.Name, Registered: rapid.Bool().Draw(t, "registered")})
		if seen != noVerdict && rapid.Bool().Draw(t, "seen before") {
			if c.snap.Suspects == nil {
				c.snap.Suspects = map[SuspectKey]Suspect{}
			}
			ago := rapid.SampledFrom([]time.Duration{time.Minute, c.p.ConfirmAfter, time.Hour}).Draw(t, "ago")
			c.snap.Suspects[StuckClaimKey(id, row.ID)] = Suspect{Verdict: seen, FirstSeen: c.snap.Now.Add(-ago)}
		}
	}
	c.snap.StartsUnread = rapid.IntRange(0, 3).Draw(t, "starts unread") == 0
	for id, task := range c.snap.Tasks {
		if !c.snap.StartsUnread {
			task.NeverStarted = rapid.Bool().Draw(t, "never started")
		}
		c.snap.Tasks[id] = task
	}
}

// ptLockedByLiveClaim calls f with each task judgement of both plans whose
// task was in state and whose live (alive) claim's worker holds its lock.
func ptLockedByLiveClaim(c ptCase, state string, f func(tj TaskJudgement, holder string)) {
	live := heartbeat.NewFleet(c.snap.AppStatuses, c.snap.Now, c.p.HeartbeatGrace)
	for _, plan := range []Plan{All(c.snap, c.p), Findings(c.snap, c.p)} {
		for _, tj := range plan.Tasks {
			if tj.StateBefore != state {
				continue
			}
			row, liveness, ok := live.Row(tj.AppLockID)
			if !ok || liveness != heartbeat.Alive {
				continue
			}
			for _, h := range c.snap.Holdings {
				if h.Kind == KindTask && h.TaskID() == tj.ID && h.Owner == row.Name {
					f(tj, h.Owner)
				}
			}
		}
	}
}
